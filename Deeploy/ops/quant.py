"""QuantizeLinear and DequantizeLinear, the joints of mixed graphs: a float tensor becomes an
integer one (``saturate(round_half_even(x / scale) + zero_point)``, the zero point's type,
uint8 without one) and back (``(x - zero_point) * scale`` in float32). Scale and zero point are a
scalar or one value per channel of ``axis``. A NaN quantizes to the output type's lowest value
(-128 for int8, 0 for uint8, whatever the zero point), as onnxruntime does; infinities saturate.
RequantizeLinear, the requantisation of a QDQ group lowered to integer kernels (``passes/qdq.py``),
takes an integer accumulator back to 8 bits the way onnxruntime's integer kernels do:
``saturate(round_half_even(float32(x) * scale) + zero_point)``, the product in float32, scale
scalar or numpy-broadcast per channel, the zero point a scalar; int8 output, uint8 with ``signed=0``.
RequantizeLinearAdd (inputs x, scale, zero point, ``addend``; attribute ``ra``) is RequantizeLinear
followed by onnxruntime's QLinearAdd of a constant, in one pass: ``q = RequantizeLinear(x)``, then
``saturate(round_half_even(fma(float32(q), ra, addend)))``, addend (float32) per channel like scale.
MatMulInteger and ConvInteger are MatMul and Conv of ``x - x_zero_point`` and ``w - w_zero_point``
(a scalar, or one per row of A / column of B / output channel of w) with int32 sums."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import FLOAT32, INT8, INT32, UINT8, float_result
from Deeploy.ops._attrs import attr_float, attr_int, in_tensor, normalize_axis, require_inputs
from Deeploy.ops.conv import ConvParams
from Deeploy.ops.examples import F32, I8, I32, U8, Case, act, const, frand, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, op_named, register
from Deeploy.ops.qlinear import fma32
from Deeploy.ops.requant import channel_layout

__all__ = ["QuantParams"]


@dataclass(frozen=True)
class QuantParams:
    """x viewed as [outer, channels, inner]: scale and zero point per channel (channels = 1: scalar)."""

    shape: tuple[int, ...]
    channels: int
    inner: int
    has_zero_point: bool
    lo: int = 0          # QuantizeLinear: the output type's range
    hi: int = 255

    def per_channel(self, v: np.ndarray) -> np.ndarray:
        return v.reshape(1, -1, 1) if self.channels > 1 else v.reshape(1, 1, 1)


def _quant_parse(node, graph):
    require_inputs(node, 2, 3)
    x, scale = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    zp = in_tensor(node, graph, 2)
    if not scale.dtype.is_float:
        raise OpError(node, f"scale must be a float tensor, got {scale.dtype}")
    if node.op == "QuantizeLinear" and not x.dtype.is_float:
        raise OpError(node, f"quantizes a float tensor, got {x.dtype}")
    if node.op == "DequantizeLinear" and x.dtype.is_float:
        raise OpError(node, f"dequantizes an integer tensor, got {x.dtype}")
    if zp is not None and (zp.dtype.is_float or zp.size != scale.size):
        raise OpError(node, f"zero point must be an integer tensor with as many values as scale ({scale.size})")
    shape = tuple(x.shape)
    out = zp.dtype if zp is not None else UINT8
    if node.op == "QuantizeLinear" and out.bits > 16:
        raise OpError(node, f"quantizes to 8 or 16 bits, the zero point is {out}")
    if scale.size == 1:
        return QuantParams(shape, 1, 1, zp is not None, out.min, out.max)
    axis = normalize_axis(node, attr_int(node, "axis", 1), len(shape))
    if scale.size != shape[axis]:
        raise OpError(node, f"scale has {scale.size} values, expected 1 or {shape[axis]} (axis {axis})")
    return QuantParams(shape, shape[axis], int(np.prod(shape[axis + 1:], dtype=np.int64)), zp is not None,
                       out.min, out.max)


def _quant_infer(p, ins):
    return [(p.shape, ins[2].dtype if p.has_zero_point else UINT8)]


def _dequant_infer(p, ins):
    return [(p.shape, float_result(ins[1].dtype) or FLOAT32)]


def _view(p, x):
    return x.reshape(-1, p.channels, p.inner)


def _quant_reference(p, xs):
    x, scale = _view(p, xs[0].astype(np.float32)), p.per_channel(xs[1].astype(np.float32))
    zp = p.per_channel(xs[2]) if p.has_zero_point else 0
    q = np.round(x / scale).astype(np.float64) + zp       # float32 quotient, rounded half to even
    q = np.where(np.isnan(q), p.lo, q)                     # NaN gives the lowest value, as onnxruntime
    return [np.clip(q, p.lo, p.hi).astype(np.int64).reshape(p.shape)]


def _dequant_reference(p, xs):
    x, scale = _view(p, xs[0]), p.per_channel(xs[1].astype(np.float32))
    zp = p.per_channel(xs[2]) if p.has_zero_point else 0
    return [((x - zp).astype(np.float32) * scale).reshape(p.shape)]


def _requant_parse(node, graph):
    require_inputs(node, 4 if node.op == "RequantizeLinearAdd" else 3)
    x, scale, zp = (graph.tensors[i] for i in node.inputs[:3])
    if x.dtype.is_float or not scale.dtype.is_float:
        raise OpError(node, f"requantizes an integer tensor by a float scale, got {x.dtype} and {scale.dtype}")
    out = INT8 if attr_int(node, "signed", 1) else UINT8
    if zp.dtype.is_float or zp.size != 1 or (zp.is_constant and not out.min <= int(zp.value.reshape(-1)[0]) <= out.max):
        raise OpError(node, f"the zero point must be a scalar {out} value")
    _, channels, inner = channel_layout(node, tuple(x.shape), [scale.shape])
    return QuantParams(tuple(x.shape), channels, inner, True, out.min, out.max)


def _requant_infer(p, ins):
    return [(p.shape, INT8 if p.lo < 0 else UINT8)]


def _requant_reference(p, xs):
    x = _view(p, xs[0]).astype(np.float32) * p.per_channel(xs[1].astype(np.float32))   # float32 product
    q = np.round(x).astype(np.float64) + xs[2].reshape(-1)[0]
    return [np.clip(q, p.lo, p.hi).astype(np.int64).reshape(p.shape)]


def _cost(p, ins, outs):
    return Cost(ops=2 * outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes)


def _quant_cases(rng):
    return [Case("scalar_int8", (act(frand(rng, [2, 3, 8], -6, 6), F32), const(np.array(0.05, F32)),
                                 const(np.array(3, I8))), out_type="int8"),
            Case("per_channel_uint8", (act(frand(rng, [1, 3, 4]), F32), const(np.array([0.1, 0.02, 0.3], F32)),
                                       const(np.array([128, 0, 10], U8))), dict(axis=1), out_type="uint8"),
            Case("halves_saturate", (act(np.arange(-40, 40, dtype=np.float32) * 2.5, F32), const(np.array(0.5, F32)),
                                     const(np.array(-2, I8))), out_type="int8")]


def _dequant_cases(rng):
    return [Case("scalar_int8", (act(rand(rng, [2, 3, 8]), I8), const(np.array(0.05, F32)), const(np.array(3, I8))),
                 out_type="float32"),
            Case("per_channel_uint8", (act(rand(rng, [1, 3, 4], 0, 255), U8), const(np.array([0.1, 0.02, 0.3], F32)),
                                       const(np.array([128, 0, 10], U8))), dict(axis=1), out_type="float32")]


def _requant_cases(rng):
    return [Case("per_channel_uint8", (act(rand(rng, [1, 4, 3, 3], -2**14, 2**14), I32),
                                       const(np.array([0.01, 0.003, 0.02, 0.0005], F32).reshape(4, 1, 1)),
                                       const(np.array(3, U8))), dict(signed=0), out_type="uint8"),
            Case("scalar_int8_ties", (act(np.arange(-300, 300, dtype=np.int64), I32), const(np.array(0.5, F32)),
                                      const(np.array(-5, I8))), out_type="int8")]


def _base(p) -> OpDef:
    """The op of ``x - zx`` and ``w - zw`` (its params are the zero-point op's)."""
    return op_named("Conv" if isinstance(p, ConvParams) else "MatMul")


def _integer_parse(node, graph):
    require_inputs(node, 2, 4)
    for zp in node.inputs[2:4]:
        t = graph.tensors[zp] if zp else None
        if t is not None and (t.dtype.is_float or len(t.shape) > 1):
            raise OpError(node, f"zero point '{zp}' must be an integer scalar or vector")
    return op_named(node.op.replace("Integer", "")).parse(replace(node, inputs=node.inputs[:2]), graph)


def _integer_infer(p, ins):
    return [(_base(p).infer(p, ins[:2])[0][0], INT32)]


def _centered(p, xs, magnitudes=False):
    """x - zx and w - zw (``magnitudes``: bounds of their magnitudes from bounds of x, w and the zero points)."""
    x, w = xs[0].astype(np.int64), xs[1].astype(np.int64)
    zx, zw = (np.zeros(1, np.int64) if z is None else z.astype(np.int64).reshape(-1) for z in (list(xs) + [None] * 2)[2:4])
    if isinstance(p, ConvParams):   # zero points per tensor (x) and per output channel (w)
        zx, zw = zx[0], zw.reshape((-1,) + (1,) * (w.ndim - 1))
    else:                           # per row of A or per tensor; per column of B or per tensor
        zx = zx.reshape(-1, 1) if zx.size > 1 else zx[0]
    return (x + np.abs(zx), w + np.abs(zw)) if magnitudes else (x - zx, w - zw)


def _integer_reference(p, xs):
    return _base(p).reference(p, list(_centered(p, xs)))


def _integer_magnitude(p, bounds, ins, outs):
    args = [None if t is None else np.abs(t.value.astype(np.int64)) if t.is_constant else np.full(t.shape, b, np.int64)
            for t, b in zip(ins, bounds)]
    return [int(np.max(np.abs(_base(p).reference(p, list(_centered(p, args, True)))[0]), initial=0))]


def _integer_cost(p, ins, outs):
    return _base(p).cost(p, ins[:2], outs)


def _matmul_integer_cases(rng):
    return [Case("uint8_int8_zero_points", (act(rand(rng, [2, 3, 16], 0, 255), U8), const(rand(rng, [16, 5], -64, 63), I8),
                                            const(np.array(131, U8)), const(np.array(0, I8))), out_type="int32"),
            Case("int8_per_column", (act(rand(rng, [4, 8], -128, 127), I8), const(rand(rng, [8, 3], -64, 63), I8),
                                     const(np.array(-7, I8)), const(np.array([0, 3, -2], I8))), out_type="int32"),
            Case("no_zero_points", (act(rand(rng, [3, 8], 0, 255), U8), act(rand(rng, [8, 4], 0, 255), U8)), out_type="int32")]


def _conv_integer_cases(rng):
    return [Case("pad_zero_point", (act(rand(rng, [1, 3, 6, 6], 0, 255), U8), const(rand(rng, [4, 3, 3, 3], 0, 255), U8),
                                    const(np.array(100, U8)), const(np.array(7, U8))), dict(pads=[1, 1, 1, 1]), out_type="int32"),
            Case("strided_no_zero_points", (act(rand(rng, [1, 2, 7, 5], 0, 255), U8),
                                            const(rand(rng, [3, 2, 2, 3], 0, 255), U8)), dict(strides=[2, 1]), out_type="int32")]


for _name, _cases in (("MatMulInteger", _matmul_integer_cases), ("ConvInteger", _conv_integer_cases)):
    register(OpDef(_name, _integer_parse, _integer_infer, _integer_reference, _integer_cost,
                   traits=frozenset({Trait.STANDARD, Trait.LOWERED}), magnitude=_integer_magnitude,
                   examples=_cases))
register(OpDef("QuantizeLinear", _quant_parse, _quant_infer, _quant_reference, _cost,
               traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE, Trait.QDQ_JOINT}), tiling="quant",
               examples=_quant_cases))
