"""MaxPool (1D/2D; kernel_shape, strides, pads, dilations, auto_pad, ceil_mode): the output keeps
the input's type; the optional Indices output (int64) holds the flat index into x of each window's
first maximum (in window order), spatial position row-major, or column-major with
``storage_order=1``; AveragePool (float) over the same geometry. Padding never wins a max: padded taps are ignored, and a geometry in which some
window sees padding only is rejected."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT64
from Deeploy.ops._attrs import attr_int, attr_ints, require_inputs
from Deeploy.ops.examples import F32, I8, U8, Case, act, frand, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register
from Deeploy.ops._window import WindowGeometry, window_fields, window_pads

__all__ = ["MaxPoolParams", "maxpool_reference", "AvgPoolParams", "avgpool_reference"]


@dataclass(frozen=True)
class MaxPoolParams(WindowGeometry):
    """Geometry of a max pooling, always as 2-D (a 1-D pooling has height 1).

    ``pads`` are the attribute's pads; with ``ceil_mode`` the last window of an axis may reach
    past ``in + pad_begin + pad_end``: those taps count as padding too.
    """

    batch: int
    channels: int
    ceil_mode: bool
    dims: int  # 1 or 2
    indices: bool = False        # the Indices output
    storage_order: int = 0       # 1: Indices count spatial positions column-major

    @property
    def window(self) -> int:
        return self.kernel[0] * self.kernel[1]


def _out_size(in_size, begin, end, k, s, d, ceil_mode):
    span = in_size + begin + end - d * (k - 1) - 1
    if not ceil_mode:
        return span // s + 1 if span >= 0 else 0
    out = -(-span // s) + 1  # may be 1 for a small negative span: the window reaches past the end
    if (out - 1) * s >= in_size + begin:  # the last window would start in the end padding
        out -= 1
    return out


def _maxpool_parse(node, graph):
    require_inputs(node, 1)
    x = graph.tensors[node.inputs[0]]
    storage_order = attr_int(node, "storage_order", 0)
    if storage_order not in (0, 1):
        raise OpError(node, f"storage_order={storage_order} must be 0 (row major) or 1 (column major)")
    dims = len(x.shape) - 2
    if dims not in (1, 2):
        raise OpError(node, f"only 1-D and 2-D max pooling is supported (input {list(x.shape)})")
    kernel = attr_ints(node, "kernel_shape")
    strides = attr_ints(node, "strides", (1,) * dims)
    dilations = attr_ints(node, "dilations", (1,) * dims)
    ceil_mode = bool(attr_int(node, "ceil_mode", 0))
    for name, value in (("kernel_shape", kernel), ("strides", strides), ("dilations", dilations)):
        if len(value) != dims:
            raise OpError(node, f"{name} {list(value)} must hold {dims} values for a "
                          f"rank-{len(x.shape)} input")
        if min(value) < 1:
            raise OpError(node, f"{name} {list(value)} must be positive")
    begin, end = window_pads(node, x.shape[2:], kernel, strides, dilations)
    out = []
    for a in range(dims):
        size, k, s, d = x.shape[2 + a], kernel[a], strides[a], dilations[a]
        n = _out_size(size, begin[a], end[a], k, s, d, ceil_mode)
        if n < 1:
            raise OpError(node, f"kernel {list(kernel)} (dilations {list(dilations)}) does not fit "
                          f"spatial axis {a} of the input {list(x.shape)} padded by "
                          f"{list(begin) + list(end)}")
        for o in range(n):
            taps = o * s - begin[a] + d * np.arange(k)
            if not np.any((taps >= 0) & (taps < size)):
                raise OpError(node, f"window {o} along spatial axis {a} covers padding only "
                              f"(pads {list(begin) + list(end)}, kernel {list(kernel)})")
        out.append(n)
    return MaxPoolParams(**window_fields(x.shape[2:], out, kernel, strides, dilations, begin, end),
                         batch=x.shape[0], channels=x.shape[1], ceil_mode=ceil_mode, dims=dims,
                         indices=len(node.outputs) > 1 and bool(node.outputs[1]), storage_order=storage_order)


def _maxpool_infer(p: MaxPoolParams, ins):
    shape = (p.batch, p.channels) + tuple(p.out_hw if p.dims == 2 else p.out_hw[1:])
    return [(shape, ins[0].dtype), (shape, INT64)]


def maxpool_reference(p: MaxPoolParams, x: np.ndarray, with_indices: bool = False):
    """y; with ``with_indices`` also the Indices output."""
    x = x.reshape(p.batch, p.channels, *p.in_hw)
    (oh, ow), (sh, sw), (dh, dw), (kh, kw) = p.out_hw, p.stride, p.dilation, p.kernel
    top, left, _, _ = p.pads
    # pad far enough for every window (ceil_mode may reach past the end pads) with a value
    # below any input, so that padding never wins (parse guarantees a real tap per window)
    need_h = (oh - 1) * sh + (kh - 1) * dh + 1
    need_w = (ow - 1) * sw + (kw - 1) * dw + 1
    bottom = max(need_h - top - p.in_hw[0], 0)
    right = max(need_w - left - p.in_hw[1], 0)
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(np.int64).min
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=low)
    out = np.full((p.batch, p.channels, oh, ow), low, dtype=x.dtype)
    index = np.zeros(out.shape, dtype=np.int64)
    h, w = p.in_hw
    oy, ox = np.arange(oh)[:, None] * sh - top, np.arange(ow)[None, :] * sw - left
    plane = (np.arange(p.batch)[:, None] * p.channels + np.arange(p.channels)[None, :])[:, :, None, None] * (h * w)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            wins = patch > out    # the first maximum in window order
            iy, ix = oy + i * dh, ox + j * dw
            index = np.where(wins, plane + (ix * h + iy if p.storage_order else iy * w + ix), index)
            np.maximum(out, patch, out=out)
    shape = (p.batch, p.channels) + ((oh, ow) if p.dims == 2 else (ow,))
    return (out.reshape(shape), index.reshape(shape)) if with_indices else out.reshape(shape)


def _maxpool_cost(p: MaxPoolParams, ins, outs):
    return Cost(ops=outs[0].size * p.window, bytes=ins[0].nbytes + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _maxpool_cases(rng):
    def pool(label, shape, dtype=I8, lo=-128, hi=127, **attrs):
        return Case(label, (act(rand(rng, shape, lo, hi), dtype),), attrs, opset=12)
    return [
        pool("2x2_stride2", [1, 3, 6, 6], kernel_shape=[2, 2], strides=[2, 2]),
        pool("3x3_stride2_pad1", [2, 2, 7, 7], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1]),
        pool("ceil_mode", [1, 2, 7, 6], kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
        pool("dilation_asym_pads", [1, 1, 8, 9], kernel_shape=[2, 3], dilations=[2, 2],
             pads=[1, 0, 0, 2]),
        pool("1d", [1, 4, 11], kernel_shape=[3], strides=[2], pads=[1, 1]),
        pool("same_lower_uint8", [1, 2, 5, 5], U8, 0, 255, kernel_shape=[2, 2], strides=[2, 2],
             auto_pad="SAME_LOWER"),
        Case("indices_pad_dilation", (act(frand(rng, [2, 3, 7, 6]), F32),),
             dict(kernel_shape=[3, 2], pads=[1, 1, 1, 0], dilations=[1, 2], strides=[2, 1]), opset=12,
             more_outputs=("int64",)),
        Case("indices_column_major_ties", (act(rand(rng, [1, 2, 6, 5], -3, 3, extremes=False), I8),),
             dict(kernel_shape=[2, 3], strides=[2, 2], storage_order=1, ceil_mode=1), opset=12,
             more_outputs=("int64",)),
        Case("indices_1d", (act(frand(rng, [2, 2, 9]), F32),), dict(kernel_shape=[3], strides=[2], pads=[1, 1]),
             opset=12, more_outputs=("int64",)),
    ]


register(OpDef("MaxPool", _maxpool_parse, _maxpool_infer,
               lambda p, xs: list(maxpool_reference(p, xs[0], with_indices=True)), _maxpool_cost,
               traits=frozenset({Trait.STANDARD, Trait.QUANT_TRANSPARENT}), tiling="maxpool",
               examples=_maxpool_cases))


# ---- AveragePool (float) --------------------------------------------------------------------
@dataclass(frozen=True)
class AvgPoolParams(MaxPoolParams):
    """A max pooling's geometry; ``count_include_pad``: padded taps count in the divisor."""

    count_include_pad: bool = False


