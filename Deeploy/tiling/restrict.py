"""How a node is restricted to one tile, one function per kind of op: each edits a ``Tile`` (inputs,
attributes, tensor shapes, new constants) so that the same op type computes exactly the tile.
The tiling families (``families.py``) say which function an op uses; ``tile_node.py`` builds
the tile node from the edited ``Tile``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops.fused import is_fused
from Deeploy.tiling.ops.rows import row_start
from Deeploy.tiling.spec import OUTPUT, AxisMap, LayerSpec, Operand, operand_ranges

__all__ = ["Tile", "Restrict", "same", "rows", "reduce", "arg_reduce", "conv", "maxpool", "gemm_requant", "transpose", "concat",
           "slice_", "pad", "gather", "expand", "resize", "reshape", "flatten", "squeeze", "unsqueeze", "channels", "conv_transpose"]

Box = tuple[tuple[int, int], ...]


@dataclass
class Tile:
    """One tile being built: what a rule reads (node, graph, spec, ranges, operand boxes) and
    what it edits (inputs, attrs, tensor shapes, new constants)."""

    node: Node
    graph: Graph
    spec: LayerSpec
    ranges: Mapping[str, tuple[int, int]]
    operands: dict[str, Operand] = field(default_factory=dict)
    boxes: dict[str, Box] = field(default_factory=dict)
    inputs: list[str] = field(default_factory=list)
    attrs: dict = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    constants: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        self.inputs = list(self.node.inputs)
        self.attrs = dict(self.node.attrs)
        for o in self.spec.operands:
            self.operands[o.tensor] = o
            self.boxes[o.tensor] = operand_ranges(o, dict(self.ranges))

    @property
    def p(self):
        """The node's params (the base op's for a requantised op)."""
        return getattr(self.node.params, "base", self.node.params)

    def extents(self, name: str) -> tuple[int, ...]:
        return tuple(b - a for a, b in self.boxes[name])

    def output(self) -> Operand:
        return next(o for o in self.spec.operands if o.role == OUTPUT)

    def axis_of(self, name: str, dim: str) -> int:
        """The logical axis of operand ``name`` that follows ``dim``."""
        return next(k for k, a in enumerate(self.operands[name].axes) if a.dim == dim)

    def constant(self, base: str, values) -> str:
        """A new constant input (int64 values) under a name unused in both graphs."""
        taken = set(self.graph.tensors) | set(self.constants)
        name, k = f"{self.node.name}_tile_{base}", 0
        while name in taken:
            k += 1
            name = f"{self.node.name}_tile_{base}_{k}"
        self.constants[name] = np.asarray(values, dtype=np.int64)
        return name

    def error(self, message: str) -> TilingError:
        return TilingError(f"layer '{self.node.name}' ({self.node.op}), tile {dict(self.ranges)}: {message}",
                           layer=self.node.name, op=self.node.op)


# ---- rules ------------------------------------------------------------------------------------
def same(t: Tile) -> None:
    """Elementwise ops, GEMM/MatMul, Identity: the logical views' shapes say everything."""


def rows(t: Tile) -> None:
    """Softmaxes and norms: the last logical axis must be the op's (whole) row; an ``axis``
    attribute names it."""
    x = t.node.inputs[0]
    shape = t.graph.tensors[x].shape
    if math.prod(shape[row_start(t.p, shape):]) == 1:   # dropped from the logical views: put it back
        for name in t.operands:
            t.shapes[name] = t.extents(name) + (1,)
    if "axis" in t.attrs:
        t.attrs["axis"] = len(t.shapes.get(x, t.extents(x))) - 1


def reduce(t: Tile) -> None:
    """ReduceSum/ReduceMean/IntegerMean: the reduced groups of the logical view, as the original
    gave them (attribute or input)."""
    x, y = t.operands[t.node.inputs[0]], t.output()
    axes = [k for k, a in enumerate(x.axes) if a.dim not in y.dims]
    had_input = len(t.node.inputs) > 1 and bool(t.node.inputs[1])
    t.inputs = t.inputs[:1]
    t.attrs.pop("axes", None)
    t.attrs.pop("noop_with_empty_axes", None)
    if not axes:
        t.attrs["noop_with_empty_axes"] = 1
    elif had_input:
        t.inputs.append(t.constant("axes", axes))
    else:
        t.attrs["axes"] = axes


def arg_reduce(t: Tile) -> None:
    """ArgMax/ArgMin: the reduced axis of the logical view (whole in every tile)."""
    x, y = t.operands[t.node.inputs[0]], t.output()
    axes = [k for k, a in enumerate(x.axes) if a.dim not in y.dims]
    if len(axes) != 1:
        raise t.error(f"the reduced axis is not one axis of the tile's view (axes {axes})")
    t.attrs["axis"] = axes[0]


