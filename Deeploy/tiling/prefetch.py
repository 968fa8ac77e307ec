"""Cross-layer prefetch: while a tiled layer computes, the cluster DMA already loads the first tile
of the next layer's inputs that do not depend on it (constants, graph inputs and activations
written before it), so the next layer starts with them in L1 instead of loading them. Both layers
run from compile-time DMA plans (``dma_plan``: straight-line code or a planned loop), the first on
the cluster, the next on the cluster or an NPU (its weights); outside regions, an NPU layer left
with its jobs in flight and the layers beside them (``overlap.py``: ``skip``); the layer that
first waits for the jobs may hand over, as their tiles are free by then.

The room is decided with the tiles, before the memory plan records them: consecutive layers sit at
opposite ends of L1, the next layer's first slots at the edge of its own layout away from the
layer before (``schedule_layer``'s ``ahead``, ``top``), so a pair needs the layer's L1 bytes plus
those slots within ``--l1``; where they do not fit, the pair keeps its own loads. (Tiling a layer
smaller to make room does not pay on the modelled cluster: the kernels' cycle formulas do not
price smaller tiles closely enough to weigh the few hundred cycles of a first load.) Codegen
(``codegen/tiled.py``) issues the copies (``first_loads``) with the layer's first loads
(``with_handoff``); its final wait for all its transfers covers them, so the next layer finds them
complete."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from Deeploy.binding import Layer
from Deeploy.memory.planner import MemoryPlan
from Deeploy.runtime.abi import TILE_MAX_GEOMETRIES, TILE_MAX_OPERANDS
from Deeploy.tiling.dma_plan import dma_plan, first_loads, loop_kind
from Deeploy.tiling.schedule import TileSchedule, schedule_layer

__all__ = ["Prefetches", "plan_prefetches"]

_ALIGN = 16     # a layer's L1 base: a multiple of this and of the level's alignment
_MAX_COPIES = 255   # the loads one tile of a planned loop issues (TILE_STEP.loads)


@dataclass(frozen=True)
class Prefetches:
    """``ahead``: layer -> the operands (indices) whose first tile the layer before it
    (``issuer``) loads; ``issuer``: that layer -> the layer it loads them for; ``l1_base``: the L1
    offset of every layer placed at the top of L1."""

    ahead: dict[int, tuple[int, ...]] = field(default_factory=dict)
    issuer: dict[int, int] = field(default_factory=dict)
    l1_base: dict[int, int] = field(default_factory=dict)


def _pairable(layers: list[Layer], schedules: dict[int, TileSchedule], plan: MemoryPlan, n: int, m: int,
              skip: set[int]) -> bool:
    """Whether layer ``n`` can load layer ``m``'s first tile: both planned, ``n`` on the cluster,
    none of ``skip``, the layers between them views sharing their input's storage."""
    return (n not in skip and m not in skip
            and all(lay.node.inputs and lay.node.inputs[0]
                    and plan.placements[lay.node.outputs[0]] == plan.placements[lay.node.inputs[0]]
                    for lay in layers[n + 1:m])
            and layers[n].engine.forked
            and all(loop_kind(layers[k], schedules[k]) != "tables" for k in (n, m)))


def _independent(schedules: dict[int, TileSchedule], n: int, m: int, producer: dict[str, int]) -> tuple[int, ...]:
    """Layer ``m``'s inputs (operand indices) that no layer from ``n`` on writes, with a first tile."""
    return tuple(s.index for s in schedules[m].slots
                 if not s.output and s.copies and producer.get(s.operand.tensor, -1) < n
                 and first_loads(schedules[m], (s.index,)))


def _issuable(layer: Layer, sched: TileSchedule, copies) -> bool:
    """Whether the layer's plan takes ``copies`` more with its first loads (a planned loop: within
    its geometries, with a handle of their own)."""
    own = dma_plan(sched)
    if len(own.tiles[0].loads) + len(copies) > _MAX_COPIES:
        return False
    return loop_kind(layer, sched) != "plan" or (len(set(own.shapes) | {c.shape for c in copies}) <= TILE_MAX_GEOMETRIES
                                                and len(sched.slots) < TILE_MAX_OPERANDS)


def _relayout(sched: TileSchedule, ops: tuple[int, ...], top: bool, alignment: int) -> TileSchedule:
    """``sched`` with the first slots of ``ops`` at its bottom or ``top``."""
    laid = schedule_layer(sched.spec, sched.l1, sched.l2, {}, sched.double_buffer, alignment,
                          ahead=frozenset(sched.slots[o].operand.tensor for o in ops), top=top)
    return replace(laid, classes=sched.classes)


def plan_prefetches(layers: list[Layer], schedules: dict[int, TileSchedule], plan: MemoryPlan, l1: int,
                    skip: set[int], alignment: int = 4) -> tuple[Prefetches, dict[int, TileSchedule]]:
    """Which consecutive tiled layers hand the next one's independent first-tile inputs over
    (see the module docstring). Returns the prefetches and the schedules (laid out for them)."""
    align = math.lcm(_ALIGN, alignment)
    producer = {o: k for k, layer in enumerate(layers) for o in layer.node.outputs if o}
    order = sorted(schedules)
    pairs = []
    for n, m in zip(order, order[1:]):
        if _pairable(layers, schedules, plan, n, m, skip):
            ops = _independent(schedules, n, m, producer)
            need = schedules[n].l1_bytes + sum(schedules[m].slots[o].slot_bytes for o in ops)
            if ops and need <= l1 and _issuable(layers[n], schedules[n], first_loads(schedules[m], ops)):
                pairs.append((n, m, ops, need))
    # the top of L1 for the layers placed there: as low as every pair (and alignment) allows
    end = min(-(-max([need for *_, need in pairs] + [s.l1_bytes for s in schedules.values()]) // align) * align
              + 2 * align, l1 // align * align)
    schedules, out, top = dict(schedules), Prefetches(), set()
    for n, m, ops, _ in pairs:
        laid = _relayout(schedules[m], ops, n not in top, alignment)    # at the other end of L1 from layer n
        base = 0 if n in top else (end - laid.l1_bytes) // align * align
        lo, hi = out.l1_base.get(n, 0), out.l1_base.get(n, 0) + schedules[n].l1_bytes
        first = [base + laid.slots[o].l1_offsets[0] for o in ops]
        if base < 0 or any(a < hi and lo < a + laid.slots[o].slot_bytes for a, o in zip(first, ops)):
            continue
        schedules[m] = laid
        out.ahead[m], out.issuer[n] = ops, m
        if base:
            out.l1_base[m] = base
            top.add(m)
    return out, schedules
