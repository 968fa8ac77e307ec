"""Tiling of a whole network for code generation: per bound layer, the CP-SAT tiling (two-level
when an operand lives in L3) and its tile schedule; the sizes of the L1 tile arena and of the L2
staging arena (each layer's buffers live only while it runs, so both are the largest layer's, but
for the layers that run beside an NPU layer's jobs in flight, above its tiles: ``overlap.py``, and
those whose first tile the layer before loads, their L1 base clear of its tiles: ``prefetch.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

from Deeploy.binding import Layer
from Deeploy.errors import DeeployError, TilingError
from Deeploy.ir.graph import Graph
from Deeploy.ir.region import InputKind, body_inputs
from Deeploy.memory.planner import BufferKind, MemoryPlan
from Deeploy.tiling.dma_plan import loop_kind
from Deeploy.tiling.families import RuleContext, layer_spec
from Deeploy.tiling.overlap import Overlaps, plan_overlaps
from Deeploy.tiling.prefetch import Prefetches, plan_prefetches
from Deeploy.tiling.params import PlatformTiling, TilingParams, l3_to_l2_params
from Deeploy.tiling.schedule import TileSchedule, schedule_layer
from Deeploy.tiling.solver import solve_spec
from Deeploy.tiling.tile_node import tile_classes
from Deeploy.tiling.tile_scratch import with_tile_scratch
from Deeploy.tiling.spec import INPUT, LayerSpec
from Deeploy.tiling.two_level import restrict

__all__ = ["TilingOptions", "TiledNetwork", "tile_network", "schedule_one", "schedule_cycles", "staging_budget",
           "spill_constants", "LEVELS", "level_limits", "check_level_limits"]

LEVELS = ("L2", "L3")


@dataclass(frozen=True)
class TilingOptions:
    """``--l1`` (bytes for one layer's tiles), ``--l2`` (L2 bytes for data: activations, inputs,
    outputs, constants and the L2 tiles of operands in L3; code and the runtime live in the rest
    of the platform's L2, which the linker checks), ``--defaultMemLevel`` (where graph inputs,
    outputs and constants live; activations stay in L2; None: L2, and the constants that do not
    fit ``--l2`` move to L3, see ``spill_constants``) and ``--doublebuffer`` (the solver
    double-buffers every layer where the modelled cycles say the second copy pays for itself;
    without it every layer is single-buffered)."""

    l1: int = 64000
    l2: int = 1024000
    default_level: str | None = None
    double_buffer: bool = False

    @property
    def data_level(self) -> str:
        """Where graph inputs, outputs and constants are placed first."""
        return self.default_level or "L2"

    def __post_init__(self):
        if self.default_level is not None and self.default_level not in LEVELS:
            raise DeeployError(f"--defaultMemLevel must be one of {', '.join(LEVELS)}, got '{self.default_level}'")
        if self.l1 <= 0 or self.l2 <= 0:
            raise DeeployError(f"--l1 and --l2 must be positive (got {self.l1} and {self.l2})")

    def l1_params(self, platform: PlatformTiling, cores: int) -> TilingParams:
        return replace(platform.tiles, capacity=self.l1, cores=cores,
                       buffering="auto" if self.double_buffer else "single")


def level_limits(memory) -> dict[str, tuple[int, str]]:
    """The most each bounded memory level offers a network, with how it follows: the physical
    size less what the platform's runtime keeps there (``MemoryLevel.reserved``)."""
    limits = {}
    for m in memory:
        if m.size is not None:
            why = f"physical {m.name} {m.size} B" + (f" less {m.reserved} B of {m.reserved_for}" if m.reserved else "")
            limits[m.name] = (m.size - m.reserved, why)
    return limits


def check_level_limits(options: TilingOptions, memory) -> None:
    """A ``DeeployError`` if ``--l1`` or ``--l2`` asks for more than the platform has."""
    limits = level_limits(memory)
    for flag, value, level in (("--l1", options.l1, "L1"), ("--l2", options.l2, "L2")):
        most, why = limits[level]
        if value > most:
            error = DeeployError(f"{flag} {value} is more than the platform's {level} allows: use {flag} {most} or less")
            error.details = f"{most} B: {why}"
            raise error