def _avgpool_parse(node, graph):
    from Deeploy.ops.float_math import require_float
    require_float(node, graph)
    p = _maxpool_parse(node, graph)
    return AvgPoolParams(**{f: getattr(p, f) for f in p.__dataclass_fields__},
                         count_include_pad=bool(attr_int(node, "count_include_pad", 0)))


def avgpool_reference(p: AvgPoolParams, x: np.ndarray) -> np.ndarray:
    """Window sums in double over the taps inside the input, divided by the taps counted."""
    x = x.reshape(p.batch, p.channels, *p.in_hw).astype(np.float64)
    (oh, ow), (sh, sw), (dh, dw), (kh, kw) = p.out_hw, p.stride, p.dilation, p.kernel
    top, left, bottom, right = p.pads
    total = np.zeros((p.batch, p.channels, oh, ow))
    count = np.zeros((oh, ow))
    for i in range(kh):
        for j in range(kw):
            rows = np.arange(oh) * sh - top + i * dh
            cols = np.arange(ow) * sw - left + j * dw
            inside = ((rows >= 0) & (rows < p.in_hw[0]))[:, None] & ((cols >= 0) & (cols < p.in_hw[1]))[None, :]
            padded = ((rows >= -top) & (rows < p.in_hw[0] + bottom))[:, None] & \
                     ((cols >= -left) & (cols < p.in_hw[1] + right))[None, :]
            count += padded if p.count_include_pad else inside
            r, c = np.clip(rows, 0, p.in_hw[0] - 1), np.clip(cols, 0, p.in_hw[1] - 1)
            total += np.where(inside, x[:, :, r][:, :, :, c], 0.0)
    out = (total / count).astype(np.float32)
    return out if p.dims == 2 else out.reshape(p.batch, p.channels, ow)


def _avgpool_cases(rng):
    def pool(label, shape, **attrs):
        return Case(label, (act(frand(rng, shape), F32),), attrs, opset=19)
    return [pool("2x2_stride1", [1, 3, 5, 5], kernel_shape=[2, 2]),
            pool("3x3_pad1_exclude", [1, 2, 6, 6], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
            pool("3x3_pad1_include", [1, 2, 6, 6], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1),
            pool("1d", [1, 4, 9], kernel_shape=[2], strides=[1])]


register(OpDef("AveragePool", _avgpool_parse, _maxpool_infer,
               lambda p, xs: [avgpool_reference(p, xs[0])], _maxpool_cost,
               traits=frozenset({Trait.STANDARD, Trait.FLOAT_ONLY}), tiling="maxpool",
               examples=_avgpool_cases))
