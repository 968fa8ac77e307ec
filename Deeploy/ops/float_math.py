"""Float element-wise math: the unary ops Sqrt, Exp, Log, Erf, Tanh, Neg, Abs, Reciprocal, Ceil,
Floor, Round, Sigmoid, HardSigmoid, HardSwish, Swish, Gelu (ONNX and com.microsoft) and the broadcasting Div and Pow. They compute on
float32 (bfloat16 operands widened, results rounded back) and keep the input's float type;
integer networks use the integer ops (iGELU, iHardswish, IntegerDiv) instead. A Div of integer
constants (shape arithmetic) folds, its quotient truncated toward zero as ONNX's; so runs a Div of
two integer tensors under ONNX integer semantics, in their type."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import onnx

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import DType, float_result, wrapped
from Deeploy.ops._attrs import attr_float, attr_str, broadcast_shape, refuse_axis_broadcast, require_inputs
from Deeploy.ops.examples import F32, I8, I32, I64, U8, Case, act, const, frand, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["FloatUnaryParams", "require_float", "UNARY_FLOAT_OPS"]


def require_float(node, graph, what: str = "") -> None:
    """OpError unless some input of ``node`` is a float tensor."""
    types = [graph.tensors[i].dtype for i in node.inputs if i]
    if float_result(*types) is None:
        raise OpError(node, f"computes on float tensors only, got {', '.join(map(str, types))}"
                      f"{what or '; integer networks use the integer ops (see specs/integer-ops.md)'}")


@dataclass(frozen=True)
class FloatUnaryParams:
    """Shape and the op's float attributes (alpha, beta; Gelu's tanh approximation)."""

    shape: tuple[int, ...]
    alpha: float = 0.0
    beta: float = 0.0
    tanh: bool = False


_DEFAULTS = {"HardSigmoid": (0.2, 0.5), "Swish": (1.0, 0.0)}


def _unary_parse(node, graph):
    require_inputs(node, 1)
    require_float(node, graph)
    alpha, beta = _DEFAULTS.get(node.op, (0.0, 0.0))
    approx = attr_str(node, "approximate", "none") if node.op == "Gelu" else "none"
    if approx not in ("none", "tanh"):
        raise OpError(node, f"approximate='{approx}' is not one of 'none', 'tanh'")
    return FloatUnaryParams(tuple(graph.tensors[node.inputs[0]].shape), attr_float(node, "alpha", alpha),
                            attr_float(node, "beta", beta), approx == "tanh")


def _sigmoid(x):
    return (1.0 / (1.0 + np.exp(-x.astype(np.float64)))).astype(np.float32)


def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _gelu(p, x):
    x64 = x.astype(np.float64)
    if p.tanh:
        return 0.5 * x64 * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64 ** 3)))
    return 0.5 * x64 * (1.0 + _erf(x64 / math.sqrt(2.0)))


UNARY_FLOAT_OPS = {
    "Sqrt": (lambda p, x: np.sqrt(x), 1),
    "Exp": (lambda p, x: np.exp(x), 1),
    "Log": (lambda p, x: np.log(x.astype(np.float64)), 1),
    "Erf": (lambda p, x: _erf(x), 1),
    "Tanh": (lambda p, x: np.tanh(x.astype(np.float64)), 1),
    "Neg": (lambda p, x: -x, 1),
    "Abs": (lambda p, x: np.abs(x), 1),
    "Reciprocal": (lambda p, x: np.float32(1) / x, 1),
    "Ceil": (lambda p, x: np.ceil(x), 1),
    "Floor": (lambda p, x: np.floor(x), 1),
    "Round": (lambda p, x: np.round(x), 1),      # half to even, as ONNX
    "Sigmoid": (lambda p, x: _sigmoid(x), 4),
    "HardSigmoid": (lambda p, x: np.clip(np.float32(p.alpha) * x + np.float32(p.beta), 0, 1), 3),
    "HardSwish": (lambda p, x: x * np.clip(x / np.float32(6) + np.float32(0.5), 0, 1), 4),
    "Swish": (lambda p, x: x * _sigmoid(np.float32(p.alpha) * x), 5),
    "Gelu": (_gelu, 8),
}

_SAMPLES = {"Sqrt": (0.0, 9.0), "Exp": (-6.0, 6.0), "Log": (0.05, 20.0), "Reciprocal": (0.25, 8.0)}


def _unary_cases(name):
    lo, hi = _SAMPLES.get(name, (-5.0, 5.0))
    attrs = {"HardSigmoid": dict(alpha=0.25, beta=0.4), "Swish": dict(alpha=1.1)}.get(name, {})
    opset = {"HardSwish": 14, "Swish": 24, "Gelu": 20}.get(name, 13)

    def cases(rng):
        out = [Case("f32", (act(frand(rng, [2, 3, 8], lo, hi), F32),), opset=opset),
               Case("f32_attrs" if attrs else "f32_row", (act(frand(rng, [17], lo, hi), F32),), attrs, opset=opset)]
        if name in ("Ceil", "Floor", "Round"):
            out.append(Case("halves", (act(np.arange(-8, 8, dtype=np.float32) / 2, F32),), opset=opset))
        if name == "Gelu":
            out.append(Case("tanh", (act(frand(rng, [4, 5], lo, hi), F32),), dict(approximate="tanh"), opset=20))
        return out
    return cases


def _unary_reference(fn):
    return lambda p, xs: [np.asarray(fn(p, xs[0].astype(np.float32))).astype(np.float32)]


def _unary_cost(ops):
    return lambda p, ins, outs: Cost(ops=ops * outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes)


for _name, (_fn, _ops) in UNARY_FLOAT_OPS.items():
    register(OpDef(_name, _unary_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _unary_reference(_fn),
                   _unary_cost(_ops), traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE, Trait.FLOAT_ONLY}), tiling="pointwise",
                   examples=_unary_cases(_name)))


# ---- Div, Pow ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class FloatBinaryParams:
    """Output shape; ``onnx_type``: the integer type of a Div of two integer tensors under ONNX
    integer semantics (``Graph.onnx_integers``), which truncates toward zero (by 0: 0) and wraps."""

    shape: tuple[int, ...]
    onnx_type: DType | None = None


def _binary_parse(node, graph, integer_constants: bool = False):
    """``integer_constants``: also integer constants (shape arithmetic, which folds)."""
    require_inputs(node, 2)
    if not integer_constants or not all(graph.is_constant(i) for i in node.inputs):
        require_float(node, graph)
    refuse_axis_broadcast(node, graph)
    return FloatBinaryParams(broadcast_shape(node, [graph.tensors[i].shape for i in node.inputs]))


def _div_parse(node, graph):
    """Div: float, integer constants (folded), or two integer tensors of one type under ONNX
    integer semantics."""
    require_inputs(node, 2)
    a, b = (graph.tensors[i] for i in node.inputs)
    constant = graph.is_constant(a.name) and graph.is_constant(b.name)
    if constant or not (graph.onnx_integers and a.dtype.is_integer and b.dtype.is_integer):
        return _binary_parse(node, graph, integer_constants=True)
    if a.dtype != b.dtype:
        raise OpError(node, f"operands '{a.name}' ({a.dtype}) and '{b.name}' ({b.dtype}) differ in type; "
                      "ONNX requires one type: Cast one of them")
    refuse_axis_broadcast(node, graph)
    return FloatBinaryParams(broadcast_shape(node, [a.shape, b.shape]), a.dtype)


def _binary_infer(p, ins):
    if p.onnx_type is not None:
        return [(p.shape, p.onnx_type)]
    return [(p.shape, float_result(ins[0].dtype) or float_result(ins[1].dtype) or ins[0].dtype)]


def _pow(a, b):
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return np.power(a.astype(np.float32), b.astype(np.float32))


def _div(a, b):
    if a.dtype.kind == b.dtype.kind == "i":   # integer constants: the quotient truncated toward zero
        with np.errstate(divide="ignore"):
            return np.abs(a) // np.where(b == 0, 1, np.abs(b)) * np.sign(a) * np.sign(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.divide(a.astype(np.float32), b.astype(np.float32))


def _div_cases(rng):
    return [Case("same_shape", (act(frand(rng, [2, 3, 4]), F32), act(frand(rng, [2, 3, 4], 0.5, 4.0), F32))),
            Case("scalar_const", (act(frand(rng, [4, 5]), F32), const(np.array([0.37], F32)))),
            Case("row_broadcast", (act(frand(rng, [3, 4]), F32), act(-frand(rng, [4], 0.5, 2.0), F32))),
            # integer tensors (ONNX integer semantics): truncated toward zero, in the operands' type
            Case("int8_truncates", (act(rand(rng, [3, 5]), I8), act(_nonzero(rand(rng, [3, 5], -9, 9)), I8)),
                 out_type="int8", opset=14),
            Case("uint8_row_broadcast", (act(rand(rng, [4, 6], 0, 255), U8), act(rand(rng, [6], 1, 255), U8)),
                 out_type="uint8", opset=14),
            Case("int32_scalar_const", (act(rand(rng, [2, 7], -2**31 + 1, 2**31 - 1), I32), const(np.array(-3, np.int32))),
                 out_type="int32"),
            Case("int64_minus_one", (act(rand(rng, [5], -2**40, 2**40), I64), act(np.array([-1, 7, -7, 2, -1]), I64)),
                 out_type="int64")]


def _nonzero(x: np.ndarray) -> np.ndarray:
    """``x`` with its zeros replaced by 1 (divisors)."""
    return np.where(x == 0, 1, x)


def _pow_cases(rng):
    return [Case("scalar_two", (act(frand(rng, [3, 8]), F32), const(np.array(2.0, F32)))),
            Case("fractional", (act(frand(rng, [2, 6], 0.1, 5.0), F32), const(np.array(0.5, F32)))),
            Case("vector", (act(frand(rng, [2, 3, 4], 0.1, 3.0), F32), act(frand(rng, [2, 3, 4], -2, 2), F32)))]


def _div_reference(p, xs):
    y = _div(xs[0], xs[1])
    return [y if p.onnx_type is None else wrapped(y, p.onnx_type)]


_BINARY = frozenset({Trait.STANDARD, Trait.ELEMENTWISE, Trait.BROADCASTING})
register(OpDef("Div", _div_parse, _binary_infer, _div_reference,
               _unary_cost(1), traits=_BINARY | {Trait.FLOAT_ONLY}, tiling="broadcast", examples=_div_cases))
register(OpDef("Pow", _binary_parse, _binary_infer, lambda p, xs: [_pow(xs[0], xs[1])],
               _unary_cost(8), traits=_BINARY | {Trait.FLOAT_ONLY}, tiling="broadcast", examples=_pow_cases))


# ---- Cast between float and integer types ------------------------------------------------------
@dataclass(frozen=True)
class CastParams:
    """The target type; a float to integer cast truncates toward zero and saturates (NaN: 0), an
    integer to integer cast keeps the target's low bits (wraps around)."""

    shape: tuple[int, ...]
    to: object   # DType


