"""Bytes a tiled layer moves per memory level, replayed from its tile schedule the way the tile
loop of the runtime (``TargetLibraries/Siracusa/src/deeploy_tiling.c``) issues its DMA transfers:

- per L2 tile, an operand living in L3 is staged into L2 when its box over the L2 tile differs
  from the box staged last (inputs L3 -> L2), and a staged output is written back after every L2
  tile (L2 -> L3): bytes of the level the data come from, ``staging.source`` (L3);
- per L1 tile, an input is loaded when its box differs from the one its slot holds (or when its
  L2 staging buffer was refilled), and every output tile is written back: bytes of the tiled
  level's source, ``tiles.source`` (L2).

An empty box moves nothing. The first tile of inputs the layer before loads (``tiling/prefetch.py``)
counts with that layer, which issues it. Before its tiles, the loop copies what it reads per tile into L1 from
the level of the tiles' source (``deeploy_abi.h``): the tables of ``deeploy_run_tiled`` (the
layer, its per-dim arrays, its operands and their axes), a planned loop's copy shapes and slot
pointers; straight-line code (``codegen/tiled.py``) none. The result is independent of any timing: it follows from the schedule alone."""

from __future__ import annotations

import itertools
import math

from Deeploy.runtime.abi import (TILE_AXIS, TILE_COPY, TILE_GEOMETRY, TILE_OPERAND, TILE_PLAN_L1_BYTES, TILE_STEP,
                                 TILED_LAYER)
from Deeploy.tiling.dma_plan import Copy, dma_plan, with_handoff
from Deeploy.tiling.schedule import TileSchedule
from Deeploy.tiling.spec import Operand, tile_ranges

__all__ = ["schedule_traffic", "table_bytes"]


def _box(op: Operand, ranges: dict[str, tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    return tuple(a.range(*ranges[a.dim]) if a.dim is not None else (0, a.size) for a in op.axes)


def _bytes(op: Operand, box) -> int:
    return op.elem_bytes * math.prod(max(0, hi - lo) for lo, hi in box)


def _l2_tiles(sched: TileSchedule) -> list[dict[str, tuple[int, int]]]:
    """The L2 tiles' dim ranges in execution order (as ``TileSchedule.tiles`` enumerates them)."""
    sizes = {d.name: d.size for d in sched.spec.dims}
    l2 = dict(zip(sched.dims, sched.l2_tile))
    outer = [tile_ranges(sizes[d], l2[d]) for d in sched.order]
    return [{d: outer[k][j] for k, (d, j) in enumerate(zip(sched.order, js))}
            for js in itertools.product(*(range(len(o)) for o in outer))]


def table_bytes(sched: TileSchedule, loop: str = "tables", preloaded=(), handoff: tuple[Copy, ...] = ()) -> int:
    """Bytes of the layer's tables its loop (``tiling/dma_plan.loop_kind``) copies into L1: for
    "tables" the layer; per dim its order (1 byte), size, L2 and L1 tile, class radix and
    class-array pointer (4 bytes each); the operands and their axes. For "plan" its copy shapes,
    two slot pointers per operand and, up to ``TILE_PLAN_L1_BYTES``, its steps and copies
    (``preloaded``, ``handoff``: as ``schedule_traffic``)."""
    if loop == "code":
        return 0
    if loop == "plan":
        plan = with_handoff(dma_plan(sched, preloaded), handoff)
        steps = len(plan.tiles) * TILE_STEP.size() + len(plan.copies) * TILE_COPY.size()
        return (len(plan.shapes) * TILE_GEOMETRY.size() + 2 * 4 * len(sched.slots)
                + (steps if steps <= TILE_PLAN_L1_BYTES else 0))
    dims = len(sched.dims)
    return (TILED_LAYER.size() + dims * (1 + 5 * 4) + len(sched.slots) * TILE_OPERAND.size()
            + sum(len(s.operand.axes) for s in sched.slots) * TILE_AXIS.size())


def schedule_traffic(sched: TileSchedule, source: str = "L2", staging_source: str = "L3",
                     loop: str = "tables", preloaded=(), handoff: tuple[Copy, ...] = ()) -> dict[str, int]:
    """Bytes moved between ``source`` and the tiled level (L1 tiles) and between
    ``staging_source`` and ``source`` (L2 tiles of operands in L3), over the whole layer, with the
    tables its ``loop`` copies first; ``preloaded``: inputs whose first tile the layer before loads,
    ``handoff``: the next layer's first loads this layer issues (``tiling/prefetch.py``)."""
    slots = sched.slots
    l2_spans = _l2_tiles(sched)
    staged_box: dict[int, tuple] = {}
    first = next(sched.tiles())[2]
    held: dict[int, tuple] = {k: _box(slots[k].operand, first) for k in preloaded}
    near, far = table_bytes(sched, loop, preloaded, handoff) + sum(c.bytes for c in handoff), 0
    current = None
    for j2, _cls, ranges in sched.tiles():
        if j2 != current:
            if current is not None:      # staged outputs of the finished L2 tile go back to L3
                far += sum(_bytes(s.operand, staged_box[k]) for k, s in enumerate(slots) if s.in_l3 and s.output)
            current = j2
            for k, s in enumerate(slots):
                if not s.in_l3:
                    continue
                box = _box(s.operand, l2_spans[j2])
                if s.output:
                    staged_box[k] = box
                elif staged_box.get(k) != box:
                    staged_box[k] = box
                    held.pop(k, None)     # the L1 slots no longer hold what the staging buffer has
                    far += _bytes(s.operand, box)
        for k, s in enumerate(slots):
            box = _box(s.operand, ranges)
            if s.output:
                near += _bytes(s.operand, box)
            elif held.get(k) != box:
                held[k] = box
                near += _bytes(s.operand, box)
    if current is not None:
        far += sum(_bytes(s.operand, staged_box[k]) for k, s in enumerate(slots) if s.in_l3 and s.output)
    out = {source: near}
    if any(s.in_l3 for s in slots):
        out[staging_source] = far
    return out