def window_pads(amap: AxisMap, rng: tuple[int, int], box: tuple[int, int]) -> tuple[int, int]:
    """Padding before and after the input box of a sliding window: the virtual input range of
    the output tile ``rng`` minus the box it was clipped to."""
    lo, hi = rng
    start = lo * amap.stride + amap.offset
    stop = (hi - 1) * amap.stride + amap.offset + amap.span
    a, b = box
    if b > a:
        return a - start, stop - b
    return stop - start, 0                          # the tile sees padding only


def _window_attrs(t: Tile, x: str) -> None:
    """kernel_shape/strides/dilations as 2-D, explicit pads clipped at the tile's borders."""
    p = t.p
    rows, cols = t.axis_of(x, "OH"), t.axis_of(x, "OW")
    axes, box = t.operands[x].axes, t.boxes[x]
    top, bottom = window_pads(axes[rows], t.ranges["OH"], box[rows])
    left, right = window_pads(axes[cols], t.ranges["OW"], box[cols])
    t.attrs.update(kernel_shape=list(p.kernel), strides=list(p.stride), dilations=list(p.dilation),
                   pads=[top, left, bottom, right])
    t.attrs.pop("auto_pad", None)


def _tile_groups(t: Tile) -> int:
    """Groups of the tile's output channels: each touched group must keep as many as the others."""
    p = t.p
    if p.group == 1:
        return 1
    lo, hi = t.ranges["CO"]
    per = p.ch_out // p.group
    first, last = lo // per, (hi - 1) // per
    counts = {min(hi, (g + 1) * per) - max(lo, g * per) for g in range(first, last + 1)}
    if len(counts) > 1:
        raise t.error(f"output channels [{lo}, {hi}) cover the groups of {per} channels unevenly "
                      f"(no grouped convolution computes them; tile CO in multiples of {per})")
    return last - first + 1


def conv(t: Tile) -> None:
    """Conv / RequantizedConv (NCHW or channels-last; 1-D ones become 2-D with one row)."""
    p = t.p
    x = t.node.inputs[0]
    _window_attrs(t, x)
    t.attrs["group"] = _tile_groups(t)
    if is_fused(t.node.op) and not p.channels_last:
        for c in t.node.inputs[-2:]:               # per channel: [C, 1, 1] along NCHW's channel axis
            if any(a.dim == "CO" for a in t.operands[c].axes):
                t.shapes[c] = t.extents(c) + (1, 1)


def maxpool(t: Tile) -> None:
    _window_attrs(t, t.node.inputs[0])
    t.attrs["ceil_mode"] = 0                       # explicit end pads cover the last window


def gemm_requant(t: Tile) -> None:
    """RequantizedGemm/MatMul: per-channel mul/add get the (batch, row, column) axes of the
    output they vary on, size 1 elsewhere, so that they broadcast onto the tile's output."""
    a, b = t.node.inputs[0], t.node.inputs[1]
    rank = 3 if any(ax.dim == "B" for name in (a, b) for ax in t.operands[name].axes) else 2
    for c in t.node.inputs[-2:]:
        axes = t.operands[c].axes
        if not any(ax.dim for ax in axes) or any(ax.dim is None and ax.size > 1 for ax in axes):
            continue
        by_dim = {ax.dim: e for ax, e in zip(axes, t.extents(c)) if ax.dim}
        t.shapes[c] = tuple(by_dim.get(d, 1) for d in ("B", "M", "N"))[3 - rank:]


def transpose(t: Tile) -> None:
    """perm over the logical views: output axis k is the input's axis that follows the same dim."""
    x, y = t.operands[t.node.inputs[0]], t.output()
    t.attrs["perm"] = [x.dims.index(a.dim) for a in y.axes]


def concat(t: Tile) -> None:
    """axis: the logical axis of C; inputs: the parts the tile's C range meets, in order."""
    p = t.node.params
    y = t.output()
    axis = t.axis_of(y.tensor, "C")
    lo, hi = t.ranges["C"]
    inputs, offset = [], 0
    for name, shape in zip(t.node.inputs, p.in_shapes):
        part = shape[p.axis]
        a, b = max(lo, offset) - offset, min(hi, offset + part) - offset
        if a < b and math.prod(shape):
            if name not in t.boxes or t.boxes[name][axis] != (a, b):
                raise t.error(f"input '{name}' is concatenated more than once with different tiles")
            inputs.append(name)
        offset += part
    t.inputs = inputs
    t.attrs["axis"] = axis


def slice_(t: Tile) -> None:
    """Tile-local starts/ends/steps over every axis: slicing the x box gives the y box."""
    p = t.node.params
    x = t.node.inputs[0]
    starts, ends = [], []
    for k, (a, b) in enumerate(t.boxes[x]):
        lo, _ = t.ranges[t.operands[x].axes[k].dim]
        first = p.starts[k] + lo * p.steps[k] - a
        starts.append(first)
        ends.append(b - a if p.steps[k] > 0 else -(b - a) - 1)   # -(n+1) normalises to "before 0"
    axes = list(range(len(starts)))
    if "starts" in t.attrs or "ends" in t.attrs:   # opset < 10: attributes, steps of 1
        t.attrs.update(starts=starts, ends=ends, axes=axes)
        return
    t.inputs = [x] + [t.constant(n, v) for n, v in (("starts", starts), ("ends", ends), ("axes", axes),
                                                    ("steps", list(p.steps)))]