def _cast_parse(node, graph):
    from Deeploy.ir.dtypes import dtype_of_onnx
    from Deeploy.ops._attrs import attr_int, old_form
    require_inputs(node, 1)
    if isinstance(node.attrs.get("to"), (str, bytes)):   # opset < 6: a type name
        raise old_form(node, graph, "a type name in 'to'", 6)
    to = dtype_of_onnx(attr_int(node, "to"))
    if attr_int(node, "to") == onnx.TensorProto.BOOL:
        raise OpError(node, "casts to bool, which is not supported; compare with Equal or Greater instead")
    if to is None:
        raise OpError(node, f"casts to an unsupported element type ({attr_int(node, 'to')})")
    return CastParams(tuple(graph.tensors[node.inputs[0]].shape), to)


def _cast_reference(p, xs):
    x = xs[0]
    if p.to.is_float:
        return [x.astype(np.float32)]
    if x.dtype.kind == "f":
        return [np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0), p.to.min, p.to.max).astype(np.int64)]
    return [x.astype(p.to.numpy).astype(np.int64)]


def _cast_cases(rng):
    return [Case("float_to_int8", (act(frand(rng, [3, 7], -100.0, 100.0), F32),), dict(to=3), out_type="int8"),
            Case("int8_to_float", (act(np.arange(-128, 128, 8).astype(np.int8)),), dict(to=1), out_type="float32"),
            Case("float_to_int32", (act(frand(rng, [2, 9], -3e6, 3e6), F32),), dict(to=6), out_type="int32"),
            Case("int32_to_int8_wraps", (act(rand(rng, [3, 6], -2**31, 2**31 - 1), I32),), dict(to=3),
                 out_type="int8"),
            Case("int64_to_uint16_wraps", (act(rand(rng, [17], -2**40, 2**40), I64),), dict(to=4), out_type="uint16"),
            Case("uint8_to_int32", (act(rand(rng, [2, 5], 0, 255), U8),), dict(to=6), out_type="int32"),
            Case("int16_to_uint32_wraps", (act(rand(rng, [11], -2**15, 2**15 - 1), np.int16),), dict(to=12),
                 out_type="uint32")]


def _cast_magnitude(p, bounds, ins, outs):
    """A cast to an integer type that holds the input's values keeps them."""
    return [bounds[0] if outs[0].is_integer and outs[0].holds(-bounds[0], bounds[0]) else outs[0].magnitude]


register(OpDef("Cast", _cast_parse, lambda p, ins: [(p.shape, p.to)], _cast_reference, _unary_cost(1),
               traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE}), tiling="pointwise", examples=_cast_cases,
               magnitude=_cast_magnitude))
