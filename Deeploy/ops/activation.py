"""Element-wise activations: the integer iGELU and iHardswish (int32 outputs, see
specs/integer-ops.md), and Relu and Clip, which keep the input's type. Clip bounds come from
attributes (opset < 11) or constant inputs; a non-integer bound is rounded inward, which is exact
on integer data."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, smallest_int_type, widest
from Deeploy.ops._attrs import attr_float, attr_int, const_float, const_input, in_tensor, is_float_input, require_inputs
from Deeploy.ops.bounds import output_type_magnitudes
from Deeploy.ops.examples import I8, I32, F32, Case, act, const, frand, rand, tensor_attr
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["IGELUParams", "IHardswishParams", "ClipParams", "UnaryParams"]


def _elementwise_cost(ops_per_value):
    return lambda p, ins, outs: Cost(ops=ops_per_value * outs[0].size,
                                     bytes=ins[0].nbytes + outs[0].nbytes)


@dataclass(frozen=True)
class UnaryParams:
    shape: tuple[int, ...]


# ---- iGELU ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class IGELUParams:
    """``y = x * ((one + L) >> 1)`` with ``L = sign(x)*(one - (min(|x|, -b) + b)^2)``."""

    shape: tuple[int, ...]
    b: int
    one: int


def _igelu_parse(node, graph):
    require_inputs(node, 1)
    b, one = attr_int(node, "b"), attr_int(node, "one")
    if b >= 0:
        raise OpError(node, f"attribute 'b' must be negative, got {b}")
    return IGELUParams(tuple(graph.tensors[node.inputs[0]].shape), b, one)


def _igelu_reference(p: IGELUParams, xs):
    x = xs[0]
    q = np.minimum(np.abs(x), -p.b)
    erf = np.sign(x) * (p.one - (q + p.b) ** 2)
    return [x * ((p.one + erf) >> 1)]


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _relu_cases(rng):
    return [Case("int8", (act(rand(rng, [3, 7]), I8),), opset=14),
            Case("int32", (act(rand(rng, [3, 7], -2**31, 2**31 - 1), I32),), opset=14),
            Case("fake_float", (act(rand(rng, [2, 8]), F32),)),
            Case("float32", (act(frand(rng, [2, 9]), F32),))]


def _clip_cases(rng):
    x = lambda: act(rand(rng, [4, 6]), I8)  # noqa: E731
    bound = lambda v: const(np.array(v), I8)  # noqa: E731
    return [Case("min_max_inputs", (x(), bound(-5), bound(9))),
            Case("max_only", (x(), None, bound(3))),
            Case("min_only", (x(), bound(-3))),
            Case("min_above_max", (x(), bound(10), bound(-10))),
            Case("int32_bounds_beyond_int8", (x(), bound(-128), bound(127))),
            Case("opset6_float_attrs", (act(rand(rng, [4, 5]), F32),),
                 dict(min=-5.0, max=9.0), opset=6),
            Case("opset6_min_attr_only", (act(rand(rng, [4, 5]), F32),), dict(min=-3.0), opset=6),
            Case("float32_bounds", (act(frand(rng, [4, 5]), F32), const(np.array(-1.25, F32)),
                                    const(np.array(2.5, F32)))),
            Case("float32_max_only", (act(frand(rng, [3, 4]), F32), None, const(np.array(0.75, F32))))]


def _igelu_cases(rng):
    def gelu(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="int32")
    edges = np.array([-128, -36, -35, -34, -1, 0, 1, 34, 35, 36, 127])
    return [
        gelu("int8_ibert_scale", rand(rng, [4, 32]), b=-35, one=1355),
        gelu("edges_around_b", edges, b=-35, one=1355),
        gelu("all_int8_odd_one_negative_half", np.arange(-128, 128), b=-40, one=501),
        gelu("int16_inputs_tensor_attrs", rand(rng, [2, 20], -3000, 3000),
             b=tensor_attr(-600), one=tensor_attr(400001)),
    ]


def _ihardswish_cases(rng):
    def hs(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="int32")
    edges = np.array([-128, -61, -60, -59, 0, 59, 60, 61, 127])
    return [
        hs("int8", rand(rng, [4, 16]), one_over_six=2731, three=60, six=120),
        hs("edges_around_three_six", edges, one_over_six=2731, three=60, six=120),
        hs("all_int8", np.arange(-128, 128).reshape(16, 16), one_over_six=5461, three=32,
           six=64),
        hs("int16_inputs", rand(rng, [3, 10], -2000, 2000), one_over_six=11, three=300, six=600),
    ]


register(OpDef("iGELU", _igelu_parse, lambda p, ins: [(p.shape, INT32)], _igelu_reference,
               _elementwise_cost(7),
               traits=frozenset({Trait.ELEMENTWISE}), tiling="pointwise", fuse_slots=0,
               magnitude=lambda p, b, ins, outs: [b[0] * ((abs(p.one) + p.b * p.b + abs(p.one)) // 2 + 1)],
               examples=_igelu_cases, value_attrs=frozenset({"b", "one"})))


# ---- iHardswish ----------------------------------------------------------------------------
@dataclass(frozen=True)
class IHardswishParams:
    """``y = x * (clip(x + three, 0, six) * one_over_six)``."""

    shape: tuple[int, ...]
    one_over_six: int
    three: int
    six: int


def _ihardswish_parse(node, graph):
    require_inputs(node, 1)
    one_over_six, three, six = (attr_int(node, k) for k in ("one_over_six", "three", "six"))
    if six < 0:
        raise OpError(node, f"attribute 'six' must be non-negative, got {six}")
    return IHardswishParams(tuple(graph.tensors[node.inputs[0]].shape), one_over_six, three, six)


def _ihardswish_reference(p: IHardswishParams, xs):
    x = xs[0]
    return [x * (np.clip(x + p.three, 0, p.six) * p.one_over_six)]


register(OpDef("iHardswish", _ihardswish_parse, lambda p, ins: [(p.shape, INT32)],
               _ihardswish_reference, _elementwise_cost(4),
               traits=frozenset({Trait.ELEMENTWISE}), tiling="pointwise", fuse_slots=0,
               magnitude=lambda p, b, ins, outs: [b[0] * max(abs(p.six), abs(p.three) + b[0]) * abs(p.one_over_six)],
               examples=_ihardswish_cases, value_attrs=frozenset({"one_over_six", "three", "six"})))


# ---- Relu ----------------------------------------------------------------------------------
def _relu_parse(node, graph):
    require_inputs(node, 1)
    return UnaryParams(tuple(graph.tensors[node.inputs[0]].shape))


register(OpDef("Relu", _relu_parse, lambda p, ins: [(p.shape, ins[0].dtype)],
               lambda p, xs: [np.maximum(xs[0], 0)], _elementwise_cost(1),
               traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE}), tiling="pointwise",
               examples=_relu_cases))


# ---- Clip ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class ClipParams:
    """Integer bounds (None: unbounded on that side); ``lo > hi`` yields ``hi`` everywhere."""

    shape: tuple[int, ...]
    lo: int | None
    hi: int | None


def _float_clip_bound(node, graph, index, name):
    """A float network's bound: float32, None when absent."""
    if in_tensor(node, graph, index) is not None:
        value = const_float(node, graph, index, name).reshape(-1)
        if value.size != 1:
            raise OpError(node, f"'{name}' must hold one value, got {value.size}")
        return float(np.float32(value[0]))
    number = attr_float(node, name, None)
    return None if number is None else float(np.float32(number))