@dataclass(frozen=True)
class TiledNetwork:
    schedules: dict[int, TileSchedule]    # layer index -> schedule (zero-copy layers absent)
    l1_size: int
    staging_size: int
    staging_budget: int
    options: TilingOptions
    overlaps: Overlaps = field(default_factory=Overlaps)   # NPU layers left running over cluster layers (overlap.py)
    prefetches: Prefetches = field(default_factory=Prefetches)   # first tiles loaded by the layer before (prefetch.py)

    def l1_base(self, k: int) -> int:
        """Layer ``k``'s offset in the L1 tile arena."""
        return self.overlaps.l1_base.get(k, 0) + self.prefetches.l1_base.get(k, 0)


_DATA = (BufferKind.CONSTANT, BufferKind.INPUT, BufferKind.OUTPUT)


def _in_l3(plan: MemoryPlan, name: str) -> bool:
    """An input, output or constant placed in L3."""
    p = plan.placements.get(name)
    return p is not None and p.kind in _DATA and p.level == "L3"


def _data_bytes(graph: Graph, plan: MemoryPlan, level: str = "L2") -> int:
    """Bytes of the graph's inputs, outputs and constants placed in ``level``."""
    names = set(graph.inputs) | set(graph.outputs) | {t.name for t in graph.constants()}
    return sum(graph.tensors[n].nbytes for n in names if plan.placements[n].level == level
               and plan.placements[n].kind != BufferKind.STREAMED)   # streamed: in the arena


def spill_constants(graph: Graph, plan: MemoryPlan, options: TilingOptions) -> list[str]:
    """Without an explicit ``--defaultMemLevel``: if the activations and the data in L2 exceed
    ``--l2``, move constants to L3, the largest first, until the rest fits with ``--l1`` bytes
    left for the L2 tiles of the moved ones; a region's per-iteration constant moves with the
    same constant of every other iteration (the iterations stay alike, so the region still rolls).
    Returns the names to move (the caller plans again with them in L3)."""
    if options.default_level is not None:
        return []
    family = {t: f for region in graph.regions for b in body_inputs(graph, region)
              if b.kind == InputKind.PER_ITERATION for f in [tuple(dict.fromkeys(b.tensors))] for t in f}
    need = plan.arena_size + _data_bytes(graph, plan)
    moved: dict[str, None] = {}
    for t in sorted(graph.constants(), key=lambda t: (-t.nbytes, t.name)):
        if need + (options.l1 if moved else 0) <= options.l2:
            break
        for c in family.get(t.name, (t.name,)):
            p = plan.placements[c]
            if p.level != "L2" or p.kind == BufferKind.STREAMED or c in graph.state or c in moved:
                continue
            need -= graph.tensors[c].nbytes
            moved[c] = None
    return list(moved)


def _l2_error(plan: MemoryPlan, data: int, staging: int, options: TilingOptions) -> DeeployError:
    parts = [f"activations {plan.arena_size} B"] + ([f"inputs, outputs and constants {data} B"] if data else [])
    parts += [f"L2 tiles of L3 operands {staging} B"] if staging else []
    need = plan.arena_size + data + staging
    fix = "--defaultMemLevel L3 or " if options.default_level != "L3" and data else ""
    error = DeeployError(f"the network does not fit L2: its data need {need} B, more than --l2 {options.l2}; "
                         f"use {fix}--l2 {need} or more")
    error.details = f"L2 data: {', '.join(parts)}"
    return error


def _misfit_error(misfits: list[TilingError]) -> TilingError:
    """One error for every layer that does not fit: the most demanding one in full, and the
    smallest size of its level that fits them all."""
    worst = max(misfits, key=lambda e: e.min_bytes)
    if len(misfits) == 1:
        return worst
    others = ", ".join(f"'{e.layer}' ({e.min_bytes} B)" for e in misfits if e is not worst)
    error = TilingError(f"layer '{worst.layer}' ({worst.op}) and {len(misfits) - 1} more do not fit {worst.level} = "
                        f"{worst.capacity} B; the smallest size that fits every layer is {worst.min_bytes} B",
                        layer=worst.layer, op=worst.op, level=worst.level, capacity=worst.capacity,
                        min_bytes=worst.min_bytes, constraint=worst.constraint)
    error.details = f"{worst.details}; the others: {others}"
    return error