def pad(t: Tile) -> None:
    """Tile-local pads over every axis: how much of the tile is padding before and after the data
    (a tile in the padding only has an empty x box: all padding)."""
    p = t.node.params
    x = t.node.inputs[0]
    if x in t.boxes:
        box = t.boxes[x]
    else:                                          # an empty x is no operand: its (empty) box
        box = tuple(AxisMap(p.in_shape[k], "d", offset=-p.begin[k]).range(*t.ranges[f"p{k}"])
                    for k in range(len(p.in_shape)))
        t.shapes[x] = tuple(b - a for a, b in box)
    begin, end = [], []
    for k, (a, b) in enumerate(box):
        lo, hi = t.ranges[f"p{k}"]
        pb = a + p.begin[k] - lo if b > a else hi - lo
        begin.append(pb)
        end.append(hi - lo - pb - (b - a))
    pads = begin + end
    value = t.node.inputs[2] if len(t.node.inputs) > 2 and t.node.inputs[2] else ""
    if "pads" in t.attrs:
        t.attrs["pads"] = pads
        t.inputs = [x] + (["", value] if value else [])
    else:
        t.inputs = [x, t.constant("pads", pads)] + ([value] if value else [])


def gather(t: Tile) -> None:
    """axis: the logical axis of x that stays whole (the gathered one); indices unchanged."""
    x = t.operands[t.node.inputs[0]]
    t.attrs["axis"] = next(k for k, a in enumerate(x.axes) if a.dim is None)


def expand(t: Tile) -> None:
    """The tile's output extents as Expand's shape."""
    t.inputs = [t.inputs[0], t.constant("shape", t.extents(t.output().tensor))]


def resize(t: Tile) -> None:
    """Given as sizes: the tile's output extents (the scales of its tiled axes are 1, as before)."""
    if t.node.params.from_sizes:
        out = t.extents(t.output().tensor)
        axes = t.attrs.pop("axes", None)
        t.inputs = t.inputs[:2] + ["", t.constant("sizes", out if axes is None else [out[a] for a in axes])]


def reshape(t: Tile) -> None:
    t.inputs = [t.inputs[0], t.constant("shape", [math.prod(t.extents(t.output().tensor))])]
    t.attrs.pop("allowzero", None)
    t.attrs.pop("shape", None)                     # opset < 5: the shape was an attribute


def flatten(t: Tile) -> None:
    t.attrs["axis"] = 0


def squeeze(t: Tile) -> None:
    t.inputs = t.inputs[:1]
    t.attrs["axes"] = []                           # squeeze nothing: the flat tile stays flat


def unsqueeze(t: Tile) -> None:
    t.inputs = t.inputs[:1]
    t.attrs["axes"] = [0]


Restrict = Callable[[Tile], None]


def channels(t: Tile) -> None:
    """Per-channel float ops seen as [N, C, S]: x and y get rank 3 (an N or C of 1 that the logical
    views dropped comes back), the per-channel constants the tile's channels."""
    n = t.ranges.get("N", (0, 1))
    c = t.ranges.get("C", (0, 1))
    n, c = n[1] - n[0], c[1] - c[0]
    x, y = t.node.inputs[0], t.node.outputs[0]
    spatial = math.prod(t.graph.tensors[x].shape[2:])
    t.shapes[x] = (n, c, spatial)
    t.shapes[y] = (n, c, 1 if t.node.op.startswith("Global") else spatial)
    for const in t.node.inputs[1:]:
        if const:
            t.shapes[const] = (c,)


def conv_transpose(t: Tile) -> None:
    """ConvTranspose: the tile's images and output channels, every operand in its original rank."""
    p = t.p
    n = t.ranges.get("N", (0, p.batch))
    m = t.ranges.get("M", (0, p.ch_out))
    n, m = n[1] - n[0], m[1] - m[0]
    x, w = t.node.inputs[0], t.node.inputs[1]
    spatial_in = tuple(t.graph.tensors[x].shape[2:])
    spatial_out = tuple(t.graph.tensors[t.node.outputs[0]].shape[2:])
    t.shapes[x] = (n, p.ch_in) + spatial_in
    t.shapes[w] = (p.ch_in, m // p.group) + tuple(t.graph.tensors[w].shape[2:])
    if p.has_bias:
        t.shapes[t.node.inputs[2]] = (m,)
    t.shapes[t.node.outputs[0]] = (n, m) + spatial_out
