"""Static memory planning, the one home of buffer offsets: every activation and kernel scratch
gets a fixed offset in the arena of its memory level, reusing space between buffers whose
lifetimes do not overlap; graph inputs, outputs and constants get their level and, for the
picture of a level, their place after the arena (``data_buffers``); the tiles of tiled layers are
recorded from their schedules (``tile_buffers``). Graph inputs and outputs own dedicated buffers
so a caller can refill inputs and read outputs around any number of runs."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from Deeploy.binding import Layer
from Deeploy.ir.graph import Graph
from Deeploy.memory.fold import place_folded, region_spans
from Deeploy.memory.lifetimes import Interval, alias_roots, lifetimes
from Deeploy.memory.stream import Stream, stream_candidates
from Deeploy.memory.levels import MemoryLevel

__all__ = ["BufferKind", "Placement", "PlannedBuffer", "MemoryPlan", "plan_memory", "place_intervals",
           "peak_live_bytes", "data_buffers", "tile_buffers", "DATA_ALIGNMENT"]

DATA_ALIGNMENT = 16   # I/O buffers and constants: aligned(16) (Network.c, the DEEPLOY_L* placement macros)
_STORED = ("constant", "weight")   # constant arrays of the program (BufferKind values)


class BufferKind(str, enum.Enum):
    """What a buffer holds. WEIGHT (a weight memory's contents) and STREAMED (per-iteration
    buffers of a region) are for engines and regions that place them."""

    INPUT = "input"
    OUTPUT = "output"
    CONSTANT = "constant"
    ACTIVATION = "activation"
    SCRATCH = "scratch"
    TILE = "tile"
    STAGING = "staging"
    WEIGHT = "weight"
    STREAMED = "streamed"


@dataclass(frozen=True)
class Placement:
    """Where a tensor's storage lives: its ``kind``, the memory ``level``, the tensor whose storage
    it shares (``root``, itself unless it is a zero-copy view), the ``offset`` of an activation in
    its level's arena, or the ``index`` of a dedicated input / output buffer."""

    kind: BufferKind
    root: str
    level: str
    offset: int = 0
    index: int = 0


@dataclass(frozen=True)
class PlannedBuffer:
    """``size`` bytes at ``offset`` of memory level ``level``, live over layer steps [first, last]."""

    name: str
    kind: BufferKind
    level: str
    offset: int
    size: int
    first: int
    last: int
    role: str = ""      # a tile slot's operand: "input", "weight" (a constant input) or "output"


@dataclass
class MemoryPlan:
    """Placements of all tensors, the arena's buffers (activations and kernel scratch) with their
    offsets and lifetimes, the arena size and its lower bound. ``level`` holds the arena,
    ``data_level`` the graph inputs, outputs and constants."""

    level: MemoryLevel
    data_level: MemoryLevel
    placements: dict[str, Placement] = field(default_factory=dict)
    scratch_offsets: dict[str, int] = field(default_factory=dict)  # node name -> arena offset
    arena_size: int = 0
    lower_bound: int = 0
    buffers: list[PlannedBuffer] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)   # regions' parameters streamed into the arena
    stream_buffers: dict[str, int] = field(default_factory=dict)   # level -> bytes of its streams' double buffers


def _place_stream(plan: MemoryPlan, s: Stream, level: str, offset: int) -> None:
    """Stream ``s`` with its double buffer at ``offset`` of ``level``'s arena or stream buffer."""
    plan.streams.append(replace(s, offset=offset))
    plan.buffers.append(PlannedBuffer(f"{s.span.name}: streamed parameters", BufferKind.STREAMED, level, offset,
                                      2 * s.slot, s.span.start, s.span.end - 1))
    for j, members in enumerate(s.members):
        for name, at in members:
            plan.placements[name] = Placement(BufferKind.STREAMED, name, level, offset + j % 2 * s.slot + at)


def align(n: int, a: int) -> int:
    """``n`` rounded up to a multiple of ``a``."""
    return (n + a - 1) // a * a


