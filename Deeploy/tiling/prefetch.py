"""Cross-layer prefetch: while a tiled layer computes its last tile, the cluster DMA already loads
the first tile of the next layer's inputs that do not depend on it (constants, graph inputs and
activations written before it), so the next layer starts with them in L1 instead of loading them.
The next layer's L1 base (``l1_base``) is chosen, before the memory plan records the tiles, so
that those first slots lie outside the running layer's L1 tiles and within ``--l1``; where no base
does, the pair keeps its own loads. Both layers run from compile-time DMA plans (``dma_plan``:
straight-line code or a planned loop) on the cluster, outside regions and the layers around an
NPU layer's jobs in flight (``overlap.py``). Codegen (``codegen/tiled.py``) issues the copies
(``first_loads``) before a tile's fork (``handoff_tile``: double-buffered the first, single-buffered
the last); the layer's final wait for all its transfers covers them, so the next layer finds them
complete."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from Deeploy.binding import Layer
from Deeploy.memory.planner import MemoryPlan
from Deeploy.runtime.abi import TILE_MAX_GEOMETRIES, TILE_MAX_OPERANDS
from Deeploy.tiling.dma_plan import dma_plan, first_loads, handoff_tile, loop_kind
from Deeploy.tiling.schedule import TileSchedule

__all__ = ["Prefetches", "plan_prefetches"]

_ALIGN = 16     # a layer's L1 base: a multiple of this and of the level's alignment
_MAX_COPIES = 255   # the copies one tile of a planned loop issues before its fork (TILE_STEP.prefetch)


@dataclass(frozen=True)
class Prefetches:
    """``ahead``: layer -> the operands (indices) whose first tile the layer before it
    (``issuer``) loads; ``issuer``: that layer -> the layer it loads them for; ``l1_base``: the L1
    offset of every layer moved up to keep those slots clear of the layer before."""

    ahead: dict[int, tuple[int, ...]] = field(default_factory=dict)
    issuer: dict[int, int] = field(default_factory=dict)
    l1_base: dict[int, int] = field(default_factory=dict)

    def l1_size(self, schedules: dict[int, TileSchedule]) -> int:
        return max([0] + [self.l1_base.get(k, 0) + s.l1_bytes for k, s in schedules.items()])


def _independent(layers: list[Layer], schedules: dict[int, TileSchedule], n: int, m: int,
                 producer: dict[str, int]) -> tuple[int, ...]:
    """Layer ``m``'s inputs (operand indices) that no layer from ``n`` on writes, with a first tile."""
    out = []
    for s in schedules[m].slots:
        if not s.output and s.copies and producer.get(s.operand.tensor, -1) < n \
                and first_loads(schedules[m], (s.index,)):
            out.append(s.index)
    return tuple(out)


def _base(lo_hi: list[tuple[int, int]], below: tuple[int, int], size: int, l1: int, align: int) -> int | None:
    """The least base (a multiple of ``align``) putting every interval ``lo_hi`` outside ``below``
    = [a, b) with ``size`` bytes within ``l1``, or None."""
    a, b = below
    cands = {0} | {-(-(b - lo) // align) * align for lo, _ in lo_hi} | {(a - hi) // align * align for _, hi in lo_hi}
    for base in sorted(c for c in cands if c >= 0):
        if base + size <= l1 and all(base + hi <= a or base + lo >= b for lo, hi in lo_hi):
            return base
    return None


def plan_prefetches(layers: list[Layer], schedules: dict[int, TileSchedule], plan: MemoryPlan, l1: int,
                    skip: set[int], alignment: int = 4) -> Prefetches:
    """Which consecutive tiled layers (none of ``skip``; the layers between them views sharing
    their input's storage in ``plan``) hand the next one's independent first-tile inputs over, and
    the L1 bases that keeps them clear (see the module docstring)."""
    align = math.lcm(_ALIGN, alignment)
    producer = {o: k for k, layer in enumerate(layers) for o in layer.node.outputs if o}
    out = Prefetches()
    order = sorted(schedules)
    for n, m in zip(order, order[1:]):
        between = layers[n + 1:m]
        if (n in skip or m in skip or any(not (l.node.inputs and l.node.inputs[0]) or
                                          plan.placements[l.node.outputs[0]] != plan.placements[l.node.inputs[0]]
                                          for l in between)
                or not all(layers[k].engine.forked and loop_kind(layers[k], schedules[k]) != "tables" for k in (n, m))):
            continue
        ops = _independent(layers, schedules, n, m, producer)
        copies, own = first_loads(schedules[m], ops), dma_plan(schedules[n])
        if not ops or len(own.tiles[handoff_tile(schedules[n])].prefetch) + len(copies) > _MAX_COPIES or \
                (loop_kind(layers[n], schedules[n]) == "plan"      # a geometry and a handle of their own
                 and (len(set(own.shapes) | {c.shape for c in copies}) > TILE_MAX_GEOMETRIES
                      or len(schedules[n].slots) >= TILE_MAX_OPERANDS)):
            continue
        slots = [schedules[m].slots[o] for o in ops]
        at = out.l1_base.get(n, 0)
        base = _base([(s.l1_offsets[0], s.l1_offsets[0] + s.slot_bytes) for s in slots],
                     (at, at + schedules[n].l1_bytes), schedules[m].l1_bytes, l1, align)
        if base is None:
            continue
        out.ahead[m], out.issuer[n] = ops, m
        if base:
            out.l1_base[m] = base
    return out
