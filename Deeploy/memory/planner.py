"""Static memory planning: every activation gets a fixed offset in one arena per memory level,
reusing space between tensors whose lifetimes do not overlap. Graph inputs and outputs own
dedicated buffers so a caller can refill inputs and read outputs around any number of runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from Deeploy.binding import Layer
from Deeploy.ir.graph import Graph
from Deeploy.memory.lifetimes import Interval, alias_roots, lifetimes
from Deeploy.targets.platform import MemoryLevel

__all__ = ["Placement", "MemoryPlan", "plan_memory", "place_intervals", "peak_live_bytes"]


@dataclass(frozen=True)
class Placement:
    """Where a tensor's storage lives: ``kind`` is 'arena' (``offset`` in the level's arena),
    'input' / 'output' (``index`` of the dedicated I/O buffer) or 'constant'."""

    kind: str
    root: str
    offset: int = 0
    index: int = 0


@dataclass
class MemoryPlan:
    """Placements of all tensors and scratch buffers, with the arena size and its lower bound."""

    level: MemoryLevel
    placements: dict[str, Placement] = field(default_factory=dict)
    scratch_offsets: dict[str, int] = field(default_factory=dict)  # node name -> arena offset
    arena_size: int = 0
    lower_bound: int = 0


def align(n: int, a: int) -> int:
    """``n`` rounded up to a multiple of ``a``."""
    return (n + a - 1) // a * a


def place_intervals(intervals: list[Interval], alignment: int) -> tuple[list[int], int]:
    """Greedy offset assignment, largest first, each at the lowest gap free during its life.
    Returns the offset of each interval (in the given order) and the total size."""
    order = sorted(range(len(intervals)), key=lambda k: (-intervals[k].size, intervals[k].first,
                                                         intervals[k].name))
    offsets = [0] * len(intervals)
    placed: list[int] = []
    total = 0
    for k in order:
        iv = intervals[k]
        busy = sorted((offsets[j], offsets[j] + intervals[j].size) for j in placed
                      if intervals[j].overlaps(iv))
        offset = 0
        for lo, hi in busy:
            if offset + iv.size <= lo:
                break
            offset = max(offset, align(hi, alignment))
        offsets[k] = offset
        placed.append(k)
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


def plan_memory(graph: Graph, layers: list[Layer], level: MemoryLevel) -> MemoryPlan:
    plan = MemoryPlan(level)
    roots = alias_roots(graph)
    for k, name in enumerate(graph.inputs):
        plan.placements[name] = Placement("input", name, index=k)
    for k, name in enumerate(graph.outputs):
        if name not in plan.placements:
            plan.placements[name] = Placement("output", name, index=k)
    for t in graph.tensors.values():
        if t.is_constant:
            plan.placements[t.name] = Placement("constant", t.name)

    sizes: dict[str, int] = {}
    for node in graph.nodes:
        for name in node.outputs:
            if name and name not in plan.placements and name not in roots:
                sizes[name] = align(graph.tensors[name].nbytes, level.alignment)
    tensors = lifetimes(graph, sizes, roots)
    step_of = {layer.node.name: step for step, layer in enumerate(layers)}
    scratches = [Interval(layer.node.name, align(layer.scratch, level.alignment),
                          step_of[layer.node.name], step_of[layer.node.name])
                 for layer in layers if layer.scratch]
    offsets, plan.arena_size = place_intervals(tensors + scratches, level.alignment)
    plan.lower_bound = peak_live_bytes(tensors + scratches)
    for iv, offset in zip(tensors, offsets):
        plan.placements[iv.name] = Placement("arena", iv.name, offset=offset)
    for iv, offset in zip(scratches, offsets[len(tensors):]):
        plan.scratch_offsets[iv.name] = offset
    for name, root in roots.items():
        plan.placements[name] = plan.placements[root]
    return plan