def _resident(plan: MemoryPlan) -> frozenset[str]:
    """Tensors an engine reads in place where they live (a weight memory's contents, preloaded or
    streamed into it)."""
    return frozenset(n for n, p in plan.placements.items() if p.kind == BufferKind.WEIGHT
                     or p.kind == BufferKind.STREAMED and p.level != plan.level.name)


def _check_resident(spec: LayerSpec, resident: frozenset[str]) -> LayerSpec:
    """``spec`` without its resident operands (they take no L1 and no DMA). A resident operand is
    read in place, so its tile boxes must be contiguous: only its first axis may follow a dim."""
    kept = []
    for o in spec.operands:
        if o.tensor not in resident:
            kept.append(o)
        elif o.role != INPUT or any(a.dim is not None for a in o.axes[1:]):
            raise DeeployError(f"layer '{spec.layer}' ({spec.op}): '{o.tensor}' lives in a weight memory but its "
                               f"tiles are not contiguous there (only inputs tiled along their first axis can be)")
    return replace(spec, operands=tuple(kept)) if len(kept) != len(spec.operands) else spec


def with_kernel_cycles(spec: LayerSpec, node, graph: Graph, params: TilingParams) -> LayerSpec:
    """``spec`` with the tile cycles of its kernel's formula when the platform has one for the
    layer's op (``TilingParams.kernel_cycles``)."""
    if spec.zero_copy or spec.tile_cycles is not None:
        return spec
    for op, model in params.kernel_cycles:
        if op == spec.op:
            cycles = model(node, graph, params.cores)
            if cycles is not None:
                return replace(spec, tile_cycles=cycles)
    return spec


def schedule_one(layer: Layer, graph: Graph, plan: MemoryPlan, options: TilingOptions, platform: PlatformTiling,
                 cores: int, budget: int, resident: frozenset[str], whole: bool = False) -> TileSchedule | None:
    """The schedule of one layer (None: a zero-copy view): L1 tiles, inside L2 tiles when an
    operand lives in L3 (``budget``: L2 bytes for their staging); ``resident`` tensors are read in
    place. Tiles are priced with the loop a compile-time DMA plan gives them (``loop_cycles``); a
    layer whose schedule then runs from tables (``dma_plan.loop_kind``) is solved again at the
    table loop's price. ``whole``: one tile. TilingError when it does not fit."""
    l1_params = replace(options.l1_params(platform, cores), hold=not layer.engine.tile_sync)
    spec = with_tile_scratch(layer_spec(layer.node, graph, RuleContext(layer.scratch)), layer, graph, cores, l1_params)
    spec = with_kernel_cycles(spec, layer.node, graph, l1_params)
    if whole:
        spec = replace(spec, dims=tuple(replace(d, tileable=False, why_whole="one tile") for d in spec.dims))
    if spec.zero_copy:
        return None
    mine = resident & {o.tensor for o in spec.operands}
    moved = _check_resident(spec, mine)
    staged = {o.tensor: True for o in moved.operands if o.nbytes > 0 and _in_l3(plan, o.tensor)}
    if staged and budget < 1024:
        raise _l2_error(plan, _data_bytes(graph, plan), 1024, options)
    for params in (l1_params, replace(l1_params, loop_cycles=())):
        if staged:
            outer = solve_spec(replace(moved, scratch=0),
                               replace(l3_to_l2_params(budget, params, platform.staging), buffering="single"))
            inner = solve_spec(restrict(moved, outer.tile_sizes), params)
            sched = schedule_layer(spec, inner, outer, staged, inner.double_buffered, params.alignment, mine)
        else:
            sol = solve_spec(moved, params)
            sched = schedule_layer(spec, sol, None, {}, sol.double_buffered, params.alignment, mine)
        if not params.loop_cycles or loop_kind(layer, sched) != "tables":
            break
    return sched


def schedule_cycles(sched: TileSchedule) -> int:
    """The tiler's modelled cycles of a scheduled layer (its L2 tiles each run at its L1 tiling's)."""
    if sched.l2 is None:
        return sched.l1.total_cycles
    return sched.l2.dma_cycles + sched.l2.overhead_cycles + sched.l2.num_tiles * sched.l1.total_cycles


