"""The tiling model of one layer, solved with CP-SAT, and its solution.

The cost model (exact for the candidate tile sizes; halos, clipping at the borders and
remainder tiles included; everything computed from the spec's AxisMaps):

  t_d, n_d   tile size and tile count of dim d, t_d among ``spec.candidates`` (the most balanced
             size for every tile count, largest first; index 0 = the whole dim).
  bytes_b    the largest tile of operand b, aligned to ``params.alignment``; L1 holds one copy,
             two when double buffered and b's tile changes from tile to tile (a tile that never
             changes is loaded once), one when held (below).
  L1         sum_b copies_b * bytes_b + kernel scratch <= capacity.
  sweep_b    DMA engine cycles to move every distinct tile of b once, as the platform's DMA
             timing counts them: per command ``dma_setup``, per contiguous row
             ``ceil(row_bytes / bandwidth) + dma_row_cycles`` (1-D or 2-D commands and the row
             length from the largest tile's layout in memory); issue_b: core cycles storing the
             commands (3 words for 1-D, 5 for 2-D).
  DMA_b      sweep_b * prod n_d over the dims d that b does not depend on and that enclose, in
             the chosen loop order, a tiled dim of b (b is fetched again each time such a loop
             advances; exact for lexicographic tile loops). DMA_in / DMA_out sum them by role.
  first/last DMA cycles of the first input tiles / last output tiles (pipeline fill, drain).
  compute    sum over tiles of the slowest core's share: the tile's ops / ops_per_cycle scaled
             by ceil(units / cores) / (units / cores), units = the tile's extent along the dims
             the kernel splits over the cores (``spec.parallel``).
  overhead   T * per_tile_cycles(T), T = prod_d n_d tiles (fork, join, the tile loop the layer
             gets: straight-line code, a planned loop or the table loop, by T; and the kernel
             call's set-up where no kernel formula holds it), plus the issue cycles of all
             transfers (core time, not hidden).
  exposed    single buffering: DMA_in + DMA_out (no overlap); double buffering: first + last
             (not hidden) + max(0, rest - compute - overhead), rest = DMA_in - first + DMA_out -
             last for one DMA queue (the platform), max of the two with ``dma_full_duplex``;
             held (double buffering with the changing inputs that do not depend on the loop
             order's innermost tiled dim in one copy: they stay from a tile to the next and are
             loaded anew, after the tile before, when an outer loop advances): their DMA after
             their first tile is exposed too and leaves ``rest``.
  cycles     compute + overhead + exposed; ties broken towards larger tiles, then the first
             loop order.

The CP-SAT model. Every option (a combination of candidate tile sizes of the free dims, a loop
order and the buffering: double, held (where an input is held) and, with ``buffering="auto"``,
single) has exact footprint and cycles
from the terms above; those of all options are computed together, vectorised over the grid of
candidate combinations, from per-operand tables over the candidates of the dims each operand
depends on. Options beaten by another in both footprint and cycles are dropped (exact
dominance: whatever the capacity, an optimal tiling survives; typically tens remain). The model:
  z_k        option k is chosen; exactly one.
  t_d, n_d   integer tile size and tile count per free dim; order_o and double_buffered
             literals: linear in z (what the chosen option makes them).
  tile_bytes_b, second_copy_b   per operand buffer, linear in z;
  L1:        sum_b (tile_bytes_b + second_copy_b) + scratch <= capacity;
  objective: minimise cycles * width + tie-break (linear in z); the footprint model minimises
             L1 instead (the smallest capacity that fits, for the error message).
Products of tile counts (T, DMA re-fetch factors, compute classes) and the max() of the overlap
are thus precomputed per option. A first version stated them with CP-SAT product and max
constraints over the tile-count variables: the objective is flat (compute dominates and barely
varies), so single-worker CP-SAT had to enumerate, 1-5 s per convolution layer; with options it
takes milliseconds and the result is the same (the tests compare it with brute force).

Deterministic: one worker, fixed seed, fixed search order (options by cost), a
deterministic-time limit (the wall-clock limit only guards against pathological models) and the
tie-break. ``_Problem.evaluate`` recomputes every reported number of the chosen tiling in plain
Python; the solver checks it against the CP-SAT model's values.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Mapping, Sequence

import numpy as np

from Deeploy.errors import TilingError
from Deeploy.tiling.costs import ROW_FIELDS, BufferCosts, cdiv, compute_cycles, compute_grid, dim_candidates
from Deeploy.tiling.params import TilingParams
from Deeploy.tiling.solution import BufferTiling, TilingSolution
from Deeploy.tiling.spec import INPUT, LayerSpec, scratch_bytes

if TYPE_CHECKING:   # loaded when a model is built
    from Deeploy.tiling import cpsat

__all__ = ["BufferTiling", "TilingSolution", "solve_spec", "evaluate", "min_footprint", "clear_cache",
           "cache_info"]


SINGLE, DOUBLE, HELD = 0, 1, 2     # buffering modes of an option


def _cycles(p: TilingParams, compute, overhead, dma_in, dma_out, first, last, held, mode: int):
    """compute + overhead + exposed DMA of buffering ``mode`` (see the module docstring); ``held``:
    DMA cycles of the held inputs after their first tile, exposed. Ints or numpy arrays."""
    if mode == SINGLE:
        return compute + overhead + dma_in + dma_out
    rest_in, rest_out = dma_in - first - held, dma_out - last
    rest = np.maximum(rest_in, rest_out) if p.dma_full_duplex else rest_in + rest_out
    return compute + overhead + first + last + held + np.maximum(0, rest - compute - overhead)


class _Problem:
    """Everything about one (spec, params) the model and the evaluation share: candidates, the
    operand tables, and every cost term as an array over the grid of the free dims' choices."""

    def __init__(self, spec: LayerSpec, params: TilingParams):
        self.spec, self.params = spec, params
        self.cands = dim_candidates(spec, params)
        self.counts = {d.name: [cdiv(d.size, t) for t in self.cands[d.name]] for d in spec.dims}
        self.buffers = [BufferCosts(o, spec, self.cands, params) for o in spec.operands if o.nbytes > 0]
        self.free = [d for d in spec.dim_names if len(self.cands[d]) > 1]
        self._grid()

    # -- every term over the grid ------------------------------------------------------------
    def _grid(self) -> None:
        spec, p = self.spec, self.params
        shape = tuple(len(self.cands[d]) for d in self.free)
        points = math.prod(shape)
        flat = np.indices(shape).reshape(len(shape), points) if shape else np.zeros((0, 1), dtype=np.int64)
        self.points = points
        self.index = {d: (flat[self.free.index(d)] if d in self.free else np.zeros(points, dtype=np.int64))
                      for d in spec.dim_names}
        n = {d: np.asarray(self.counts[d], dtype=np.int64)[self.index[d]] for d in spec.dim_names}
        tiled = {d: n[d] > 1 for d in spec.dim_names}
        self.tiles = np.prod(np.stack([n[d] for d in spec.dim_names]), axis=0) if spec.dims else np.ones(points, np.int64)
        self.tiebreak = sum((self.index[d] for d in self.free), np.zeros(points, dtype=np.int64))
        if isinstance(spec.scratch, int):
            self.scratch = np.full(points, spec.scratch, dtype=np.int64)
        else:
            self.scratch = np.array([spec.scratch.at({d: self.cands[d][int(self.index[d][k])] for d in spec.dim_names})
                                     for k in range(points)], dtype=np.int64)
        single = self.scratch.copy()
        extra = np.zeros(points, dtype=np.int64)
        first = np.zeros(points, dtype=np.int64)
        last = np.zeros(points, dtype=np.int64)
        self.dma = {o: [np.zeros(points, dtype=np.int64), np.zeros(points, dtype=np.int64)] for o in spec.orders()}
        self.issue = {o: np.zeros(points, dtype=np.int64) for o in spec.orders()}
        self.buffer_bytes, self.buffer_changes, self.buffer_first = [], [], []
        self.buffer_dma = {o: [] for o in spec.orders()}
        for b in self.buffers:
            sel = tuple(self.index[d] for d in b.deps)
            col = {f: (b.table[f][sel] if b.deps else np.full(points, b.table[f][()], dtype=np.int64))
                   for f in ROW_FIELDS}
            changes = np.zeros(points, dtype=bool)
            for d in b.deps:
                changes |= tiled[d]
            single += col["tile_bytes"]
            extra += np.where(changes, col["tile_bytes"], 0)
            self.buffer_bytes.append(col["tile_bytes"])
            self.buffer_changes.append(changes)
            self.buffer_first.append(col["first"])
            if b.op.role == INPUT:
                first += col["first"]
            else:
                last += col["last"]
            for o in spec.orders():
                pos = {d: k for k, d in enumerate(o)}
                factor = np.ones(points, dtype=np.int64)
                for d in o:
                    inner = [e for e in b.deps if pos[e] > pos[d]]
                    if d in b.deps or not inner:
                        continue
                    inner_tiled = np.zeros(points, dtype=bool)
                    for e in inner:
                        inner_tiled |= tiled[e]
                    factor *= np.where(inner_tiled, n[d], 1)
                self.dma[o][0 if b.op.role == INPUT else 1] += factor * col["sweep"]
                self.buffer_dma[o].append(factor * col["sweep"])
                self.issue[o] += factor * col["issue"]
        self.l1_single, self.l1_extra, self.first, self.last = single, extra, first, last
        self.compute = compute_grid(spec, self.cands, p, self.index)
        self._held(tiled)

    def _held(self, tiled: Mapping[str, np.ndarray]) -> None:
        """Per loop order, which changing inputs the held buffering keeps in one slot (those whose
        tile stays the same from one tile to the next: they do not depend on the innermost tiled
        dim), and their bytes, DMA cycles and first tile's DMA cycles over the grid."""
        self.held, self.held_bytes, self.held_dma, self.held_first = {}, {}, {}, {}
        for o in self.spec.orders():
            innermost = {d: np.zeros(self.points, dtype=bool) for d in o}
            found = np.zeros(self.points, dtype=bool)
            for d in reversed(o):
                innermost[d] = tiled[d] & ~found
                found |= tiled[d]
            masks = []
            nbytes, dma, first = (np.zeros(self.points, dtype=np.int64) for _ in range(3))
            for i, b in enumerate(self.buffers):
                moves = sum((innermost[d] for d in b.deps), np.zeros(self.points, dtype=bool))
                mask = self.buffer_changes[i] & ~moves if b.op.role == INPUT else np.zeros(self.points, dtype=bool)
                masks.append(mask)
                nbytes += np.where(mask, self.buffer_bytes[i], 0)
                dma += np.where(mask, self.buffer_dma[o][i], 0)
                first += np.where(mask, self.buffer_first[i], 0)
            self.held[o], self.held_bytes[o], self.held_dma[o], self.held_first[o] = masks, nbytes, dma, first

    def totals(self, order: tuple[str, ...], mode: int) -> np.ndarray:
        """Modelled cycles of every grid point for one loop order and buffering ``mode`` (vectorised
        twin of ``evaluate``; the reference for brute-force checks)."""
        held = (self.held_dma[order] - self.held_first[order]) if mode == HELD else 0
        return _cycles(self.params, self.compute, self.tiles * self.params.per_tile_cycles(
            self.tiles, self.spec.tile_cycles is not None, self.spec.op) + self.issue[order],
            *self.dma[order], self.first, self.last, held, mode)

    def footprint(self, order: tuple[str, ...], mode: int) -> np.ndarray:
        if mode == SINGLE:
            return self.l1_single
        return self.l1_single + self.l1_extra - (self.held_bytes[order] if mode == HELD else 0)

    def modes(self) -> tuple[int, ...]:
        modes = {"double": (DOUBLE, HELD), "single": (SINGLE,), "auto": (DOUBLE, HELD, SINGLE)}[self.params.buffering]
        return modes if self.params.hold else tuple(m for m in modes if m != HELD)

    def least_cycles(self, db: bool) -> int | None:
        """The least modelled cycles of the tilings, double-buffered (``db``, held or not) or
        single-buffered, that fit the capacity."""
        best = None
        for o in self.spec.orders():
            for mode in (m for m in self.modes() if (m != SINGLE) == db):
                fits = self.footprint(o, mode) <= self.params.capacity
                if mode == HELD:
                    fits &= self.held_bytes[o] > 0
                if fits.any():
                    least = int(self.totals(o, mode)[fits].min())
                    best = least if best is None else min(best, least)
        return best

    def choice(self, point: int) -> dict[str, int]:
        return {d: int(self.index[d][point]) for d in self.spec.dim_names}

    # -- the cost of one tiling, in plain Python (what the solution reports) -----------------
    def evaluate(self, choice: Mapping[str, int], order: tuple[str, ...], mode: int) -> TilingSolution:
        spec, p = self.spec, self.params
        tiles = {d: self.cands[d][choice[d]] for d in spec.dim_names}
        n = {d: self.counts[d][choice[d]] for d in spec.dim_names}
        pos = {d: i for i, d in enumerate(order)}
        innermost = next((d for d in reversed(order) if n[d] > 1), None)
        bufs, dma_in, dma_out, pro, epi, issue, held_dma = [], 0, 0, 0, 0, 0, 0
        for b in self.buffers:
            row = b.row(choice)
            changes = any(n[d] > 1 for d in b.deps)
            held = mode == HELD and changes and b.op.role == INPUT and innermost not in b.deps
            copies = 2 if mode != SINGLE and changes and not held else 1
            factor = 1
            for d in order:
                if d not in b.deps and any(pos[e] > pos[d] and n[e] > 1 for e in b.deps):
                    factor *= n[d]
            dma = factor * row.sweep
            issue += factor * row.issue
            if b.op.role == INPUT:
                dma_in, pro = dma_in + dma, pro + row.first
                held_dma += dma - row.first if held else 0
            else:
                dma_out, epi = dma_out + dma, epi + row.last
            bufs.append(BufferTiling(b.op.tensor, b.op.role, row.tile_shape, row.tile_bytes, copies,
                                     row.tile_bytes * copies, factor * row.transfers, factor * row.moved, dma,
                                     factor * row.issue, held))
        num_tiles = math.prod(n.values())
        compute = compute_cycles(spec, tiles, p)
        overhead = num_tiles * p.per_tile_cycles(num_tiles, spec.tile_cycles is not None, spec.op) + issue
        total = int(_cycles(p, compute, overhead, dma_in, dma_out, pro, epi, held_dma, mode))
        scratch = scratch_bytes(spec.scratch, tiles)
        l1 = sum(b.l1_bytes for b in bufs) + scratch
        return TilingSolution(spec.layer, spec.op, p.level, p.capacity, spec.dim_names,
                              tuple(d.size for d in spec.dims), tuple(tiles[d] for d in spec.dim_names),
                              tuple(n[d] for d in spec.dim_names), num_tiles, tuple(order), mode != SINGLE,
                              tuple(bufs), scratch, l1, total - compute - overhead, dma_in + dma_out, compute,
                              overhead, total)

    # -- candidate options on the (footprint, cycles) Pareto front ----------------------------
    def options(self, pareto: bool = True) -> list[tuple[int, int, bool, int, int]]:
        """(grid point, order index, double buffered, footprint, cost key) of the options, by
        footprint; with ``pareto`` only those no other option beats in both footprint and cost
        (whatever the capacity, an optimal one is among them). Cost key: cycles * width +
        tie-break (larger tiles, then the first loop order)."""
        if pareto and hasattr(self, "_options"):
            return self._options
        orders = self.spec.orders()
        width = int(self.tiebreak.max()) + len(orders) + 1
        rows = []
        for oi, o in enumerate(orders):
            for mode in self.modes():
                key = self.totals(o, mode) * width + self.tiebreak + oi
                row = np.stack([self.footprint(o, mode), key, np.arange(self.points), np.full(self.points, oi),
                                np.full(self.points, mode)], axis=1)
                rows.append(row[self.held_bytes[o] > 0] if mode == HELD else row)
        table = np.concatenate(rows)
        table = table[np.lexsort((table[:, 4], table[:, 3], table[:, 2], table[:, 1], table[:, 0]))]
        self._width = width
        if not pareto:
            return [(int(pt), int(oi), int(mode), int(foot), int(key)) for foot, key, pt, oi, mode in table.tolist()]
        front, best = [], None
        for foot, key, pt, oi, mode in table.tolist():
            if best is None or key < best:
                front.append((int(pt), int(oi), int(mode), int(foot), int(key)))
                best = key
        self._options = front
        return front

    # -- the CP-SAT model --------------------------------------------------------------------
    def model(self, objective: str, capacity: int | None, pareto: bool = True) -> "_Model":
        """CP-SAT model (see the module docstring) over the Pareto-optimal options: tile-size
        variables per dim, the L1 constraint as the sum of the operand buffers (a second copy
        where double buffered and changing) plus scratch, and the options' cycles as objective
        (``objective`` "cycles"), or the footprint itself ("footprint")."""
        from Deeploy.tiling import cpsat
        spec = self.spec
        m = cpsat.CpModel()
        options = self.options(pareto)
        z = [m.new_bool_var(f"option{k}") for k in range(len(options))]
        m.add_exactly_one(z)

        def over(values):
            return cpsat.weighted_sum(z, [int(v) for v in values])

        # the tile size and tile count of every free dim, and the loop order and buffering, as
        # the chosen option makes them
        t, n = {}, {}
        for d in self.free:
            cand, counts = self.cands[d], self.counts[d]
            sizes = [cand[int(self.index[d][pt])] for pt, *_ in options]
            t[d] = m.new_int_var(min(cand), max(cand), f"t_{d}")
            m.add(t[d] == over(sizes))
            n[d] = m.new_int_var(1, max(counts), f"n_{d}")
            m.add(n[d] == over([counts[int(self.index[d][pt])] for pt, *_ in options]))
        orders = spec.orders()
        order = [m.new_bool_var(f"order{k}") for k in range(len(orders))]
        m.add_exactly_one(order)
        for k, lit in enumerate(order):
            m.add(lit == sum(z[j] for j, (_, oi, _, _, _) in enumerate(options) if oi == k))
        db = m.new_bool_var("double_buffered")
        m.add(db == sum(z[j] for j, (_, _, mode, _, _) in enumerate(options) if mode != SINGLE))

        # L1: per operand buffer its largest tile (given the chosen tile sizes) and a second copy
        # when double buffered and its tile changes from tile to tile; plus the kernel scratch
        buffers = []
        for i, b in enumerate(self.buffers):
            bytes_b, changes = self.buffer_bytes[i], self.buffer_changes[i]
            one = [bytes_b[pt] for pt, *_ in options]
            two = [bytes_b[pt] if mode != SINGLE and changes[pt] and not (mode == HELD and self.held[orders[oi]][i][pt])
                   else 0 for pt, oi, mode, _, _ in options]
            tile = m.new_int_var(min(one), max(one), f"tile_bytes{i}")
            m.add(tile == over(one))
            second = m.new_int_var(min(two), max(two), f"second_copy{i}")
            m.add(second == over(two))
            buffers.append((tile, second))
        l1 = m.new_int_var(0, max(f for *_, f, _ in options), "l1")
        m.add(l1 == sum(a + b for a, b in buffers) + over([self.scratch[pt] for pt, *_ in options]))
        if capacity is not None:
            m.add(l1 <= capacity)
        keys = [key for *_, key in options]
        cost = m.new_int_var(min(keys), max(keys), "cost")
        m.add(cost == over(keys))
        if objective == "footprint":
            m.minimize(l1)        # footprints of Pareto options differ: no tie
            ranked = range(len(z))
        else:
            m.minimize(cost)
            ranked = sorted(range(len(z)), key=lambda k: (options[k][4], k))
        m.add_decision_strategy([z[k] for k in ranked], cpsat.CHOOSE_FIRST, cpsat.SELECT_MAX_VALUE)
        return _Model(m, t, db, l1, z, options, order, cost, self._width)


