"""The tile schedule of one layer, as the generated code runs it
(``TargetLibraries/Siracusa/src/deeploy_tiling.c``): the L2 tiles (operands in L3 are staged
through L2) and inside each the L1 tiles, in the chosen loop order; every operand's L1 slots and
L2 staging buffer; and the *tile classes*: tiles that look alike to the kernel (same extents and
the same clipping at the borders along every dim) share one kernel call.

Along a dim the L1 tiles are listed in execution order over all L2 tiles (L2 tile ``j``, L1 tile
``i`` within it is entry ``j * ceil(l2_tile / l1_tile) + i``); the tile grid is the product of
these lists, so a tile's class is the tuple of its per-dim classes (mixed radix)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property
from typing import Iterator, Mapping

from Deeploy.memory.planner import align
from Deeploy.tiling.solution import TilingSolution
from Deeploy.tiling.spec import OUTPUT, AxisMap, LayerSpec, Operand, tile_ranges

__all__ = ["OperandSlots", "TileSchedule", "schedule_layer", "axis_key"]


def axis_key(a: AxisMap, lo: int, hi: int) -> tuple:
    """What a tile [lo, hi) of the axis' dim looks like along the axis: extent and clipping at
    both ends (padding, Concat part position); an empty range looks like nothing."""
    ra, rb = a.range(lo, hi)
    if rb <= ra:
        return (0,)
    va, vb = a.window(lo, hi)
    return (rb - ra, ra - va, vb - rb)


@dataclass(frozen=True)
class OperandSlots:
    """Where one operand's tiles live: ``copies`` L1 slots of ``slot_bytes`` at ``l1_offsets``
    (relative to the layer's L1 base), and for an operand in L3 an L2 staging buffer; ``copies``
    0: a resident input, read in place at its home (each tile's box is contiguous there)."""

    operand: Operand
    index: int
    in_l3: bool
    copies: int
    slot_bytes: int
    l1_offsets: tuple[int, ...]
    staging_bytes: int = 0
    staging_offset: int = 0

    @property
    def output(self) -> bool:
        return self.operand.role == OUTPUT


@dataclass(frozen=True)
class TileSchedule:
    """Everything the generated tile loop of one layer needs (see the module docstring)."""

    spec: LayerSpec
    l1: TilingSolution                  # the L1 tiling (of the largest L2 tile when staged)
    l2: TilingSolution | None           # the L2 tiling of a layer with operands in L3
    double_buffer: bool
    order: tuple[str, ...]              # loop order, outermost first
    l2_tile: tuple[int, ...]            # per dim (spec order)
    l1_tile: tuple[int, ...]
    dim_tiles: tuple[tuple[tuple[int, int], ...], ...]   # per dim: its L1 tiles in order
    dim_class: tuple[tuple[int, ...], ...]               # per dim: class of each entry
    class_ranges: tuple[tuple[tuple[int, int], ...], ...]  # per dim: a representative per class
    slots: tuple[OperandSlots, ...]
    scratch_offset: int
    l1_bytes: int                       # the layer's L1 footprint (slots + scratch)
    staging_bytes: int                  # the layer's L2 staging footprint
    classes: tuple = ()                 # TileClass of every class (tile_node.tile_classes), set by tile_network

    @property
    def dims(self) -> tuple[str, ...]:
        return self.spec.dim_names

    @property
    def scratch_bytes(self) -> int:
        """The kernel's L1 scratch at ``scratch_offset`` (0: none, or the tiler dropped an optional one)."""
        return self.l1.scratch_bytes

    @property
    def radix(self) -> tuple[int, ...]:
        out, r = [], 1
        for reps in self.class_ranges:
            out.append(r)
            r *= len(reps)
        return tuple(out)

    @property
    def num_classes(self) -> int:
        return math.prod(len(reps) for reps in self.class_ranges)

    def class_tiles(self) -> Iterator[tuple[int, dict[str, tuple[int, int]]]]:
        """(class id, representative dim ranges) of every tile class."""
        for combo in itertools.product(*(range(len(r)) for r in self.class_ranges)):
            cls = sum(c * r for c, r in zip(combo, self.radix))
            yield cls, {d: self.class_ranges[k][c] for k, (d, c) in enumerate(zip(self.dims, combo))}

    @property
    def num_tiles(self) -> int:
        return math.prod(len(t) for t in self.dim_tiles)

    def tiles(self) -> Iterator[tuple[int, int, dict[str, tuple[int, int]]]]:
        """(L2 tile, class id, dim ranges) of every L1 tile in execution order (as deeploy_tiling.c);
        computed once per schedule (read the ranges, never change them)."""
        return iter(self._tiles)

    @cached_property
    def _tiles(self) -> tuple[tuple[int, int, dict[str, tuple[int, int]]], ...]:
        return tuple(self._walk_tiles())

    def _walk_tiles(self) -> Iterator[tuple[int, int, dict[str, tuple[int, int]]]]:
        dims, radix = self.dims, self.radix
        pos = {d: k for k, d in enumerate(dims)}
        sizes = {d: s.size for d, s in zip(dims, self.spec.dims)}
        l2 = dict(zip(dims, self.l2_tile))
        l1 = dict(zip(dims, self.l1_tile))
        outer = [tile_ranges(sizes[d], l2[d]) for d in self.order]
        for j2, js in enumerate(itertools.product(*(range(len(o)) for o in outer))):
            spans = {d: outer[k][j] for k, (d, j) in enumerate(zip(self.order, js))}
            inner = [tile_ranges(spans[d][1] - spans[d][0], l1[d]) for d in self.order]
            for ins in itertools.product(*(range(len(i)) for i in inner)):
                ranges, cls = {}, 0
                for k, d in enumerate(self.order):
                    lo, hi = inner[k][ins[k]]
                    ranges[d] = (spans[d][0] + lo, spans[d][0] + hi)
                    entry = js[k] * -(-l2[d] // l1[d]) + ins[k]
                    cls += self.dim_class[pos[d]][entry] * radix[pos[d]]
                yield j2, cls, ranges

    def l2_tiles(self) -> int:
        sizes = [d.size for d in self.spec.dims]
        return math.prod(-(-s // t) for s, t in zip(sizes, self.l2_tile))


def _dim_tiles(size: int, l2: int, l1: int) -> tuple[tuple[int, int], ...]:
    out = []
    for lo2, hi2 in tile_ranges(size, l2):
        out += [(lo2 + a, lo2 + b) for a, b in tile_ranges(hi2 - lo2, l1)]
    return tuple(out)


def _max_box(op: Operand, per_dim: Mapping[str, tuple[tuple[int, int], ...]]) -> int:
    ext = 1
    for a in op.axes:
        ext *= a.size if a.dim is None else max(b - c for c, b in (a.range(lo, hi) for lo, hi in per_dim[a.dim]))
    return ext * op.elem_bytes


def schedule_layer(spec: LayerSpec, l1: TilingSolution, l2: TilingSolution | None, in_l3: Mapping[str, bool],
                   double_buffer: bool, alignment: int = 4, resident: frozenset[str] = frozenset(),
                   ahead: frozenset[str] = frozenset(), top: bool = False) -> TileSchedule:
    """The schedule of a tiled layer: ``l1`` tiles inside the ``l2`` tiles (None: one L2 tile, no
    staging); ``in_l3``: which tensors live in L3 (staged through L2); ``resident``: inputs the
    engine reads in place where they live (a weight memory): no L1 slot (``copies`` 0), never moved.
    ``ahead``: inputs whose first tile the layer before loads (``prefetch.py``): their first slots
    lie together at the bottom of the layer's L1, or (``top``) at its top, after the scratch."""
    dims = spec.dim_names
    sizes = {d.name: d.size for d in spec.dims}
    l2_tile = {d: (l2.tile_of(d) if l2 is not None else sizes[d]) for d in dims}
    l1_tile = {d: min(l1.tile_of(d), l2_tile[d]) for d in dims}
    order = (l2 or l1).loop_order or dims
    per_dim = {d: _dim_tiles(sizes[d], l2_tile[d], l1_tile[d]) for d in dims}
    l2_per_dim = {d: tuple(tile_ranges(sizes[d], l2_tile[d])) for d in dims}
    operands = [o for o in spec.operands if o.nbytes > 0]

    dim_class, class_ranges = [], []
    for d in dims:
        axes = [a for o in operands for a in o.axes if a.dim == d]
        keys: dict[tuple, int] = {}
        reps, classes = [], []
        for lo, hi in per_dim[d]:
            key = (hi - lo,) + tuple(axis_key(a, lo, hi) for a in axes)
            if key not in keys:
                keys[key] = len(reps)
                reps.append((lo, hi))
            classes.append(keys[key])
        dim_class.append(tuple(classes))
        class_ranges.append(tuple(reps))

    held = {b.tensor for b in l1.buffers if b.held}
    copies = [0 if op.tensor in resident else 1 if op.tensor in held
              else 2 if double_buffer and any(len(per_dim[d]) > 1 for d in op.dims) else 1 for op in operands]
    slot = [align(_max_box(op, per_dim), alignment) for op in operands]
    edge = [(k, 0) for k, op in enumerate(operands) if copies[k] and op.tensor in ahead]
    rest = [(k, c) for k in range(len(operands)) for c in range(copies[k]) if (k, c) not in edge]
    at, offsets = 0, {}
    for k, c in rest if top else edge + rest:
        offsets[k, c], at = at, at + slot[k]
    scratch_offset, at = at, at + l1.scratch_bytes
    if top:
        at = align(at, alignment)
        for k, c in edge:
            offsets[k, c], at = at, at + slot[k]
    slots, l2_off = [], 0
    for k, op in enumerate(operands):
        if not copies[k]:
            slots.append(OperandSlots(op, k, False, 0, 0, ()))
            continue
        staged = bool(in_l3.get(op.tensor)) and l2 is not None
        staging = align(_max_box(op, l2_per_dim), alignment) if staged else 0
        slots.append(OperandSlots(op, k, staged, copies[k], slot[k], tuple(offsets[k, c] for c in range(copies[k])),
                                  staging, l2_off))
        l2_off += staging
    return TileSchedule(spec, l1, l2, double_buffer, tuple(order), tuple(l2_tile[d] for d in dims),
                        tuple(l1_tile[d] for d in dims), tuple(per_dim[d] for d in dims), tuple(dim_class),
                        tuple(class_ranges), tuple(slots), scratch_offset, at, l2_off)
