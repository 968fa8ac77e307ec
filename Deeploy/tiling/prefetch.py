"""Cross-layer prefetch: while a tiled layer computes, the cluster DMA already loads the first tile
of the next layer's inputs that do not depend on it (constants, graph inputs and activations
written before it), so the next layer starts with them in L1 instead of loading them. Both layers
run from compile-time DMA plans (``dma_plan``: straight-line code or a planned loop), the first on
the cluster or an NPU (its straight-line loop, while it programs its jobs), the next on the cluster
or an NPU (its weights, its input); outside regions. With NPU layers left with their jobs in
flight (``overlap.py``), the layers beside the jobs hand over too (the slots stay clear of the
jobs' tiles as well, and of L1 below the layers beside them: those sit above the jobs' tiles, in
turn at opposite ends of the rest); the NPU layer itself hands over to the first of them (above
its tiles) and waits for those copies before it returns, its own final wait being left for its
jobs. Such an NPU layer receiving them takes the lowest L1 base (and edge of its own layout for
the slots) where the slots avoid every tile live meanwhile, the layers beside its own jobs moving
up with it.

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
from Deeploy.tiling.overlap import Overlaps
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
    """Whether layer ``n`` can load layer ``m``'s first tile: both planned, ``n`` on the cluster
    or in straight-line code (an NPU's), none of ``skip``, the layers between them views sharing
    their input's storage."""
    return (n not in skip and m not in skip
            and all(lay.node.inputs and lay.node.inputs[0]
                    and plan.placements[lay.node.outputs[0]] == plan.placements[lay.node.inputs[0]]
                    for lay in layers[n + 1:m])
            and (layers[n].engine.forked or loop_kind(layers[n], schedules[n]) == "code")
            and all(loop_kind(layers[k], schedules[k]) != "tables" for k in (n, m)))


def _independent(schedules: dict[int, TileSchedule], n: int, m: int, producer: dict[str, int],
                 unwritten: set[str] = frozenset()) -> tuple[int, ...]:
    """Layer ``m``'s inputs (operand indices) that no layer from ``n`` on writes, none of
    ``unwritten`` (their values still to come back from jobs in flight), with a first tile."""
    return tuple(s.index for s in schedules[m].slots
                 if not s.output and s.copies and producer.get(s.operand.tensor, -1) < n
                 and s.operand.tensor not in unwritten and first_loads(schedules[m], (s.index,)))


def _issuable(layer: Layer, sched: TileSchedule, copies) -> bool:
    """Whether the layer's plan takes ``copies`` more with its first loads (a planned loop: within
    its geometries, with a handle of their own)."""
    own = dma_plan(sched)
    if len(own.tiles[0].loads) + len(copies) > _MAX_COPIES:
        return False
    return loop_kind(layer, sched) != "plan" or (len(set(own.shapes) | {c.shape for c in copies}) <= TILE_MAX_GEOMETRIES
                                                and len(sched.slots) < TILE_MAX_OPERANDS)


def _clear(base: int, laid: TileSchedule, ops: tuple[int, ...], live: list[tuple[int, int]]) -> bool:
    """Whether the first slots of ``ops`` of ``laid`` at L1 offset ``base`` avoid the ``live`` ranges."""
    return not any(a < hi and lo < a + laid.slots[o].slot_bytes
                   for a, o in ((base + laid.slots[o].l1_offsets[0], o) for o in ops) for lo, hi in live)


def _relayout(sched: TileSchedule, ops: tuple[int, ...], top: bool, alignment: int) -> TileSchedule:
    """``sched`` with the first slots of ``ops`` at its bottom or ``top``."""
    laid = schedule_layer(sched.spec, sched.l1, sched.l2, {}, sched.double_buffer, alignment,
                          ahead=frozenset(sched.slots[o].operand.tensor for o in ops), top=top)
    return replace(laid, classes=sched.classes)


def _beside(overlaps: Overlaps) -> dict[int, list[int]]:
    """Layer -> the asynchronous layers whose jobs are in flight while it runs."""
    out: dict[int, list[int]] = {}
    for stop, ks in overlaps.finish.items():
        for k in ks:
            for j in range(k + 1, stop):
                out.setdefault(j, []).append(k)
    return out


def plan_prefetches(layers: list[Layer], schedules: dict[int, TileSchedule], plan: MemoryPlan, l1: int,
                    skip: set[int], overlaps: Overlaps,
                    alignment: int = 4) -> tuple[Prefetches, dict[int, TileSchedule]]:
    """Which consecutive tiled layers hand the next one's independent first-tile inputs over
    (see the module docstring), given the asynchronous layers (``overlaps``): a slot loaded ahead
    stays clear of the tiles of the layer loading it and of the layers whose jobs are in flight
    meanwhile; a layer beside such jobs receives them from their NPU layer or a layer beside them
    too (above their tiles); an asynchronous layer receiving them sits above all those tiles, the
    layers beside its own jobs above it.
    Returns the prefetches and the schedules (laid out for them)."""
    align = math.lcm(_ALIGN, alignment)
    producer = {o: k for k, layer in enumerate(layers) for o in layer.node.outputs if o}
    order = sorted(schedules)
    beside = _beside(overlaps)
    by_root: dict[str, list[str]] = {}
    for t, where in plan.placements.items():
        by_root.setdefault(where.root, []).append(t)
    pairs = []
    for n, m in zip(order, order[1:]):
        # m beside jobs in flight: those of n, or those n runs beside too (the pair above their tiles)
        if set(beside.get(m, ())) <= {n, *beside.get(n, ())} and _pairable(layers, schedules, plan, n, m, skip):
            pending = {plan.placements[o].root for k in beside.get(n, ()) for o in layers[k].node.outputs}
            ops = _independent(schedules, n, m, producer, {t for r in pending for t in by_root.get(r, ())})
            floor = overlaps.l1_base.get(m, 0) if n not in overlaps.deferred else 0
            need = floor + schedules[n].l1_bytes + sum(schedules[m].slots[o].slot_bytes for o in ops)
            if ops and need <= l1 and _issuable(layers[n], schedules[n], first_loads(schedules[m], ops)):
                pairs.append((n, m, ops, need))
    # the top of L1 for the layers placed there: as low as every pair (and alignment) allows
    extents = [need for *_, need in pairs] + [s.l1_bytes for s in schedules.values()]
    extents += [base + schedules[j].l1_bytes for j, base in overlaps.l1_base.items()]
    end = min(-(-max(extents) // align) * align + 2 * align, l1 // align * align)
    schedules, out, top = dict(schedules), Prefetches(), set()

    def span(k: int) -> tuple[int, int]:
        base = overlaps.l1_base.get(k, 0) + out.l1_base.get(k, 0)
        return base, base + schedules[k].l1_bytes

    for n, m, ops, _ in pairs:
        live = [span(k) for k in (n, *beside.get(n, ())) if k in schedules]
        moved = [j for j in overlaps.l1_base if m in beside.get(j, ())]    # the layers beside m's jobs
        if m in overlaps.deferred:      # the lowest base (and edge of its slots) that fits
            layouts = [_relayout(schedules[m], ops, edge, alignment) for edge in (False, True)]
            options = [(base, laid) for laid in layouts for base in {0} | {-(-hi // align) * align for _, hi in live}
                       if base + laid.l1_bytes <= l1 and all(laid.l1_bytes <= overlaps.l1_base[j] and base
                                                             + overlaps.l1_base[j] + schedules[j].l1_bytes <= l1
                                                             for j in moved)
                       and _clear(base, laid, ops, live)]
            if not options:
                continue
            base, laid = min(options, key=lambda option: option[0])
        else:
            floor = span(m)[0]      # above the tiles of the jobs in flight beside m
            if m in overlaps.l1_base and n in overlaps.deferred:     # beside n's jobs: above all n's tiles
                laid, at = schedules[m], floor
            else:   # at the other end of L1 (above that floor) from layer n
                laid = _relayout(schedules[m], ops, n not in top, alignment)
                at = floor if n in top else (end - laid.l1_bytes) // align * align
            if at < floor or at + laid.l1_bytes > l1 or not _clear(at, laid, ops, live):
                continue
            if at != floor:
                top.add(m)
            base = at - overlaps.l1_base.get(m, 0)
        schedules[m] = laid
        out.ahead[m], out.issuer[n] = ops, m
        if base:
            out.l1_base[m] = base
            if m in overlaps.deferred:
                out.l1_base.update({j: base for j in moved})
    return out, schedules
