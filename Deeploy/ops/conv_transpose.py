"""ConvTranspose (float; 1-D and 2-D, grouped, strided, dilated, padded, output_padding): x [N, C,
spatial], weights [C, M/group, kernel], optional bias [M]. Output size per axis:
``stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pad_begin - pad_end``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ops._attrs import attr_int, attr_ints, attr_str, require_inputs
from Deeploy.ops.examples import F32, Case, act, const, frand
from Deeploy.ops.float_math import require_float
from Deeploy.ops._registry import Cost, OpDef, Trait, register
from Deeploy.ops._window import WindowGeometry, window_fields

__all__ = ["ConvTransposeParams", "conv_transpose_reference"]


@dataclass(frozen=True)
class ConvTransposeParams(WindowGeometry):
    """Geometry as 2-D (a 1-D one has height 1); ``pads`` crop the full output (top, left, bottom,
    right)."""

    batch: int
    ch_in: int
    ch_out: int
    group: int
    has_bias: bool
    dims: int


def _parse(node, graph):
    require_inputs(node, 2, 3)
    require_float(node, graph)
    x, w = graph.tensors[node.inputs[0]].shape, graph.tensors[node.inputs[1]].shape
    dims = len(x) - 2
    if dims not in (1, 2) or len(w) != dims + 2:
        raise OpError(node, f"only 1-D and 2-D transposed convolutions are supported (input {list(x)}, weight {list(w)})")
    if attr_str(node, "auto_pad", "NOTSET") != "NOTSET" or "output_shape" in node.attrs:
        raise OpError(node, "auto_pad and output_shape are not supported: give pads and output_padding")
    group = attr_int(node, "group", 1)
    if group < 1 or x[1] != w[0] or x[1] % group:
        raise OpError(node, f"group={group} does not fit {x[1]} input channels and weight shape {list(w)}")
    kernel = tuple(w[2:])
    strides = attr_ints(node, "strides", (1,) * dims)
    dilations = attr_ints(node, "dilations", (1,) * dims)
    pads = attr_ints(node, "pads", (0,) * (2 * dims))
    extra = attr_ints(node, "output_padding", (0,) * dims)
    if min(strides) < 1 or min(dilations) < 1 or min(pads) < 0 or len(pads) != 2 * dims:
        raise OpError(node, f"strides {list(strides)}, dilations {list(dilations)} must be positive and pads "
                      f"{list(pads)} non-negative, {2 * dims} values")
    out = [strides[a] * (x[2 + a] - 1) + extra[a] + (kernel[a] - 1) * dilations[a] + 1 - pads[a] - pads[dims + a]
           for a in range(dims)]
    if min(out) < 1:
        raise OpError(node, f"pads {list(pads)} leave no output")
    if len(node.inputs) > 2 and node.inputs[2] and graph.tensors[node.inputs[2]].size != w[1] * group:
        raise OpError(node, f"bias must hold {w[1] * group} values")
    return ConvTransposeParams(**window_fields(x[2:], out, kernel, strides, dilations, pads[:dims], pads[dims:]),
                               batch=x[0], ch_in=x[1], ch_out=w[1] * group, group=group,
                               has_bias=len(node.inputs) > 2 and bool(node.inputs[2]), dims=dims)


def _infer(p, ins):
    spatial = tuple(p.out_hw) if p.dims == 2 else (p.out_hw[1],)
    return [((p.batch, p.ch_out) + spatial, ins[0].dtype)]


def conv_transpose_reference(p: ConvTransposeParams, x, w, b):
    """Scatter form in double: every input pixel adds its weighted kernel into the full output,
    which the pads then crop."""
    x = x.reshape(p.batch, p.ch_in, *p.in_hw).astype(np.float64)
    cg, mg = p.ch_in // p.group, p.ch_out // p.group
    w = w.reshape(p.ch_in, mg, *p.kernel).astype(np.float64)
    (sh, sw), (dh, dw), (kh, kw) = p.stride, p.dilation, p.kernel
    top, left = p.pads[0], p.pads[1]
    full_h = max(sh * (p.in_hw[0] - 1) + (kh - 1) * dh + 1, top + p.out_hw[0])
    full_w = max(sw * (p.in_hw[1] - 1) + (kw - 1) * dw + 1, left + p.out_hw[1])
    full = np.zeros((p.batch, p.ch_out, full_h, full_w))
    for g in range(p.group):
        xg = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                contrib = np.einsum("nchw,cm->nmhw", xg, w[g * cg:(g + 1) * cg, :, i, j])
                full[:, g * mg:(g + 1) * mg, i * dh: i * dh + sh * (p.in_hw[0] - 1) + 1: sh,
                     j * dw: j * dw + sw * (p.in_hw[1] - 1) + 1: sw] += contrib
    y = full[:, :, top:top + p.out_hw[0], left:left + p.out_hw[1]]
    if b is not None:
        y = y + b.astype(np.float64).reshape(1, -1, 1, 1)
    y = y.astype(np.float32)
    return y if p.dims == 2 else y.reshape(p.batch, p.ch_out, p.out_hw[1])


def _cost(p, ins, outs):
    macs = p.batch * p.ch_in * p.in_hw[0] * p.in_hw[1] * (p.ch_out // p.group) * p.kernel[0] * p.kernel[1]
    return Cost(ops=2 * macs, bytes=sum(t.nbytes for t in ins if t is not None) + outs[0].nbytes)


def _cases(rng):
    return [Case("stride2_bias", (act(frand(rng, [1, 3, 4, 5]), F32), const(frand(rng, [3, 2, 3, 3]), F32),
                                  const(frand(rng, [2]), F32)), dict(strides=[2, 2])),
            Case("pads_output_padding", (act(frand(rng, [2, 2, 3, 3]), F32), const(frand(rng, [2, 4, 3, 2]), F32)),
                 dict(strides=[2, 1], pads=[1, 0, 1, 1], output_padding=[1, 0])),
            Case("grouped_dilated", (act(frand(rng, [1, 4, 4, 4]), F32), const(frand(rng, [4, 1, 2, 2]), F32)),
                 dict(group=2, dilations=[2, 2])),
            Case("conv1d", (act(frand(rng, [1, 2, 6]), F32), const(frand(rng, [2, 3, 4]), F32)),
                 dict(strides=[2], pads=[1, 1]))]


register(OpDef("ConvTranspose", _parse, _infer,
               lambda p, xs: [conv_transpose_reference(p, xs[0], xs[1], xs[2] if len(xs) > 2 else None)], _cost,
               traits=frozenset({Trait.STANDARD, Trait.FLOAT_ONLY}), tiling="conv_transpose", examples=_cases))
