"""What the tiler knows about one layer: its iteration space and how every operand's tile follows
from a tile of that space.

* ``Dim``: one dimension of the iteration space (for most ops an output dimension; the K of a
  non-requantised GEMM is a reduction dimension). A tile of the layer is a box of the iteration
  space: per dim a range ``[lo, hi)``; tiles of a dim are ``[i*t, min((i+1)*t, size))``.
* ``AxisMap``: how one axis of an operand's *logical view* follows from the tile range of (at
  most) one dim: identity, strided window (convolution and pooling halos, padding clipped at the
  borders), offset window (Concat parts, Pad, Slice), channel groups, or the whole axis.
* ``Operand``: a tensor the kernel reads or writes, as a C-contiguous logical view (a reshape
  of the tensor: merged adjacent axes, inserted size-1 axes), one AxisMap per logical axis.
* ``LayerSpec``: dims, operands, the op's work (Cost.ops), which dims the kernel splits over the
  cores, the candidate loop orders, the kernel's L1 scratch (bytes, or ``TileScratch`` when it
  depends on the tile) and why some axes stay whole.

Everything is frozen and hashable: the solver caches solutions by ``LayerSpec.signature()``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Callable, Mapping, Sequence

__all__ = ["Dim", "AxisMap", "Operand", "LayerSpec", "TileScratch", "scratch_bytes", "AxisStats", "candidates", "tile_ranges",
           "axis_stats", "operand_ranges", "dma_layout", "dma_commands", "INPUT", "OUTPUT"]

INPUT, OUTPUT = "input", "output"


@dataclass(frozen=True)
class Dim:
    """One dimension of the iteration space.

    tileable:  False keeps the dim whole (its only candidate tile is ``size``); ``why_whole``
               says why, e.g. "the reduced axis of iSoftmax".
    granule:   tiles are multiples of ``granule`` elements (or the full size).
    reduction: not an output dimension: partial results accumulate in the resident output
               tile, so a reduction dim must be innermost in every loop order.
    """

    name: str
    size: int
    tileable: bool = True
    why_whole: str = ""
    granule: int = 1
    reduction: bool = False


@dataclass(frozen=True)
class AxisMap:
    """Index range of one operand axis (length ``size``) for the tile ``[lo, hi)`` of ``dim``.

    dim None:   the axis is always whole (size 1: broadcast).
    affine:     output index ``o`` reads ``[o*stride + offset, o*stride + offset + span)``; for
                a convolution ``offset = -pad_begin`` and ``span = (k-1)*dilation + 1``, which
                gives the halo ``(t-1)*stride + span`` of a tile of ``t`` outputs; Concat part
                ``i`` has ``offset = -(start of part i)``; Pad ``offset = -pad_begin``.
    reverse:    negative-step Slice: ``o`` reads index ``offset - o*stride``.
    group:      ``(q, r)``: output block ``j`` of ``q`` reads input block ``j`` of ``r``
                (grouped convolution channels).
    The range is clipped to ``[0, size)`` (padding is not transferred) and may be empty.
    """

    size: int
    dim: str | None = None
    stride: int = 1
    offset: int = 0
    span: int = 1
    reverse: bool = False
    group: tuple[int, int] | None = None

    @property
    def identity(self) -> bool:
        return (self.dim is not None and self.stride == 1 and self.offset == 0 and self.span == 1
                and not self.reverse and self.group is None)

    def window(self, lo: int, hi: int) -> tuple[int, int]:
        """The range before clipping to the axis (it may reach into padding or other parts)."""
        if self.group is not None:
            q, r = self.group
            return (lo // q) * r, ((hi - 1) // q + 1) * r
        if self.reverse:
            return self.offset - self.stride * (hi - 1), self.offset - self.stride * lo + self.span
        return lo * self.stride + self.offset, (hi - 1) * self.stride + self.offset + self.span

    def range(self, lo: int, hi: int) -> tuple[int, int]:
        if self.dim is None:
            return 0, self.size
        a, b = self.window(lo, hi)
        a, b = max(a, 0), min(b, self.size)
        return (a, b) if a < b else (min(a, self.size), min(a, self.size))


@dataclass(frozen=True)
class Operand:
    """A tensor the kernel reads (``role`` INPUT, incl. weights and other constants) or writes
    (OUTPUT), as a C-contiguous logical view with one AxisMap per axis."""

    tensor: str
    role: str
    elem_bytes: int
    axes: tuple[AxisMap, ...]
    constant: bool = False

    @cached_property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.size for a in self.axes)

    @cached_property
    def nbytes(self) -> int:
        return self.elem_bytes * math.prod(self.shape)

    @cached_property
    def dims(self) -> tuple[str, ...]:
        return tuple(a.dim for a in self.axes if a.dim is not None)


@dataclass(frozen=True)
class TileScratch:
    """Kernel scratch that depends on the tile the kernel works on (e.g. a table that only pays
    for large tiles): ``nbytes[k]`` for a tile whose extents over ``dims`` are ``extents[k]``.
    Another tile takes the smallest entry among the listed tiles containing it (scratch does not
    shrink as a tile grows), else ``whole``, the whole layer's scratch."""

    dims: tuple[str, ...]
    extents: tuple[tuple[int, ...], ...]
    nbytes: tuple[int, ...]
    whole: int

    @cached_property
    def _exact(self) -> dict[tuple[int, ...], int]:
        exact = {}
        for ext, n in zip(self.extents, self.nbytes):
            exact.setdefault(ext, n)
        return exact

    def at(self, tile: Mapping[str, int]) -> int:
        want = tuple(tile[d] for d in self.dims)
        if want in self._exact:
            return self._exact[want]
        best = None
        for ext, n in zip(self.extents, self.nbytes):
            if all(e >= w for e, w in zip(ext, want)):
                best = n if best is None else min(best, n)
        return self.whole if best is None else best