class _Timeline:
    """Intervals by the steps they are live, to find those overlapping another without looking
    at the rest: a segment tree over the steps in which each interval is stored at the O(log n)
    nodes that cover its steps, and every node counts the intervals stored below it."""

    def __init__(self, steps: int):
        self.width = 1 << max(0, steps - 1).bit_length()
        self.at: dict[int, list[int]] = {}   # node -> intervals covering all of its steps
        self.below: dict[int, int] = {}      # node -> intervals stored in its subtree

    def _visit(self, first: int, last: int, prune: bool):
        """Nodes (node, covered by [first, last]) whose steps meet [first, last], top down."""
        stack = [(1, 0, self.width)]
        while stack:
            v, lo, hi = stack.pop()
            if hi <= first or last < lo or (prune and not self.below.get(v)):
                continue
            inside = first <= lo and hi - 1 <= last
            yield v, inside
            if not inside or prune:
                mid = (lo + hi) // 2
                if hi - lo > 1:
                    stack += ((2 * v, lo, mid), (2 * v + 1, mid, hi))

    def add(self, k: int, first: int, last: int) -> None:
        for v, inside in self._visit(first, last, False):
            self.below[v] = self.below.get(v, 0) + 1
            if inside:
                self.at.setdefault(v, []).append(k)

    def overlapping(self, first: int, last: int) -> set[int]:
        return {k for v, _ in self._visit(first, last, True) for k in self.at.get(v, ())}


def place_intervals(intervals: list[Interval], alignment: int) -> tuple[list[int], int]:
    """Greedy offset assignment, largest first, each at the lowest gap free during its life.
    Returns the offset of each interval (in the given order) and the total size."""
    order = sorted(range(len(intervals)), key=lambda k: (-intervals[k].size, intervals[k].first,
                                                         intervals[k].name))
    offsets = [0] * len(intervals)
    placed = _Timeline(max((iv.last + 1 for iv in intervals), default=0))
    total = 0
    for k in order:
        iv = intervals[k]
        busy = sorted((offsets[j], offsets[j] + intervals[j].size) for j in placed.overlapping(iv.first, iv.last))
        offset = 0
        for lo, hi in busy:
            if offset + iv.size <= lo:
                break
            offset = max(offset, align(hi, alignment))
        offsets[k] = offset
        placed.add(k, iv.first, iv.last)
        total = max(total, offset + iv.size)
    return offsets, total


def peak_live_bytes(intervals: list[Interval]) -> int:
    """The largest sum of sizes live at one step: no placement can use less."""
    if not intervals:
        return 0
    steps = max(iv.last for iv in intervals) + 1
    live = [0] * (steps + 1)
    for iv in intervals:
        live[iv.first] += iv.size
        live[iv.last + 1] -= iv.size
    peak = run = 0
    for delta in live:
        run += delta
        peak = max(peak, run)
    return peak


def plan_memory(graph: Graph, layers: list[Layer], level: MemoryLevel,
                data_level: MemoryLevel | None = None, stream: bool = False,
                levels: dict[str, str] | None = None, into: dict | None = None) -> MemoryPlan:
    """Activations and scratch in ``level``'s arena; inputs, outputs and constants in ``data_level``
    (default: ``level``). ``stream``: a rolled region's per-iteration constants outside ``level``
    are streamed into a double buffer in the arena (``memory/stream.py``), or, those ``into``
    names (tensor -> (level, alignment); None: not streamed), into the stream buffer of that
    level. ``levels``:
    constants placed in another level than ``data_level`` (moved there to fit, ``spill_constants``)."""
    data_level = data_level or level
    plan = MemoryPlan(level, data_level)
    roots = alias_roots(graph)
    for k, name in enumerate(graph.inputs):
        plan.placements[name] = Placement(BufferKind.INPUT, name, data_level.name, index=k)
    for k, name in enumerate(graph.outputs):
        if name not in plan.placements:
            plan.placements[name] = Placement(BufferKind.OUTPUT, name, data_level.name, index=k)
    for t in graph.tensors.values():
        if t.name in graph.state:   # a variable: the program's initialised data, in the arena's level
            plan.placements[t.name] = Placement(BufferKind.CONSTANT, t.name, level.name)
        elif t.is_constant:
            plan.placements[t.name] = Placement(BufferKind.CONSTANT, t.name, (levels or {}).get(t.name, data_level.name))

    sizes: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.outputs:
            if name and name not in plan.placements and name not in roots:
                sizes[name] = align(graph.tensors[name].nbytes, level.alignment)
    tensors = lifetimes(graph, sizes, roots)
    step_of = {layer.node.name: step for step, layer in enumerate(layers)}
    scratch_layers = [layer for layer in layers if layer.scratch]
    scratches = [Interval(layer.node.name, align(layer.scratch, level.alignment),
                          step_of[layer.node.name], step_of[layer.node.name]) for layer in scratch_layers]
    spans, _ = region_spans(graph)
    streams = stream_candidates(graph, spans, {n: p.level for n, p in plan.placements.items()
                                               if p.kind == BufferKind.CONSTANT}, level.name, into) if stream else []
    elsewhere = [s for s in streams if s.into]
    streams = [s for s in streams if not s.into]
    doubles = [Interval(f"{s.span.name}: streamed parameters", 2 * s.slot, s.span.start, s.span.end - 1)
               for s in streams]
    offsets, plan.arena_size = _place(graph, tensors, scratches, step_of, level.alignment, doubles)
    for s, offset in zip(streams, offsets[len(tensors) + len(scratches):]):
        _place_stream(plan, s, level.name, offset)
    for s in elsewhere:   # one after the other in their level's stream buffer
        offset = plan.stream_buffers.get(s.into, 0)
        _place_stream(plan, s, s.into, offset)
        plan.stream_buffers[s.into] = offset + 2 * s.slot
    plan.lower_bound = peak_live_bytes(tensors + scratches + doubles)
    for iv, offset in zip(tensors, offsets):
        plan.placements[iv.name] = Placement(BufferKind.ACTIVATION, iv.name, level.name, offset=offset)
        plan.buffers.append(PlannedBuffer(iv.name, BufferKind.ACTIVATION, level.name, offset,
                                          graph.tensors[iv.name].nbytes, iv.first, iv.last))
    for layer, iv, offset in zip(scratch_layers, scratches, offsets[len(tensors):]):
        plan.scratch_offsets[iv.name] = offset
        plan.buffers.append(PlannedBuffer(f"{iv.name}: kernel scratch", BufferKind.SCRATCH, level.name, offset,
                                          layer.scratch, iv.first, iv.last))
    for name, root in roots.items():
        plan.placements[name] = plan.placements[root]
    return plan