def staging_budget(graph: Graph, plan: MemoryPlan, options: TilingOptions) -> int:
    """L2 bytes left for the L2 tiles of operands in L3 (``--l2`` less the arena and the data in L2)."""
    return options.l2 - plan.arena_size - _data_bytes(graph, plan)


def tile_network(graph: Graph, layers: list[Layer], plan: MemoryPlan, options: TilingOptions,
                 platform: PlatformTiling, cores: int, log: Callable[[str], None] | None = None) -> TiledNetwork:
    """Schedules of every layer that runs. What lives in L2 (the activation arena ``plan``, and
    I/O and constants placed in L2) leave the rest of ``options.l2`` as the budget of the L2
    tiles of operands in L3; tensors in a weight memory (``BufferKind.WEIGHT``) are read in place.
    ``log`` gets each layer's L1 tiling (with ``--doublebuffer`` also the other buffering's cycles)."""
    budget = staging_budget(graph, plan, options)
    if budget < 0:
        raise _l2_error(plan, _data_bytes(graph, plan), 0, options)
    resident = _resident(plan)
    schedules, l1_size, staging, misfits = {}, 0, 0, []
    for k, layer in enumerate(layers):
        try:
            sched = schedule_one(layer, graph, plan, options, platform, cores, budget, resident)
        except TilingError as error:
            if error.min_bytes is None:
                raise
            misfits.append(error)
            continue
        if sched is None:
            continue
        if log is not None:
            log(f"tiling: {sched.l1.summary()}")
        if sched.l1_bytes > options.l1:
            raise DeeployError(f"layer '{layer.node.name}' ({layer.node.op}): its L1 tiles need {sched.l1_bytes} B, "
                               f"more than --l1 {options.l1}; the smallest --l1 that fits is {sched.l1_bytes} B")
        schedules[k] = replace(sched, classes=tile_classes(layer.node, graph, sched))
        l1_size = max(l1_size, sched.l1_bytes)
        staging = max(staging, sched.staging_bytes)
    if misfits:
        raise _misfit_error(misfits)
    regions = _in_regions(graph, layers)
    overlaps, schedules = plan_overlaps(layers, schedules, options.l1, regions, schedule_cycles,
                                        lambda k: _whole(layers[k], graph, plan, options, platform, cores, budget,
                                                         resident), platform.tiles.alignment)
    if log is not None:
        for stop, ks in sorted(overlaps.finish.items()):
            for k in ks:
                log(f"overlap: '{layers[k].node.name}' ({schedules[k].num_tiles} tiles) runs beside the layers up to "
                    f"{stop}, which cover {overlaps.hidden[k]} cycles of its jobs")
    prefetches, schedules = plan_prefetches(layers, schedules, plan, options.l1, regions, overlaps,
                                            platform.tiles.alignment)
    if log is not None:
        for n, m in sorted(prefetches.issuer.items()):
            log(f"prefetch: '{layers[n].node.name}' loads the first tile of "
                f"{', '.join(schedules[m].slots[o].operand.tensor for o in prefetches.ahead[m])} for "
                f"'{layers[m].node.name}' (L1 base {prefetches.l1_base.get(m, 0)})")
    tiled = TiledNetwork(schedules, l1_size, staging, budget, options, overlaps, prefetches)
    # the tile arena: every layer's tiles at its L1 base (above another layer's tiles for some)
    return replace(tiled, l1_size=max([l1_size] + [tiled.l1_base(k) + s.l1_bytes for k, s in schedules.items()]))


def _in_regions(graph: Graph, layers: list[Layer]) -> set[int]:
    names = {name for region in graph.regions for name in region.node_names()}
    return {k for k, layer in enumerate(layers) if layer.node.name in names}


def _whole(layer: Layer, graph: Graph, plan: MemoryPlan, options: TilingOptions, platform: PlatformTiling,
           cores: int, budget: int, resident: frozenset[str]) -> TileSchedule | None:
    """The layer as one tile (None when it does not fit)."""
    try:
        sched = schedule_one(layer, graph, plan, options, platform, cores, budget, resident, whole=True)
    except TilingError:
        return None
    return replace(sched, classes=tile_classes(layer.node, graph, sched)) if sched is not None else None