@dataclass
class _Model:
    model: cpsat.CpModel
    t: dict
    db: object
    l1: object
    z: list
    options: list
    order: list
    cost: object
    width: int

    def solve(self, params: TilingParams) -> "cpsat.Response":
        from Deeploy.tiling import cpsat
        return cpsat.solve(self.model, {
            "num_workers": 1, "random_seed": params.seed, "max_deterministic_time": params.max_deterministic_time,
            "max_time_in_seconds": params.max_time_s,
            "search_branching": cpsat.FIXED_SEARCH,   # options by cost
            "cp_model_presolve": False})              # presolve costs 10-100x the search here

    def _chosen(self, solver: "cpsat.Response") -> tuple:
        return self.options[next(k for k, lit in enumerate(self.z) if solver.value(lit))]

    def point(self, solver: "cpsat.Response") -> int:
        return self._chosen(solver)[0]

    def mode(self, solver: "cpsat.Response") -> int:
        """The chosen option's buffering (SINGLE, DOUBLE, HELD)."""
        return self._chosen(solver)[2]

    def order_index(self, solver: "cpsat.Response") -> int:
        return [k for k, lit in enumerate(self.order) if solver.value(lit)][0]


def _zero_copy(spec: LayerSpec, params: TilingParams) -> TilingSolution:
    return TilingSolution(spec.layer, spec.op, params.level, params.capacity, (), (), (), (), 0, (), False, (), 0, 0,
                          0, 0, 0, 0, 0, True, True)