def _place(graph: Graph, tensors: list[Interval], scratches: list[Interval], step_of: dict[str, int],
           alignment: int, alone: list[Interval] = ()) -> tuple[list[int], int]:
    """Offsets of the activations and scratches; the graph's rolled regions get one layout for
    all their iterations (``memory/fold.py``)."""
    spans, _ = region_spans(graph)
    if not spans:
        return place_intervals(tensors + scratches + list(alone), alignment)
    slot_of = {o: (step_of[n.name], slot) for n in graph.nodes for slot, o in enumerate(n.outputs) if o}

    def key(step: int, what) -> tuple | None:
        for s in spans:
            where = s.locate(step)
            if where is not None:
                return (s.name, where[1], what)
        return None
    keys = [key(*slot_of[iv.name]) if iv.name in slot_of else None for iv in tensors]
    keys += [key(iv.first, "scratch") for iv in scratches] + [None] * len(alone)
    return place_folded(tensors + scratches + list(alone), keys, spans, lambda ivs: place_intervals(ivs, alignment))


def data_buffers(plan: MemoryPlan, graph: Graph, constants: set[str], last: int) -> tuple[list[PlannedBuffer], int]:
    """Graph inputs, outputs and the ``constants`` the program defines, live over the whole
    schedule (steps 0..``last``), packed per level in declaration order (after the arena in its
    level), each aligned like its C array; and where they end in the arena's level."""
    ends = {plan.level.name: plan.arena_size}
    out = []
    for name, p in sorted(plan.placements.items()):
        if p.root != name or name not in graph.tensors:
            continue
        if p.kind in (BufferKind.INPUT, BufferKind.OUTPUT) or (p.kind in _STORED and name in constants):
            size, offset = graph.tensors[name].nbytes, ends.get(p.level, 0)
            out.append(PlannedBuffer(name, p.kind, p.level, offset, size, 0, last))
            ends[p.level] = offset + align(size, DATA_ALIGNMENT)
    return out, ends[plan.level.name]


def tile_buffers(layers: list[Layer], tiling, staging_base: int, tile_level: str, staging_level: str
                 ) -> list[PlannedBuffer]:
    """The tile slots and kernel scratch (in ``tile_level``) and the staging buffers (in
    ``staging_level``, from ``staging_base``) of every tiled layer (``tiling``: a TiledNetwork),
    live during their layer, at the offsets their schedules give."""
    out = []
    for k, sched in tiling.schedules.items():
        name = layers[k].node.name
        for s in sched.slots:
            role = "output" if s.output else "weight" if s.operand.constant else "input"
            for c, off in enumerate(s.l1_offsets):
                out.append(PlannedBuffer(f"{name}: {s.operand.tensor} tile (slot {c + 1}/{s.copies})", BufferKind.TILE,
                                         tile_level, off, s.slot_bytes, k, k, role))
            if s.in_l3:
                out.append(PlannedBuffer(f"{name}: {s.operand.tensor} L2 tile", BufferKind.STAGING, staging_level,
                                         staging_base + s.staging_offset, s.staging_bytes, k, k))
        scratch = sched.l1_bytes - sched.scratch_offset     # the kernel's L1 scratch follows the slots
        if scratch:
            out.append(PlannedBuffer(f"{name}: kernel scratch", BufferKind.SCRATCH, tile_level, sched.scratch_offset,
                                     scratch, k, k))
    return out