register(OpDef("DequantizeLinear", _quant_parse, _dequant_infer, _dequant_reference, _cost,
               traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE, Trait.QDQ_JOINT}), tiling="quant",
               examples=_dequant_cases))
register(OpDef("RequantizeLinear", _requant_parse, _requant_infer, _requant_reference, _cost,
               traits=frozenset({Trait.ELEMENTWISE}), tiling="requant", examples=_requant_cases))


@dataclass(frozen=True)
class RequantizeAddParams(QuantParams):
    """RequantizeLinear's view and range, and the float32 multiplier of its result."""

    ra: float = 1.0


def _requant_add_parse(node, graph):
    p = _requant_parse(node, graph)
    scale, addend = graph.tensors[node.inputs[1]], graph.tensors[node.inputs[3]]
    if addend.dtype != FLOAT32 or scale.size != addend.size:
        raise OpError(node, f"the addend must be float32 with as many values as the scale ({scale.size}), "
                            f"got {addend.dtype} with {addend.size}")
    _, channels, inner = channel_layout(node, p.shape, [scale.shape, addend.shape])
    return RequantizeAddParams(p.shape, channels, inner, True, p.lo, p.hi, float(np.float32(attr_float(node, "ra", 1.0))))


def _requant_add_reference(p, xs):
    q = _requant_reference(p, xs[:3])[0]
    f = fma32(_view(p, q).astype(np.float32), np.float32(p.ra), p.per_channel(xs[3].astype(np.float32)))
    return [np.clip(np.round(f.astype(np.float64)), p.lo, p.hi).astype(np.int64).reshape(p.shape)]


def _requant_add_cases(rng):
    return [Case("per_channel_int8", (act(rand(rng, [2, 5, 6], -3000, 3000), I32), const(frand(rng, [6], 0.01, 0.05), F32),
                                      const(np.array(-3), I8), const(frand(rng, [6], -40, 40), F32)),
                 dict(ra=0.71), out_type="int8"),
            Case("scalar_uint8", (act(rand(rng, [3, 16], -5000, 5000), I32), const(np.array(0.021, F32)),
                                  const(np.array(120), U8), const(np.array(-17.25, F32))),
                 dict(ra=1.3, signed=0), out_type="uint8")]


register(OpDef("RequantizeLinearAdd", _requant_add_parse, _requant_infer, _requant_add_reference, _cost,
               traits=frozenset({Trait.ELEMENTWISE}), tiling="broadcast", examples=_requant_add_cases))