def evaluate(spec: LayerSpec, tiles: Mapping[str, int], params: TilingParams,
             order: Sequence[str] | None = None, double_buffered: bool | None = None,
             held: bool = False) -> TilingSolution:
    """The modelled cost of a given tiling (tile sizes must be candidates of their dims); ``held``:
    double-buffered with the inputs that stay from one tile to the next in one slot."""
    prob = _Problem(spec, params)
    choice = {d: prob.cands[d].index(tiles.get(d, spec.dim(d).size)) for d in spec.dim_names}
    db = (params.buffering != "single") if double_buffered is None else double_buffered
    return prob.evaluate(choice, tuple(order) if order else spec.orders()[0], HELD if held else DOUBLE if db else SINGLE)


def _minimal(prob: _Problem) -> TilingSolution:
    from Deeploy.tiling import cpsat
    built = prob.model("footprint", None)
    solver = built.solve(prob.params)
    status = solver.status
    if status not in (cpsat.OPTIMAL, cpsat.FEASIBLE):
        raise RuntimeError(f"{prob.spec.layer}: footprint model status {solver.status_name()}")
    choice = prob.choice(built.point(solver))
    sol = prob.evaluate(choice, prob.spec.orders()[built.order_index(solver)], built.mode(solver))
    if sol.l1_bytes != solver.value(built.l1):
        raise RuntimeError(f"{prob.spec.layer}: footprint {solver.value(built.l1)} vs evaluated {sol.l1_bytes}")
    return replace(sol, optimal=status == cpsat.OPTIMAL)




