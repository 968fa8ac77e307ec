"""Tiling of a whole network for code generation: per bound layer, the CP-SAT tiling (two-level
when an operand lives in L3) and its tile schedule; the sizes of the L1 tile arena and of the L2
staging arena (each layer's buffers live only while it runs, so both are the largest layer's)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from Deeploy.binding import Layer
from Deeploy.errors import DeeployError
from Deeploy.ir.graph import Graph
from Deeploy.memory.planner import MemoryPlan
from Deeploy.tiling.constraints import RuleContext, layer_spec
from Deeploy.tiling.params import VIRTUAL_PLATFORM_L1, TilingParams, l3_to_l2_params
from Deeploy.tiling.schedule import TileSchedule, schedule_layer
from Deeploy.tiling.solver import solve_spec
from Deeploy.tiling.two_level import restrict

__all__ = ["TilingOptions", "TiledNetwork", "tile_network", "LEVELS", "CODE_RESERVE"]

LEVELS = ("L2", "L3")
CODE_RESERVE = 128 * 1024   # L2 kept for code, runtime data and the harness when sizing staging


@dataclass(frozen=True)
class TilingOptions:
    """``--l1`` (bytes for one layer's tiles), ``--l2`` (the L2 memory), ``--defaultMemLevel``
    (where graph inputs, outputs and constants live; activations stay in L2) and
    ``--doublebuffer``."""

    l1: int = 64000
    l2: int = 1024000
    default_level: str = "L2"
    double_buffer: bool = False

    def __post_init__(self):
        if self.default_level not in LEVELS:
            raise DeeployError(f"--defaultMemLevel must be one of {', '.join(LEVELS)}, got '{self.default_level}'")
        if self.l1 <= 0 or self.l2 <= 0:
            raise DeeployError(f"--l1 and --l2 must be positive (got {self.l1} and {self.l2})")

    def l1_params(self, cores: int) -> TilingParams:
        return replace(VIRTUAL_PLATFORM_L1, capacity=self.l1, cores=cores,
                       buffering="double" if self.double_buffer else "single")


@dataclass(frozen=True)
class TiledNetwork:
    schedules: dict[int, TileSchedule]    # layer index -> schedule (zero-copy layers absent)
    l1_size: int
    staging_size: int
    staging_budget: int
    options: TilingOptions


def _l3_tensors(graph: Graph, plan: MemoryPlan, options: TilingOptions) -> set[str]:
    if options.default_level != "L3":
        return set()
    return {n for n, p in plan.placements.items() if p.kind in ("constant", "input", "output")}


def tile_network(graph: Graph, layers: list[Layer], plan: MemoryPlan, options: TilingOptions, cores: int,
                 l2_data_bytes: int) -> TiledNetwork:
    """Schedules of every layer that runs. ``l2_data_bytes``: what already lives in L2 (the
    activation arena, and I/O and constants when they live there); the rest of ``options.l2``,
    less CODE_RESERVE, is the budget of the L2 tiles of operands in L3."""
    from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
    ctx = RuleContext(SIRACUSA_BINDINGS, cores)
    l1_params = options.l1_params(cores)
    in_l3 = _l3_tensors(graph, plan, options)
    budget = options.l2 - l2_data_bytes - CODE_RESERVE
    schedules, l1_size, staging = {}, 0, 0
    for k, layer in enumerate(layers):
        spec = layer_spec(layer.node, graph, ctx)
        if spec.zero_copy:
            continue
        staged = {o.tensor: True for o in spec.operands if o.tensor in in_l3 and o.nbytes > 0}
        if staged:
            if budget <= 0:
                raise DeeployError(f"L2 is full before tiling layer '{layer.node.name}': {l2_data_bytes} B of "
                                   f"activations and data + {CODE_RESERVE} B for code exceed --l2 {options.l2}; "
                                   f"increase --l2")
            outer = solve_spec(replace(spec, scratch=0), replace(l3_to_l2_params(budget, l1_params), buffering="single"))
            inner = solve_spec(restrict(spec, outer.tile_sizes), l1_params)
            sched = schedule_layer(spec, inner, outer, staged, options.double_buffer, l1_params.alignment)
        else:
            sched = schedule_layer(spec, solve_spec(spec, l1_params), None, {}, options.double_buffer,
                                   l1_params.alignment)
        if sched.l1_bytes > options.l1:
            raise DeeployError(f"layer '{layer.node.name}' ({layer.node.op}): its L1 tiles need {sched.l1_bytes} B, "
                               f"more than --l1 {options.l1}; the smallest --l1 that fits is {sched.l1_bytes} B")
        schedules[k] = sched
        l1_size = max(l1_size, sched.l1_bytes)
        staging = max(staging, sched.staging_bytes)
    return TiledNetwork(schedules, l1_size, staging, budget, options)