def scratch_bytes(scratch: "int | TileScratch", tile: Mapping[str, int]) -> int:
    """L1 scratch of a tile with extents ``tile`` (dim name -> tile size)."""
    return scratch if isinstance(scratch, int) else scratch.at(tile)


@dataclass(frozen=True)
class LayerSpec:
    """The tiling problem of one layer (see the module docstring).

    ops:          work of the layer (Cost.ops; data movement: one op per output element).
    parallel:     alternatives of dims whose tile extents the kernel splits over the cores: the
                  first alternative with at least ``cores`` units per tile is used, else the
                  last (the kernels' ``by_row ? rows : N`` choices).
    loop_orders:  candidate orders of the tile loops, outermost first; the solver picks one.
    scratch:      the kernel's L1 working memory (per-core slices plus shared part), bytes, or
                  a ``TileScratch`` giving it per tile.
    whole:        why operand axes that are no Dim stay whole (reductions of Conv/GEMM).
    zero_copy:    a view that runs nothing: no tiles at all.
    tile_cycles:  a hashable callable giving the compute cycles of one tile from its dims'
                  extents (an engine with its own cycle model, e.g. an NPU); None: the tile's ops
                  over the cores at the platform's ops per cycle.
    """

    layer: str
    op: str
    dims: tuple[Dim, ...]
    operands: tuple[Operand, ...]
    ops: int
    parallel: tuple[tuple[str, ...], ...] = ()
    loop_orders: tuple[tuple[str, ...], ...] = ()
    scratch: int | TileScratch = 0
    whole: tuple[str, ...] = ()
    zero_copy: bool = False
    tile_cycles: Callable[[Mapping[str, int]], int] | None = None

    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        raise KeyError(name)

    @cached_property
    def dim_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def orders(self) -> tuple[tuple[str, ...], ...]:
        return self.loop_orders or (self.dim_names,)

    def signature(self) -> tuple:
        """Everything that determines the solution except the layer's and tensors' names."""
        return (self.op, self.dims, tuple((o.role, o.elem_bytes, o.axes) for o in self.operands),
                self.ops, self.parallel, self.orders(), self.scratch, self.zero_copy, self.tile_cycles)

    def whole_reasons(self) -> list[str]:
        """Why the tiles cannot shrink along some axes (for error messages)."""
        reasons = [f"{d.why_whole} ({d.size} elements) stays whole" for d in self.dims
                   if not d.tileable and d.size > 1 and d.why_whole]
        return reasons + list(self.whole)

    def validate(self) -> "LayerSpec":
        names = self.dim_names
        if len(set(names)) != len(names):
            raise ValueError(f"{self.layer}: repeated dim names {names}")
        for o in self.operands:
            used = o.dims
            if len(set(used)) != len(used):
                raise ValueError(f"{self.layer}: operand {o.tensor} maps two axes to one dim")
            for d in used:
                if d not in names:
                    raise ValueError(f"{self.layer}: operand {o.tensor} uses unknown dim {d}")
            if o.role == OUTPUT and any(self.dim(d).reduction for d in used):
                raise ValueError(f"{self.layer}: output {o.tensor} depends on a reduction dim")
        for order in self.orders():
            if sorted(order) != sorted(names):
                raise ValueError(f"{self.layer}: loop order {order} is not a permutation of {names}")
            seen_reduction = False
            for d in order:
                if self.dim(d).reduction:
                    seen_reduction = True
                elif seen_reduction:
                    raise ValueError(f"{self.layer}: reduction dims must be innermost in {order}")
        for alt in self.parallel:
            for d in alt:
                if d not in names:
                    raise ValueError(f"{self.layer}: parallel dim {d} unknown")
        return self


# ---- tiles of one dim -----------------------------------------------------------------------
def tile_ranges(size: int, tile: int) -> list[tuple[int, int]]:
    """The tiles ``[lo, hi)`` of a dim of ``size`` cut into tiles of ``tile`` (last one shorter)."""
    return [(lo, min(lo + tile, size)) for lo in range(0, size, tile)] if size else [(0, 0)]


