"""The compile-time DMA plan of a tiled layer: every transfer of its tile loop, in issue order,
with addresses and lengths worked out by the compiler (the runtime's ``deeploy_run_tiled`` works
the same out per tile from the tables). Codegen (``codegen/tiled.py``) renders a plan as straight-
line code, so the tile loop does nothing at run time but program the DMA, wait and fork.

The plan follows the runtime's loop (``TargetLibraries/Siracusa/src/deeploy_tiling.c``): an input
is loaded only when its box differs from the one its current slot holds; double-buffered, the
first tile's inputs are loaded before the loop and tile i+1's inputs (two slots) are issued
before tile i's fork, outputs alternate between their two slots and their write-back is only
waited for before the slot is reused; single-buffered, every tile waits for its write-back.

A copy moves a box between the C-contiguous home view and a dense L1 slot as the cluster DMA's
commands (``deeploy_dma_copy_3d``: rows of contiguous bytes and planes of rows; contiguous axes
merged, further levels unrolled into more copies). Plans cover layers the cluster forks on,
without L3 staging or resident operands."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from Deeploy.runtime.abi import TILE_MAX_GEOMETRIES
from Deeploy.tiling.schedule import OperandSlots, TileSchedule
from Deeploy.tiling.spec import Operand

if TYPE_CHECKING:
    from Deeploy.binding import Layer

__all__ = ["Copy", "PlanTile", "DmaPlan", "box_copies", "dma_plan", "first_loads", "with_handoff", "plannable",
           "STRAIGHT_TILES", "loop_kind"]

# the most L1 tiles a layer's loop is written out for (code grows with them; more run from tables)
STRAIGHT_TILES = 8


@dataclass(frozen=True)
class Copy:
    """One 3-D copy of operand ``operand``'s slot ``slot`` (``load``: home -> L1): ``planes`` x
    ``rows`` x ``row`` bytes; ``home``/``dense``: byte offsets of its first row in the home view and
    the slot; ``(home_row, dense_row)`` and ``(home_plane, dense_plane)``: strides in bytes."""

    operand: int
    slot: int
    load: bool
    home: int
    dense: int
    row: int
    rows: int
    home_row: int
    dense_row: int
    planes: int
    home_plane: int
    dense_plane: int

    @property
    def bytes(self) -> int:
        return self.row * self.rows * self.planes

    @property
    def shape(self) -> tuple[int, int, int, int, int, int, int]:
        """(row, rows, destination row stride, source row stride, planes, destination plane stride,
        source plane stride): the DMA command's shape in its direction."""
        rows, planes = (self.dense_row, self.home_row), (self.dense_plane, self.home_plane)
        if not self.load:
            rows, planes = rows[::-1], planes[::-1]
        return (self.row, self.rows, *rows, self.planes, *planes)


@dataclass(frozen=True)
class PlanTile:
    """One L1 tile: the loads issued in its input phase (``wait``: then wait for the loads in
    flight), the output slots whose write-back it waits for, each operand's slot, the next tile's
    prefetch (before the fork), its write-back, and (single-buffered) the wait for all of it."""

    cls: int
    loads: tuple[Copy, ...]
    wait: bool
    reuse: tuple[tuple[int, int], ...]     # (operand, slot) of outputs whose last write-back it waits for
    slots: tuple[int, ...]
    prefetch: tuple[Copy, ...]
    stores: tuple[Copy, ...]
    wait_all: bool


@dataclass(frozen=True)
class DmaPlan:
    """The loads issued before the first tile (double-buffered: the first tile's), then the tiles."""

    before: tuple[Copy, ...]
    tiles: tuple[PlanTile, ...]

    @property
    def copies(self) -> tuple[Copy, ...]:
        """Every copy in issue order."""
        return self.before + tuple(c for t in self.tiles for c in t.loads + t.prefetch + t.stores)

    @property
    def shapes(self) -> tuple[tuple[int, ...], ...]:
        """The distinct shapes of its copies, in order of first use."""
        return tuple(dict.fromkeys(c.shape for c in self.copies))


def plannable(sched: TileSchedule) -> bool:
    """Whether the layer's tiles fit a plan: one L2 tile (nothing staged) and a slot per operand."""
    return sched.l2 is None and all(s.copies for s in sched.slots)


