"""Conv (1D/2D; dense, grouped, depthwise, pointwise; strided, padded, dilated): int32 output, int64 when the proven bound of the sums exceeds int32
(ops/_bounds.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, float_result
from Deeploy.ops._attrs import attr_int, attr_ints, require_inputs
from Deeploy.ops.bounds import all_integer, check_int64, conv_bound, magnitude_by_reference, sum_type
from Deeploy.ops.examples import F32, Case, act, const, frand, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register
from Deeploy.ops._window import WindowGeometry, window_fields, window_pads

__all__ = ["ConvParams", "conv_reference"]


@dataclass(frozen=True)
class ConvParams(WindowGeometry):
    """Geometry of a convolution, always as 2-D (a 1-D conv has height 1)."""

    batch: int
    ch_in: int
    ch_out: int
    group: int
    has_bias: bool
    dims: int  # 1 or 2
    channels_last: bool = False  # x [N, *spatial, C], w [K, *kernel, C/group], y [N, *spatial, K]

    @property
    def depthwise(self) -> bool:
        return self.group == self.ch_in and self.group == self.ch_out


def _conv_parse(node, graph):
    require_inputs(node, 2, 3)
    x, w = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    channels_last = bool(attr_int(node, "channels_last", 0))
    x_shape, w_shape = tuple(x.shape), tuple(w.shape)
    if channels_last:  # validate in the NCHW view
        x_shape = (x_shape[0], x_shape[-1]) + x_shape[1:-1]
        w_shape = (w_shape[0], w_shape[-1]) + w_shape[1:-1]
    dims = len(x_shape) - 2
    if dims not in (1, 2) or len(w_shape) != dims + 2:
        raise OpError(node, f"only 1-D and 2-D convolutions are supported (input {list(x.shape)}, "
                      f"weight {list(w.shape)})")
    group = attr_int(node, "group", 1)
    kernel = attr_ints(node, "kernel_shape", tuple(w_shape[2:]))
    strides = attr_ints(node, "strides", (1,) * dims)
    dilations = attr_ints(node, "dilations", (1,) * dims)
    if tuple(kernel) != tuple(w_shape[2:]):
        raise OpError(node, f"kernel_shape {list(kernel)} does not match weight shape {list(w_shape)}")
    ch_in, ch_out = x_shape[1], w_shape[0]
    if group < 1 or ch_in % group or ch_out % group or w_shape[1] * group != ch_in:
        raise OpError(node, f"group={group} does not fit {ch_in} input and {ch_out} output channels "
                      f"with weight shape {list(w_shape)}")
    if min(strides) < 1 or min(dilations) < 1:
        raise OpError(node, "strides and dilations must be positive")
    begin, end = window_pads(node, x_shape[2:], kernel, strides, dilations)
    if len(node.inputs) > 2 and node.inputs[2]:
        b = graph.tensors[node.inputs[2]]
        if b.size != ch_out:
            raise OpError(node, f"bias has {b.size} values, expected {ch_out}")
    out = [(x_shape[2 + a] + begin[a] + end[a] - dilations[a] * (kernel[a] - 1) - 1) // strides[a] + 1
           for a in range(dims)]
    if min(out) < 1:
        raise OpError(node, f"kernel {list(kernel)} is larger than the padded input {list(x_shape[2:])}")
    p = ConvParams(**window_fields(x_shape[2:], out, kernel, strides, dilations, begin, end),
                   batch=x_shape[0], ch_in=ch_in, ch_out=ch_out, group=group,
                   has_bias=len(node.inputs) > 2 and bool(node.inputs[2]), dims=dims, channels_last=channels_last)
    ins = [graph.tensors[i] if i else None for i in node.inputs]
    if all_integer(ins):
        check_int64(node, _conv_bound(p, ins), "the convolution sums", ins)
    return p


def _conv_bound(p: ConvParams, ins) -> int:
    taps = (p.ch_in // p.group) * p.kernel[0] * p.kernel[1]
    return conv_bound(taps, ins[0], ins[1], ins[2] if len(ins) > 2 else None)


def _conv_infer(p: ConvParams, ins):
    """int32, or int64 when the proven bound of the sums needs it."""
    spatial = tuple(p.out_hw if p.dims == 2 else p.out_hw[1:])
    dtype = float_result(*(t.dtype for t in ins if t is not None))
    dtype = dtype or (sum_type(_conv_bound(p, ins)) if all_integer(ins) else INT32)
    if p.channels_last:
        return [((p.batch,) + spatial + (p.ch_out,), dtype)]
    return [((p.batch, p.ch_out) + spatial, dtype)]


def conv_reference(p: ConvParams, x: np.ndarray, w: np.ndarray, b: np.ndarray | None) -> np.ndarray:
    if p.channels_last:
        y = conv_reference(replace(p, channels_last=False), np.moveaxis(x, -1, 1), np.moveaxis(w, -1, 1), b)
        return np.moveaxis(y, 1, -1)
    x = x.reshape(p.batch, p.ch_in, *p.in_hw)
    w = w.reshape(p.ch_out, p.ch_in // p.group, *p.kernel)
    top, left, bottom, right = p.pads
    xp = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    g, cig, cog = p.group, p.ch_in // p.group, p.ch_out // p.group
    (oh, ow), (sh, sw), (dh, dw) = p.out_hw, p.stride, p.dilation
    xg = xp.reshape(p.batch, g, cig, *xp.shape[2:])
    wg = w.reshape(g, cog, cig, *p.kernel)
    floating = x.dtype.kind == "f" or w.dtype.kind == "f"   # float: summed in double, rounded once
    out = np.zeros((p.batch, g, cog, oh, ow), dtype=np.float64 if floating else np.int64)
    if floating:
        xg, wg = xg.astype(np.float64), wg.astype(np.float64)
    for kh in range(p.kernel[0]):
        for kw in range(p.kernel[1]):
            patch = xg[:, :, :, kh * dh: kh * dh + sh * (oh - 1) + 1: sh, kw * dw: kw * dw + sw * (ow - 1) + 1: sw]
            out += np.einsum("ngchw,goc->ngohw", patch, wg[:, :, :, kh, kw])
    out = out.reshape(p.batch, p.ch_out, oh, ow)
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    if floating:
        out = out.astype(np.float32)
    return out if p.dims == 2 else out.reshape(p.batch, p.ch_out, ow)


def _conv_cost(p: ConvParams, ins, outs):
    macs = outs[0].size * (p.ch_in // p.group) * p.kernel[0] * p.kernel[1]
    return Cost(ops=2 * macs, bytes=sum(t.nbytes for t in ins if t is not None) + outs[0].nbytes)


def _conv_reference(p: ConvParams, xs):
    return [conv_reference(p, xs[0], xs[1], xs[2] if len(xs) > 2 else None)]


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _conv_cases(rng):
    def conv(label, x_shape, w_shape, bias=True, **attrs):
        operands = [act(rand(rng, x_shape), F32), const(rand(rng, w_shape), F32)]
        if bias:
            operands.append(const(rand(rng, [w_shape[0]], -4096, 4096), F32))
        return Case(label, tuple(operands), attrs)
    return [
        conv("3x3_pad1_bias", [1, 3, 6, 6], [4, 3, 3, 3], pads=[1, 1, 1, 1]),
        conv("stride2_dilation", [2, 4, 9, 8], [3, 4, 2, 3], bias=False, strides=[2, 2],
             dilations=[2, 1]),
        conv("depthwise_asym_pads", [1, 6, 5, 5], [6, 1, 3, 3], group=6, pads=[0, 1, 2, 1]),
        conv("grouped", [1, 4, 5, 4], [6, 2, 3, 1], group=2, strides=[1, 2]),
        conv("pointwise", [1, 8, 3, 3], [5, 8, 1, 1]),
        conv("conv1d", [1, 3, 10], [4, 3, 3], pads=[2, 0], strides=[2]),
        conv("same_upper_stride2", [1, 2, 7, 6], [3, 2, 3, 3], auto_pad="SAME_UPPER",
             strides=[2, 2]),
        Case("float32_bias", (act(frand(rng, [1, 3, 6, 5]), F32), const(frand(rng, [4, 3, 3, 3]), F32),
                              const(frand(rng, [4]), F32)), dict(pads=[1, 1, 1, 1])),
        Case("float32_depthwise", (act(frand(rng, [1, 4, 6, 6]), F32), const(frand(rng, [4, 1, 3, 3]), F32)),
             dict(group=4, strides=[2, 2])),
    ]


register(OpDef("Conv", _conv_parse, _conv_infer, _conv_reference, _conv_cost,
               traits=frozenset({Trait.STANDARD, Trait.CHANNELS_LAST}), tiling="conv", fuse_slots=3,
               magnitude=magnitude_by_reference(_conv_reference),
               examples=_conv_cases))
