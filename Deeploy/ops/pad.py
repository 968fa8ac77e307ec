"""Pad: ``pads`` from the attribute (opset < 11, and some opset-13 exports) or a constant input
(with the optional opset-18 ``axes`` input). Negative pads crop (first: the other modes then pad
the cropped input). Mode constant: the pad value from the ``value`` attribute or constant input
2, the output type holds both the input's values and the pad value; modes reflect (mirror
without the edge), edge (repeat the edge) and wrap (cyclic) as numpy's ``pad``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import smallest_int_type, widest
from Deeploy.ops._attrs import (attr_float, attr_ints, attr_str, const_float, const_input, in_tensor, is_float_input,
                                normalize_axis, old_form, require_inputs)
from Deeploy.ops.examples import I8, I32, F32, Case, act, const, frand, rand, i64
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["PadParams"]


@dataclass(frozen=True)
class PadParams:
    """Per-axis pads added before/after each axis (negative values crop) and the fill value."""

    in_shape: tuple[int, ...]
    begin: tuple[int, ...]
    end: tuple[int, ...]
    value: int | float
    mode: str = "constant"

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(d + b + e for d, b, e in zip(self.in_shape, self.begin, self.end))

    @property
    def pads_anything(self) -> bool:
        return any(v > 0 for v in self.begin + self.end)


def _pad_parse(node, graph):
    require_inputs(node, 1, 4)
    shape = graph.tensors[node.inputs[0]].shape
    rank = len(shape)
    mode = attr_str(node, "mode", "constant")
    if mode not in _MODES:
        raise OpError(node, f"mode '{mode}' is not one of {', '.join(_MODES)}")
    if "paddings" in node.attrs:
        raise old_form(node, graph, "the 'paddings' attribute", 2)
    if "pads" in node.attrs:
        if in_tensor(node, graph, 1) is not None:
            raise OpError(node, "pads given both as attribute and as input")
        pads = attr_ints(node, "pads")
    else:
        pads = tuple(int(v) for v in const_input(node, graph, 1, "pads").reshape(-1))
    axes_value = const_input(node, graph, 3, "axes", optional=True)
    if axes_value is None:
        axes = list(range(rank))
    else:
        axes = [normalize_axis(node, int(a), rank, "axes") for a in axes_value.reshape(-1)]
        if len(set(axes)) != len(axes):
            raise OpError(node, f"axes {axes_value.reshape(-1).tolist()} repeat an axis")
    if len(pads) != 2 * len(axes):
        raise OpError(node, f"pads {list(pads)} must hold {2 * len(axes)} values "
                      f"(begin and end for {len(axes)} axes)")
    begin, end = [0] * rank, [0] * rank
    for k, a in enumerate(axes):
        begin[a], end[a] = pads[k], pads[len(axes) + k]
    for a in range(rank):
        if shape[a] + min(begin[a], 0) + min(end[a], 0) < 0:
            raise OpError(node, f"pads {list(pads)} crop more than axis {a} of size {shape[a]} holds")
    if mode != "constant":
        _check_source_rows(node, mode, shape, begin, end)
        return PadParams(tuple(shape), tuple(begin), tuple(end), 0, mode)
    value_in = in_tensor(node, graph, 2)
    if is_float_input(node, graph):
        v = const_float(node, graph, 2, "constant_value").reshape(-1) if value_in is not None else \
            np.array([attr_float(node, "value", 0.0)])
        if v.size > 1:
            raise OpError(node, f"constant_value must hold one value, got {v.size}")
        value = float(v[0]) if v.size else 0.0
    elif value_in is not None:
        v = const_input(node, graph, 2, "constant_value").reshape(-1)
        if v.size > 1:
            raise OpError(node, f"constant_value must hold one value, got {v.size}")
        value = int(v[0]) if v.size else 0
    else:
        number = attr_float(node, "value", 0.0)
        if not np.isfinite(number) or number != int(number):
            raise OpError(node, f"pad value {number} is not an integer: only integer networks "
                          "are supported")
        value = int(number)
    return PadParams(tuple(shape), tuple(begin), tuple(end), value)


_MODES = ("constant", "reflect", "edge", "wrap")


def _check_source_rows(node, mode, shape, begin, end) -> None:
    """reflect needs more rows than it pads (onnxruntime's limit), edge and wrap at least one."""
    for a, (d, b, e) in enumerate(zip(shape, begin, end)):
        rows, pad = d + min(b, 0) + min(e, 0), max(b, e, 0)
        if pad and (rows < 1 or mode == "reflect" and pad >= rows):
            raise OpError(node, f"mode '{mode}' pads axis {a} by {pad} from {rows} rows: it needs "
                          f"{'more rows than it pads' if mode == 'reflect' else 'at least one row'}")


def _pad_infer(p: PadParams, ins):
    dtype = ins[0].dtype
    if p.pads_anything and dtype.is_float:
        return [(p.out_shape, dtype)]
    if p.pads_anything and not dtype.holds(p.value, p.value):
        dtype = widest(dtype, smallest_int_type(p.value, p.value))
    return [(p.out_shape, dtype)]


def _pad_reference(p: PadParams, xs):
    x = xs[0]
    crop = tuple(slice(-min(b, 0), d + min(e, 0)) for d, b, e in zip(x.shape, p.begin, p.end))
    x = x[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in zip(p.begin, p.end)]
    if p.mode != "constant":
        return [np.pad(x, widths, mode=p.mode)]
    return [np.pad(x, widths, mode="constant", constant_values=p.value)]


def _pad_cost(p: PadParams, ins, outs):
    return Cost(ops=0, bytes=ins[0].nbytes + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _pad_cases(rng):
    return [
        Case("pads_and_value_inputs", (act(rand(rng, [2, 3, 4]), I8), const(i64(0, 1, 2, 1, 0, 3)),
                                       const(np.array(-7), I8))),
        Case("negative_pads_crop", (act(rand(rng, [3, 5]), I8), const(i64(-1, 2, 0, -2)))),
        Case("opset18_axes_wide_value", (act(rand(rng, [2, 3, 4]), I32), const(i64(1, -1, 2, 0)),
                                         const(np.array(300), I32), const(i64(-1, 1))), opset=18),
        Case("opset10_attributes", (act(rand(rng, [1, 2, 3, 3]), F32),),
             dict(mode="constant", pads=[0, 0, 1, 2, 0, 0, 2, 1], value=5.0), opset=10),
        Case("reflect", (act(rand(rng, [2, 3, 4]), I8), const(i64(0, 2, 3, 0, 1, 2))), dict(mode="reflect")),
        Case("edge_axes", (act(frand(rng, [2, 3, 4]), F32), const(i64(2, 1, 0, 3)), None, const(i64(0, 2))),
             dict(mode="edge"), opset=18),
        Case("wrap_crop", (act(rand(rng, [3, 5]), I32), const(i64(2, -1, -1, 4))), dict(mode="wrap"), opset=19),
    ]


register(OpDef("Pad", _pad_parse, _pad_infer, _pad_reference, _pad_cost,
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT}), tiling="pad",
               magnitude=lambda p, b, ins, outs: [max(b[0], abs(p.value))],
               examples=_pad_cases))