def _infeasible(spec: LayerSpec, params: TilingParams, smallest: TilingSolution) -> TilingError:
    need = smallest.l1_bytes
    parts = [f"{b.role} '{b.tensor}' {b.copies} x {b.tile_bytes} B"
             for b in sorted(smallest.buffers, key=lambda b: (-b.l1_bytes, b.tensor))]
    if smallest.scratch_bytes:
        parts.append(f"kernel scratch {smallest.scratch_bytes} B")
    reasons = spec.whole_reasons()
    tiles = ", ".join(f"{d}={t}" for d, t, s in zip(smallest.dims, smallest.tile, smallest.sizes) if s > 1) or "one tile"
    buffering = "double-buffered" if smallest.double_buffered else "single-buffered"
    constraint = "; ".join(reasons) + ": " if reasons else ""
    constraint += f"even its smallest {buffering} tiling ({tiles}) needs {need} B ({', '.join(parts)})"
    message = (f"layer '{spec.layer}' ({spec.op}) does not fit {params.level} = {params.capacity} B; "
               f"the smallest {params.flag} that fits is {need} B")
    error = TilingError(message, layer=spec.layer, op=spec.op, level=params.level, capacity=params.capacity,
                        min_bytes=need, constraint=constraint)
    error.details = f"'{spec.layer}': {constraint}"
    error.smallest = smallest
    return error


