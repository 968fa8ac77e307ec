"""Cost terms of the tiling model, precomputed per candidate tile size: DMA time and bytes of
every operand, compute cycles, L1 bytes per buffer, candidate tile sizes per dim."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from Deeploy.memory.planner import align
from Deeploy.tiling.params import TilingParams
from Deeploy.tiling.spec import AxisStats, LayerSpec, Operand, axis_stats, candidates, dma_layout

__all__ = ["cdiv", "Row", "ROW_FIELDS", "dma_time", "operand_row", "BufferCosts", "tile_classes", "compute_cycles",
           "compute_grid", "dim_candidates"]


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Row:
    tile_shape: tuple[int, ...]
    tile_bytes: int
    sweep: int
    first: int
    last: int
    transfers: int
    moved: int
    issue: int


ROW_FIELDS = ("tile_bytes", "sweep", "first", "last", "transfers", "moved", "issue")


def dma_time(nbytes, transfers, run_bytes, setup, params: TilingParams):
    """DMA engine cycles of ``transfers`` transfers moving ``nbytes`` in contiguous rows of
    ``run_bytes`` (the platform's DMA timing: per transfer ``setup``, per row ``ceil(row_bytes /
    bandwidth) + row_cycles``; rows of shorter remainder tiles counted by bytes). Works on ints
    and numpy arrays."""
    bw = params.dma_bytes_per_cycle
    run = np.maximum(run_bytes, 1)
    rows = np.maximum(transfers, -(-nbytes // run))
    pad = -(-run // bw) * bw - run                # bytes a row's last beat leaves unused
    beats = -(-(nbytes + rows * pad) // bw)
    return np.where(np.asarray(nbytes) > 0, beats + rows * params.dma_row_cycles + transfers * setup, 0)


def operand_row(op: Operand, stats: Sequence[AxisStats], params: TilingParams) -> Row:
    ext = tuple(s.max for s in stats)
    e = op.elem_bytes
    tile_bytes = align(e * math.prod(ext), params.alignment)
    cmds, strided, run = dma_layout(tuple(op.shape), ext, params.dma_2d)
    setup, issue = (cmds * c for c in params.command_cycles(strided))
    transfers = math.prod(s.nonempty for s in stats)
    moved = e * math.prod(s.sum for s in stats)
    first_b, last_b = e * math.prod(s.first for s in stats), e * math.prod(s.last for s in stats)
    run_b = e * run
    return Row(ext, tile_bytes, int(dma_time(moved, transfers, run_b, setup, params)),
                int(dma_time(first_b, 1, run_b, setup, params)), int(dma_time(last_b, 1, run_b, setup, params)),
                transfers, moved, transfers * issue)


class BufferCosts:
    """One operand over the candidate tiles of the dims it depends on: every Row field as an
    array indexed by those dims' candidate indices (``table``)."""

    def __init__(self, op: Operand, spec: LayerSpec, cands: Mapping[str, tuple[int, ...]], params: TilingParams):
        self.op, self.params = op, params
        self.shape = op.shape
        self.deps = tuple(d for d in spec.dim_names if d in op.dims)
        sizes = {d.name: d.size for d in spec.dims}
        self.per_axis = []
        for a in op.axes:
            if a.dim is None:
                self.per_axis.append((axis_stats(a, 0, 1),))
            else:
                self.per_axis.append(tuple(axis_stats(a, sizes[a.dim], t) for t in cands[a.dim]))
        self.axis_dep = [self.deps.index(a.dim) if a.dim is not None else None for a in op.axes]
        grid = tuple(len(cands[d]) for d in self.deps)

        def product(field: str) -> np.ndarray:
            out = np.ones(grid, dtype=np.int64)
            for stats, j in zip(self.per_axis, self.axis_dep):
                values = np.asarray([getattr(st, field) for st in stats], dtype=np.int64)
                if j is None:
                    out = out * values[0]
                else:
                    out = out * values.reshape([-1 if k == j else 1 for k in range(len(grid))])
            return out

        e, a = op.elem_bytes, params.alignment
        setup = np.zeros(grid, dtype=np.int64)
        issue = np.zeros(grid, dtype=np.int64)
        run = np.zeros(grid, dtype=np.int64)
        for combo in itertools.product(*(range(k) for k in grid)):
            setup[combo], issue[combo], run[combo] = self._layout(combo)
        tile_bytes = e * product("max")
        transfers = product("nonempty")
        moved = e * product("sum")
        first_b, last_b = e * product("first"), e * product("last")
        run = e * run
        self.table = {
            "tile_bytes": -(-tile_bytes // a) * a,
            "sweep": dma_time(moved, transfers, run, setup, params),
            "first": dma_time(first_b, 1, run, setup, params),
            "last": dma_time(last_b, 1, run, setup, params),
            "transfers": transfers,
            "moved": moved,
            "issue": transfers * issue,
        }

    def _extents(self, combo: Sequence[int]) -> tuple[int, ...]:
        return tuple(st[0 if j is None else combo[j]].max for st, j in zip(self.per_axis, self.axis_dep))

    def _layout(self, combo: Sequence[int]) -> tuple[int, int, int]:
        """(DMA set-up cycles, core issue cycles, contiguous run in elements) of one transfer of
        the largest tile."""
        cmds, strided, run = dma_layout(self.shape, self._extents(combo), self.params.dma_2d)
        setup, issue = self.params.command_cycles(strided)
        return cmds * setup, cmds * issue, run

    def row(self, choice: Mapping[str, int]) -> Row:
        combo = tuple(choice[d] for d in self.deps)
        stats = [st[0 if j is None else combo[j]] for st, j in zip(self.per_axis, self.axis_dep)]
        return operand_row(self.op, stats, self.params)


def tile_classes(size: int, t: int) -> list[tuple[int, int]]:
    n = cdiv(size, t)
    last = size - (n - 1) * t
    return [(t, n)] if last == t else [(t, n - 1), (last, 1)]


def _engine_cycles(spec: LayerSpec, tiles: Mapping[str, int]) -> int:
    """Sum over tiles of ``spec.tile_cycles`` (an engine's own cycle model), by tile classes."""
    total = 0
    for combo in itertools.product(*(tile_classes(d.size, tiles[d.name]) for d in spec.dims)):
        count = math.prod(c for _, c in combo)
        total += count * spec.tile_cycles({d.name: e for d, (e, _) in zip(spec.dims, combo)})
    return total


def compute_cycles(spec: LayerSpec, tiles: Mapping[str, int], params: TilingParams) -> int:
    """Sum over tiles of the slowest core's share of the tile's ops (see module docstring), or
    of the tiles' cycles in the engine's own model (``spec.tile_cycles``)."""
    if spec.ops == 0:
        return 0
    if spec.tile_cycles is not None:
        return _engine_cycles(spec, tiles)
    pdims = [d for d in spec.dim_names if any(d in alt for alt in spec.parallel)]
    sizes = {d.name: d.size for d in spec.dims}
    cores = params.cores
    if not pdims:
        return math.ceil(cores * spec.ops / params.ops_rate(spec.op) - 1e-9)
    total = 0
    for combo in itertools.product(*(tile_classes(sizes[d], tiles[d]) for d in pdims)):
        ext = {d: e for d, (e, _) in zip(pdims, combo)}
        count = math.prod(c for _, c in combo)
        alt = spec.parallel[-1]
        for candidate in spec.parallel:
            if math.prod(ext[d] for d in candidate) >= cores:
                alt = candidate
                break
        units = math.prod(ext[d] for d in alt)
        rest = math.prod(ext[d] for d in pdims if d not in alt)
        total += count * cdiv(units, cores) * rest
    volume = math.prod(sizes[d] for d in pdims)
    return math.ceil(cores * spec.ops * total / (params.ops_rate(spec.op) * volume) - 1e-9)


def compute_grid(spec: LayerSpec, cands: Mapping[str, tuple[int, ...]], params: TilingParams,
                  index: Mapping[str, np.ndarray]) -> np.ndarray:
    """``compute_cycles`` of every grid point, vectorised: per dim the full tiles and the
    remainder tile are the two extent classes, summed over the 2^|P| class combinations."""
    points = len(next(iter(index.values()))) if index else 1
    if spec.ops == 0:
        return np.zeros(points, dtype=np.int64)
    if spec.tile_cycles is not None:
        return np.array([_engine_cycles(spec, {d.name: int(np.asarray(cands[d.name])[index[d.name][k]])
                                               if d.name in index else d.size for d in spec.dims})
                         for k in range(points)], dtype=np.int64)
    pdims = [d for d in spec.dim_names if any(d in alt for alt in spec.parallel)]
    cores = params.cores
    if not pdims:
        return np.full(points, math.ceil(cores * spec.ops / params.ops_rate(spec.op) - 1e-9), dtype=np.int64)
    sizes = {d.name: d.size for d in spec.dims}
    classes = {}
    for d in pdims:
        t = np.asarray(cands[d], dtype=np.int64)[index[d]]
        n = -(-sizes[d] // t)
        last = sizes[d] - (n - 1) * t
        even = last == t
        classes[d] = ((t, np.where(even, n, n - 1)), (last, np.where(even, 0, 1)))
    total = np.zeros(points, dtype=np.int64)
    for pick in itertools.product((0, 1), repeat=len(pdims)):
        ext = {d: classes[d][k][0] for d, k in zip(pdims, pick)}
        count = np.ones(points, dtype=np.int64)
        for d, k in zip(pdims, pick):
            count = count * classes[d][k][1]
        chosen = np.zeros(points, dtype=np.int64)
        decided = np.zeros(points, dtype=bool)
        for alt in spec.parallel:
            units = np.prod(np.stack([ext[d] for d in alt]), axis=0) if alt else np.ones(points, np.int64)
            rest = np.prod(np.stack([ext[d] for d in pdims if d not in alt] or [np.ones(points, np.int64)]), axis=0)
            value = -(-units // cores) * rest
            take = ~decided & ((units >= cores) | (alt is spec.parallel[-1]))
            chosen = np.where(take, value, chosen)
            decided |= take
        total += count * chosen
    volume = math.prod(sizes[d] for d in pdims)
    return np.ceil(cores * spec.ops * total.astype(np.float64) / (params.ops_rate(spec.op) * volume) - 1e-9).astype(np.int64)


def dim_candidates(spec: LayerSpec, params: TilingParams) -> dict[str, tuple[int, ...]]:
    """Candidates per dim, thinned (the dim with most first) until the grid of combinations has
    at most ``params.max_grid`` points."""
    caps = {d.name: params.max_candidates for d in spec.dims}
    while True:
        cands = {d.name: candidates(d, caps[d.name]) for d in spec.dims}
        if math.prod(len(c) for c in cands.values()) <= params.max_grid:
            return cands
        worst = max(spec.dim_names, key=lambda d: (len(cands[d]), d))
        caps[worst] = max(2, int(len(cands[worst]) * 0.8))
