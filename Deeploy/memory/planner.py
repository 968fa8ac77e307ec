"""Static memory planning, the one home of buffer offsets: every activation and kernel scratch
gets a fixed offset in the arena of its memory level, reusing space between buffers whose
lifetimes do not overlap; graph inputs, outputs and constants get their level and, for the
picture of a level, their place after the arena (``data_buffers``); the tiles of tiled layers are
recorded from their schedules (``tile_buffers``). Graph inputs and outputs own dedicated buffers
so a caller can refill inputs and read outputs around any number of runs.

Planning is a function: ``plan_memory`` maps the graph, its layers, the levels and a
``Placement`` (the decisions made before it: constants moved to another level, constants in a
weight memory, streamed parameters, the arena's kernel scratch) to a read-only ``MemoryPlan``; a
decision that depends on a plan is made from one and planned again, never by editing it."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping, Sequence

from Deeploy.binding import Layer
from Deeploy.ir.graph import Graph
from Deeploy.memory.fold import place_folded, region_spans
from Deeploy.memory.lifetimes import Interval, alias_roots, lifetimes
from Deeploy.memory.stream import Stream, stream_candidates
from Deeploy.memory.levels import MemoryLevel

__all__ = ["BufferKind", "Location", "Placement", "PlannedBuffer", "MemoryPlan", "plan_memory", "choose_streams",
           "arena_scratch", "place_intervals", "peak_live_bytes", "data_buffers", "tile_buffers", "DATA_ALIGNMENT"]

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
class Location:
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


def _frozen(mapping: Mapping) -> Mapping:
    """A read-only copy of ``mapping``."""
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True)
class Placement:
    """The decisions a memory plan follows, made before planning: ``levels``, constants stored in
    another level than the data level (moved to L3 to fit ``--l2``); ``weights``, constants in an
    engine's weight memory (tensor -> that level: ``BufferKind.WEIGHT``); ``streams``, regions'
    parameters streamed into a double buffer (``choose_streams``; planning gives the offsets);
    ``scratch``, node name -> bytes of its layer's kernel scratch in the arena (``arena_scratch``;
    none for tiled layers, whose scratch lives with their tiles)."""

    levels: Mapping[str, str] = field(default_factory=dict)
    weights: Mapping[str, str] = field(default_factory=dict)
    streams: tuple[Stream, ...] = ()
    scratch: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self):
        for name in ("levels", "weights", "scratch"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        object.__setattr__(self, "streams", tuple(self.streams))


@dataclass(frozen=True)
class MemoryPlan:
    """Locations of all tensors, the arena's buffers (activations and kernel scratch) with their
    offsets and lifetimes, the arena size and its lower bound. ``level`` holds the arena,
    ``data_level`` the graph inputs, outputs and constants. Read-only: made by ``plan_memory``."""

    level: MemoryLevel
    data_level: MemoryLevel
    placements: Mapping[str, Location] = field(default_factory=dict)
    scratch_offsets: Mapping[str, int] = field(default_factory=dict)  # node name -> arena offset
    arena_size: int = 0
    lower_bound: int = 0
    buffers: tuple[PlannedBuffer, ...] = ()
    streams: tuple[Stream, ...] = ()   # regions' parameters streamed into the arena or a stream buffer
    stream_buffers: Mapping[str, int] = field(default_factory=dict)   # level -> bytes of its streams' double buffers

    def __post_init__(self):
        for name in ("placements", "scratch_offsets", "stream_buffers"):
            object.__setattr__(self, name, _frozen(getattr(self, name)))
        for name in ("buffers", "streams"):
            object.__setattr__(self, name, tuple(getattr(self, name)))


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


def arena_scratch(layers: Sequence[Layer]) -> dict[str, int]:
    """Node name -> kernel scratch bytes of the layers that have some (untiled: in the arena)."""
    return {layer.node.name: layer.scratch for layer in layers if layer.scratch}


def _constant_levels(graph: Graph, level: MemoryLevel, data_level: MemoryLevel,
                     levels: Mapping[str, str]) -> dict[str, str]:
    """Constant -> the level storing it: a variable in the arena's level (the program's initialised
    data), a constant in ``data_level`` unless ``levels`` moves it."""
    return {t.name: level.name if t.name in graph.state else levels.get(t.name, data_level.name)
            for t in graph.tensors.values() if t.name in graph.state or t.is_constant}


def choose_streams(graph: Graph, level: MemoryLevel, data_level: MemoryLevel, levels: Mapping[str, str],
                   into: dict | None = None) -> tuple[Stream, ...]:
    """The streams of the rolled regions' per-iteration constants stored outside the arena's
    ``level`` (constants in ``data_level`` unless ``levels`` moves them; ``memory/stream.py``):
    into a double buffer in the arena or, those ``into`` names (tensor -> (level, alignment);
    None: not streamed), into the stream buffer of that level."""
    spans, _ = region_spans(graph)
    return tuple(stream_candidates(graph, spans, _constant_levels(graph, level, data_level, levels), level.name,
                                   into))


def plan_memory(graph: Graph, layers: Sequence[Layer], level: MemoryLevel, data_level: MemoryLevel | None = None,
                placement: Placement | None = None) -> MemoryPlan:
    """Activations, the ``placement``'s kernel scratch and streams' double buffers in ``level``'s
    arena; inputs, outputs and constants in ``data_level`` (default: ``level``), constants where
    the ``placement`` puts them; ``layers`` give the steps. Default placement: nothing moved and
    every layer's kernel scratch in the arena. Changes none of its arguments."""
    data_level = data_level or level
    placement = placement or Placement(scratch=arena_scratch(layers))
    placements: dict[str, Location] = {}
    roots = alias_roots(graph)
    for k, name in enumerate(graph.inputs):
        placements[name] = Location(BufferKind.INPUT, name, data_level.name, index=k)
    for k, name in enumerate(graph.outputs):
        if name not in placements:
            placements[name] = Location(BufferKind.OUTPUT, name, data_level.name, index=k)
    for name, at in _constant_levels(graph, level, data_level, placement.levels).items():
        placements[name] = Location(BufferKind.CONSTANT, name, at)
    for name, at in placement.weights.items():
        placements[name] = Location(BufferKind.WEIGHT, name, at)

    sizes: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.outputs:
            if name and name not in placements and name not in roots:
                sizes[name] = align(graph.tensors[name].nbytes, level.alignment)
    tensors = lifetimes(graph, sizes, roots)
    step_of = {layer.node.name: step for step, layer in enumerate(layers)}
    scratches = [Interval(layer.node.name, align(placement.scratch[layer.node.name], level.alignment),
                          step_of[layer.node.name], step_of[layer.node.name])
                 for layer in layers if placement.scratch.get(layer.node.name)]
    in_arena = [s for s in placement.streams if not s.into]
    doubles = [Interval(f"{s.span.name}: streamed parameters", 2 * s.slot, s.span.start, s.span.end - 1)
               for s in in_arena]
    offsets, arena_size = _place(graph, tensors, scratches, step_of, level.alignment, doubles)
    streams, buffers, stream_buffers = [], [], {}

    def place_stream(s: Stream, at: str, offset: int) -> None:
        """Stream ``s`` with its double buffer at ``offset`` of ``at``'s arena or stream buffer."""
        streams.append(replace(s, offset=offset))
        buffers.append(PlannedBuffer(f"{s.span.name}: streamed parameters", BufferKind.STREAMED, at, offset,
                                     2 * s.slot, s.span.start, s.span.end - 1))
        for j, members in enumerate(s.members):
            for name, off in members:
                placements[name] = Location(BufferKind.STREAMED, name, at, offset + j % 2 * s.slot + off)
    for s, offset in zip(in_arena, offsets[len(tensors) + len(scratches):]):
        place_stream(s, level.name, offset)
    for s in placement.streams:   # the others one after the other in their level's stream buffer
        if s.into:
            place_stream(s, s.into, stream_buffers.get(s.into, 0))
            stream_buffers[s.into] = stream_buffers.get(s.into, 0) + 2 * s.slot
    for iv, offset in zip(tensors, offsets):
        placements[iv.name] = Location(BufferKind.ACTIVATION, iv.name, level.name, offset=offset)
        buffers.append(PlannedBuffer(iv.name, BufferKind.ACTIVATION, level.name, offset,
                                     graph.tensors[iv.name].nbytes, iv.first, iv.last))
    scratch_offsets = {}
    for iv, offset in zip(scratches, offsets[len(tensors):]):
        scratch_offsets[iv.name] = offset
        buffers.append(PlannedBuffer(f"{iv.name}: kernel scratch", BufferKind.SCRATCH, level.name, offset,
                                     placement.scratch[iv.name], iv.first, iv.last))
    for name, root in roots.items():
        placements[name] = placements[root]
    return MemoryPlan(level, data_level, placements, scratch_offsets, arena_size,
                      peak_live_bytes(tensors + scratches + doubles), buffers, streams, stream_buffers)


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
    live during their layer (a first slot loaded by the layer before from that layer on), at their
    layer's L1 base plus the offsets their schedules give."""
    out = []
    by = {m: n for n, m in tiling.prefetches.issuer.items()}
    for k, sched in tiling.schedules.items():
        name, base = layers[k].node.name, tiling.l1_base(k)
        for s in sched.slots:
            role = "output" if s.output else "weight" if s.operand.constant else "input"
            for c, off in enumerate(s.l1_offsets):
                first = by[k] if c == 0 and s.index in tiling.prefetches.ahead.get(k, ()) else k
                out.append(PlannedBuffer(f"{name}: {s.operand.tensor} tile (slot {c + 1}/{s.copies})", BufferKind.TILE,
                                         tile_level, base + off, s.slot_bytes, first, k, role))
            if s.in_l3:
                out.append(PlannedBuffer(f"{name}: {s.operand.tensor} L2 tile", BufferKind.STAGING, staging_level,
                                         staging_base + s.staging_offset, s.staging_bytes, k, k))
        scratch = sched.scratch_bytes
        if scratch:
            out.append(PlannedBuffer(f"{name}: kernel scratch", BufferKind.SCRATCH, tile_level,
                                     base + sched.scratch_offset, scratch, k, k))
    return out