@lru_cache(maxsize=4096)
def candidates(dim: Dim, max_count: int = 48) -> tuple[int, ...]:
    """Candidate tile sizes of a dim, largest first (index 0 is the whole dim).

    Every tile count ``n`` has one best tile size, the most balanced ``ceil(size/n)`` (rounded up
    to the granule): any other size with the same count only has a bigger footprint. The
    distinct values are enumerated in O(sqrt(size)). Beyond ``max_count`` values the largest
    half is kept and the smaller tiles thinned evenly in log(size), keeping the smallest.
    """
    n_full = dim.size
    if not dim.tileable or n_full <= 1:
        return (max(n_full, 0),) if n_full else (0,)
    g = max(1, dim.granule)
    values: set[int] = set()
    root = math.isqrt(n_full) + 1
    for n in range(1, root + 1):
        values.add(-(-n_full // n))
    for t in range(1, root + 1):
        values.add(-(-n_full // -(-n_full // t)))
    tiles = sorted({min(n_full, -(-v // g) * g) for v in values if v >= 1}, reverse=True)
    if len(tiles) > max(max_count, 2):
        head = max(1, max_count // 2)
        keep, rest = tiles[:head], tiles[head:]
        want = max(1, max_count - head)
        # the rest thinned evenly in log(tile size), always keeping the smallest tile
        lo, hi = math.log(rest[-1]), math.log(rest[0])
        picks = sorted({min(range(len(rest)), key=lambda i: (abs(math.log(rest[i]) - (hi - (hi - lo) * k / max(1, want - 1))), i))
                        for k in range(want)})
        tiles = keep + [rest[i] for i in picks]
    return tuple(tiles)


@dataclass(frozen=True)
class AxisStats:
    """One operand axis over the tiles of its dim: largest extent, sum of extents, tiles with a
    non-empty extent, and the extents of the first and the last tile."""

    max: int
    sum: int
    nonempty: int
    first: int
    last: int
    count: int


@lru_cache(maxsize=65536)
def axis_stats(amap: AxisMap, dim_size: int, tile: int) -> AxisStats:
    if amap.dim is None:
        return AxisStats(amap.size, amap.size, 1 if amap.size else 0, amap.size, amap.size, 1)
    n = -(-dim_size // tile) if dim_size else 1
    if amap.identity and amap.size == dim_size:
        last = dim_size - (n - 1) * tile
        return AxisStats(min(tile, dim_size), dim_size, n if dim_size else 0, min(tile, dim_size), last, n)
    exts = [b - a for a, b in (amap.range(lo, hi) for lo, hi in tile_ranges(dim_size, tile))]
    return AxisStats(max(exts), sum(exts), sum(1 for e in exts if e > 0), exts[0], exts[-1], n)


def operand_ranges(operand: Operand, dim_ranges: dict[str, tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Index ranges, per logical axis, of the operand's tile for a tile of the iteration space."""
    return tuple(a.range(*dim_ranges[a.dim]) if a.dim is not None else (0, a.size) for a in operand.axes)


@lru_cache(maxsize=1 << 16)
def dma_layout(shape: tuple[int, ...], extents: tuple[int, ...], two_d: bool = True) -> tuple[int, bool, int]:
    """(commands, strided, run) to move a box of ``extents`` out of a C-contiguous tensor of
    ``shape``; ``run`` is the length in elements of its contiguous pieces (rows).

    Levels of the box that are contiguous continuations of the inner ones merge. With a 2-D DMA
    (GVSoC mchan: length + one stride level) the innermost contiguous run and one strided level
    make one command and every further level multiplies the command count; with a 1-D DMA every
    strided level does. ``strided`` says whether the commands are 2-D ones."""
    levels: list[list[int]] = []   # [count, stride], innermost first
    stride = 1
    for size, ext in zip(reversed(tuple(shape)), reversed(tuple(extents))):
        if ext == 0:
            return 0, False, 0
        if ext > 1:
            if levels and levels[-1][0] * levels[-1][1] == stride:
                levels[-1][0] *= ext
            else:
                levels.append([ext, stride])
        stride *= size
    if not levels:
        return 1, False, 1
    if levels[0][1] != 1:            # element-strided innermost level: runs of one element
        levels.insert(0, [1, 1])
    run = levels[0][0]
    if len(levels) == 1:
        return 1, False, run
    if not two_d:
        return math.prod(c for c, _ in levels[1:]), False, run
    return math.prod(c for c, _ in levels[2:]), True, run


def dma_commands(shape: Sequence[int], extents: Sequence[int], two_d: bool = True) -> tuple[int, bool]:
    """(commands, strided) of ``dma_layout``."""
    return dma_layout(tuple(shape), tuple(extents), two_d)[:2]