def _clip_bound(node, graph, index, name, inward):
    if is_float_input(node, graph):
        return _float_clip_bound(node, graph, index, name)
    if in_tensor(node, graph, index) is not None:
        if name in node.attrs:
            raise OpError(node, f"'{name}' given both as attribute and as input")
        value = const_input(node, graph, index, name).reshape(-1)
        if value.size != 1:
            raise OpError(node, f"'{name}' must hold one value, got {value.size}")
        return int(value[0])
    number = attr_float(node, name, None)
    if number is None or math.isinf(number) or abs(number) >= 2.0 ** 62:
        return None  # absent, or the float type's extreme: no bound on integer data
    if math.isnan(number):
        raise OpError(node, f"'{name}' is NaN")
    return int(inward(number))


def _clip_parse(node, graph):
    require_inputs(node, 1, 3)
    lo = _clip_bound(node, graph, 1, "min", math.ceil)
    hi = _clip_bound(node, graph, 2, "max", math.floor)
    return ClipParams(tuple(graph.tensors[node.inputs[0]].shape), lo, hi)


def _clip_reference(p: ClipParams, xs):
    y = xs[0]
    if y.dtype.kind == "f":
        lo, hi = (None if b is None else np.float32(b) for b in (p.lo, p.hi))
        return [np.minimum(np.maximum(y, lo) if lo is not None else y, hi) if hi is not None else
                (np.maximum(y, lo) if lo is not None else y)]
    if p.lo is not None:
        y = np.maximum(y, p.lo)
    if p.hi is not None:
        y = np.minimum(y, p.hi)
    return [y]


def _clip_infer(p: ClipParams, ins):
    """The input's type, unless a bound lies beyond it (then widened to hold the bound)."""
    dtype = ins[0].dtype
    if dtype.is_float:
        return [(p.shape, dtype)]
    bounds = _clip_reference(p, [np.array([dtype.min, dtype.max], dtype=np.int64)])[0]
    lo, hi = int(bounds.min()), int(bounds.max())
    if not dtype.holds(lo, hi):
        dtype = widest(dtype, smallest_int_type(lo, hi))
    return [(p.shape, dtype)]


register(OpDef("Clip", _clip_parse, _clip_infer, _clip_reference, _elementwise_cost(2),
               traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE}), tiling="pointwise",
               magnitude=output_type_magnitudes,
               examples=_clip_cases))