def _box(op: Operand, ranges: dict[str, tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    return tuple(a.range(*ranges[a.dim]) if a.dim is not None else (0, a.size) for a in op.axes)


def box_copies(s: OperandSlots, slot: int, box) -> tuple[Copy, ...]:
    """The copies moving ``box`` of operand ``s`` between its home view and L1 slot ``slot``:
    axes of extent 1 drop out, axes contiguous with the next inner one merge; the innermost run is
    the row, the next two levels rows and planes, further levels one copy each."""
    op = s.operand
    if any(hi <= lo for lo, hi in box):
        return ()
    levels: list[list[int]] = []        # [count, home stride, dense stride], innermost first
    vstride = dstride = op.elem_bytes
    offset = 0
    for (lo, hi), a in zip(reversed(box), reversed(op.axes)):
        ext = hi - lo
        offset += lo * vstride
        if ext > 1:
            if levels and levels[-1][0] * levels[-1][1] == vstride:
                levels[-1][0] *= ext
            else:
                levels.append([ext, vstride, dstride])
            dstride *= ext
        vstride *= a.size
    row = op.elem_bytes
    if levels and levels[0][1] == op.elem_bytes:
        row *= levels.pop(0)[0]
    rows, hr, dr = levels[0] if levels else (1, row, row)
    planes, hp, dp = levels[1] if len(levels) > 1 else (1, 0, 0)
    outer = levels[2:]
    out = []
    for idx in itertools.product(*(range(c) for c, _, _ in reversed(outer))):
        h = offset + sum(i * l[1] for i, l in zip(idx, reversed(outer)))
        d = sum(i * l[2] for i, l in zip(idx, reversed(outer)))
        out.append(Copy(s.index, slot, not s.output, h, d, row, rows, hr, dr, planes, hp, dp))
    return tuple(out)


def first_loads(sched: TileSchedule, operands) -> tuple[Copy, ...]:
    """The copies loading the first tile of the input ``operands`` (indices) into their first slot."""
    ranges = next(sched.tiles())[2]
    return tuple(c for o in operands for c in box_copies(sched.slots[o], 0, _box(sched.slots[o].operand, ranges)))


def with_handoff(plan: DmaPlan, copies: tuple[Copy, ...]) -> DmaPlan:
    """``plan`` issuing ``copies`` (the next layer's ``first_loads``) with its first tile's loads,
    before that tile waits for its own (issued while the DMA moves them; the layer's final wait for
    all its transfers covers them)."""
    first = plan.tiles[0]
    return replace(plan, tiles=(replace(first, loads=first.loads + copies),) + plan.tiles[1:])


def dma_plan(sched: TileSchedule, preloaded=()) -> DmaPlan:
    """The plan of a ``plannable`` layer's tiles, in execution order; the first tile of the inputs
    ``preloaded`` (operand indices) is already in their first slot (``first_loads``, issued by the
    layer before)."""
    slots, db = sched.slots, sched.double_buffer
    cur = [0] * len(slots)
    held: list[list] = [[None, None] for _ in slots]      # the box each slot holds
    pending: set[tuple[int, int]] = set()                 # output slots with a write-back in flight
    tiles = list(sched.tiles())
    for o in preloaded:
        held[o][0] = _box(slots[o].operand, tiles[0][2])

    def load(s: OperandSlots, box, nxt: bool) -> tuple[Copy, ...]:
        o = s.index
        if held[o][cur[o]] == box:
            return ()
        slot = 1 - cur[o] if nxt and s.copies > 1 else cur[o]
        cur[o] = slot
        held[o][slot] = box
        if s.copies < 2:
            held[o][1 - slot] = None
        return box_copies(s, slot, box)

    def loads(ranges, which: str) -> tuple[Copy, ...]:
        out: tuple[Copy, ...] = ()
        for s in slots:
            if s.output or (which == "prefetch" and s.copies < 2) or (which == "single" and s.copies > 1):
                continue
            out += load(s, _box(s.operand, ranges), which == "prefetch")
        return out

    plan = []
    before = ready = loads(tiles[0][2], "all") if db else ()
    for q, (_, cls, ranges) in enumerate(tiles):
        now = loads(ranges, "single" if db else "all")
        wait = bool(ready or now)
        reuse = []
        for s in slots:
            if s.output:
                cur[s.index] = 1 - cur[s.index] if s.copies > 1 else 0
                if (s.index, cur[s.index]) in pending:
                    reuse.append((s.index, cur[s.index]))
                    pending.discard((s.index, cur[s.index]))
        bound = tuple(cur)
        ready = loads(tiles[q + 1][2], "prefetch") if db and q + 1 < len(tiles) else ()
        stores: tuple[Copy, ...] = ()
        for s in slots:
            if s.output:
                c = box_copies(s, cur[s.index], _box(s.operand, ranges))
                stores += c
                if c:
                    pending.add((s.index, cur[s.index]))
        if not db:
            pending.clear()
        plan.append(PlanTile(cls, now, wait, tuple(reuse), bound, ready, stores, not db))
    return DmaPlan(before, tuple(plan))


def loop_kind(layer: Layer, sched: TileSchedule, writable_ops: bool = False) -> str:
    """How the layer's tiles run: "code" (straight-line, at most ``STRAIGHT_TILES`` tiles) or
    "plan" (``deeploy_run_planned``) when a plan (``dma_plan``) covers it (fixed homes, not a rolled
    body's; no data mover; a plannable schedule whose copies take at most ``TILE_MAX_GEOMETRIES``
    shapes; an engine with a job queue straight-line only: more tiles overlap their jobs in the
    tables' deferred loop), else "tables" (``deeploy_run_tiled``). Codegen renders this loop; the
    tiler prices it."""
    if (writable_ops or layer.engine.data_mover or not plannable(sched)
            or (layer.engine.tile_sync and sched.num_tiles > STRAIGHT_TILES)):
        return "tables"
    if sched.num_tiles <= STRAIGHT_TILES:
        return "code"
    return "plan" if len(dma_plan(sched).shapes) <= TILE_MAX_GEOMETRIES else "tables"