_CACHE: dict[tuple, TilingSolution | TilingError] = {}


def clear_cache() -> None:
    _CACHE.clear()


def cache_info() -> int:
    return len(_CACHE)


def _relabel(sol: TilingSolution, spec: LayerSpec) -> TilingSolution:
    names = [o.tensor for o in spec.operands if o.nbytes > 0]
    return replace(sol, layer=spec.layer, op=spec.op,
                   buffers=tuple(replace(b, tensor=t) for b, t in zip(sol.buffers, names)))


def min_footprint(spec: LayerSpec, params: TilingParams) -> TilingSolution:
    """The tiling with the smallest footprint: its ``l1_bytes`` is the smallest capacity that fits
    (one solve per signature, as ``solve_spec``)."""
    if spec.zero_copy:
        return _zero_copy(spec, params)
    key = ("footprint", spec.signature(), params)
    if key not in _CACHE:
        _CACHE[key] = _minimal(_Problem(spec, params))
    return _relabel(_CACHE[key], spec)


def solve_spec(spec: LayerSpec, params: TilingParams, cache: bool = True) -> TilingSolution:
    """The tiling of minimal modelled cycles that fits ``params.capacity``; TilingError (with
    the smallest capacity that fits) if none does. Identical layers (same signature) share
    one solve when ``cache`` is set."""
    if spec.zero_copy:
        return _zero_copy(spec, params)
    key = (spec.signature(), params)
    if cache and key in _CACHE:
        hit = _CACHE[key]
        if isinstance(hit, TilingError):
            raise _infeasible(spec, params, _relabel(hit.smallest, spec))
        return _relabel(hit, spec)
    from Deeploy.tiling import cpsat
    start = time.perf_counter()
    prob = _Problem(spec, params)
    built = prob.model("cycles", params.capacity)
    solver = built.solve(params)
    status = solver.status
    if status == cpsat.INFEASIBLE:
        error = _infeasible(spec, params, _minimal(prob))
        if cache:
            _CACHE[key] = error
        raise error
    if status not in (cpsat.OPTIMAL, cpsat.FEASIBLE):
        raise TilingError(f"layer '{spec.layer}' ({spec.op}): no tiling found within the solver's limits "
                          f"(status {solver.status_name()})", layer=spec.layer, op=spec.op)
    choice = prob.choice(built.point(solver))
    sol = prob.evaluate(choice, spec.orders()[built.order_index(solver)], built.mode(solver))
    if sol.total_cycles != solver.value(built.cost) // built.width or sol.l1_bytes != solver.value(built.l1):
        raise RuntimeError(f"{spec.layer}: CP-SAT model and evaluation disagree: "
                           f"{solver.value(built.cost) // built.width} vs {sol.total_cycles} cycles, "
                           f"{solver.value(built.l1)} vs {sol.l1_bytes} B")
    for d in prob.free:
        if solver.value(built.t[d]) != sol.tile_of(d):
            raise RuntimeError(f"{spec.layer}: tile variable of {d} disagrees with the chosen option")
    other = prob.least_cycles(not sol.double_buffered) if params.buffering == "auto" else None
    sol = replace(sol, optimal=status == cpsat.OPTIMAL, solve_seconds=time.perf_counter() - start,
                  other_buffering_cycles=other)
    if cache:
        _CACHE[key] = sol
    return sol
