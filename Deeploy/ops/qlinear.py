"""QLinearAdd, QLinearMul, QLinearSoftmax and TableLookup: onnxruntime's quantized Add, Mul and Softmax
(``com.microsoft``), the form a lowered QDQ Add, Mul or Softmax group takes (``passes/qdq.py``). Both 8-bit operands and the output share
one type (int8, or uint8 with ``signed=0``); the scales and zero points are the attributes
``a_scale``, ``a_zero_point``, ``b_scale``, ``b_zero_point``, ``y_scale``, ``y_zero_point``.
Bit-exact with onnxruntime's x86 (AVX2) kernels, all in float32:

- Add: ``ra = a_scale / y_scale``, ``rb = b_scale / y_scale``,
  ``k = y_zp - (ra * a_zp + rb * b_zp)``, and ``y = saturate(round_half_even(fma(a, ra, fma(b, rb, k))))``;
  where one operand is one value per innermost broadcast run (onnxruntime's scalar span),
  that operand's product is rounded and added to ``k`` first: ``fma(b, rb, k + a * ra)``
  (``scalar`` names it: 1 for a, 2 for b);
- Mul: ``r = a_scale * b_scale / y_scale`` and
  ``y = saturate(round_half_even(float((a - a_zp) * (b - b_zp)) * r + y_zp))``.

QLinearSoftmax (attributes ``x_scale``, ``y_scale``, ``y_zero_point``, ``signed``, ``axis``: rows
flattened from it) is onnxruntime's table softmax: ``e(d)``, d = 0..255, is
``float32(exp((bs - d) * x_scale))`` in double with ``bs = max(0, logf(FLT_MAX / width) - 5) / x_scale``;
per row, with ``d = max(x) - x``, ``sum`` adds ``e(d)`` in float32 in row order and
``y = min(round_half_even(float32(e(d) * floor(1 / y_scale)) / sum) + y_zp, max)`` (onnxruntime's
uint8 kernel, which it also runs for int8 on x86 without VNNI; its int8 kernel would wrap an
out-of-range value around instead, a case only a y_scale above 1/128 reaches).

TableLookup (attributes ``table``: 256 values, ``to``: the output's ONNX type, 8- or 16-bit) is
``y = table[x mod 256]`` of an int8 or uint8 x: the form a lowered QDQ chain of one quantized tensor
takes (``passes/qdq.py``, its table computed at compile time by onnxruntime), and the widening of an
8-bit operand less its zero point to int16."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT8, INT16, UINT8, UINT16, DType, dtype_of_onnx, onnx_elem_type
from Deeploy.ops._attrs import attr_float, attr_int, broadcast_shape, normalize_axis, require_inputs
from Deeploy.ops.examples import I8, U8, Case, act, const, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["QLinearParams", "QLinearSoftmaxParams", "TableLookupParams", "fma32", "qlinear_add_of_constant"]

_F = np.float32


@dataclass(frozen=True)
class QLinearParams:
    """The output shape and range, and the float32 constants of the kernel: Add's ``ra``, ``rb``
    and ``k`` (zero points folded in, ``za = zb = 0``), Mul's ``ra = r``, ``k = y_zp`` and the
    operands' zero points ``za``, ``zb``; ``scalar``: Add's scalar-span operand (0: none); ``product``: Mul."""

    shape: tuple[int, ...]
    lo: int
    hi: int
    ra: float
    rb: float
    k: float
    za: int = 0
    zb: int = 0
    scalar: int = 0
    product: bool = False


def fma32(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """float32 ``x * y + z`` rounded once (a fused multiply-add), for ``x * y`` exact in float64
    (float32 operands of at most 29 significant bits together)."""
    p = x.astype(np.float64) * y.astype(np.float64)
    c = np.asarray(z, np.float64)
    s = p + c
    t = s - p
    err = (p - (s - t)) + (c - t)                        # s + err == p + c exactly (TwoSum)
    f = s.astype(_F)
    other = np.nextafter(f, np.where(f.astype(np.float64) < s, _F(np.inf), _F(-np.inf)).astype(_F))
    tie = (f.astype(np.float64) != s) & ((f.astype(np.float64) + other.astype(np.float64)) / 2 == s) & (err != 0)
    towards = np.where(err > 0, np.maximum(f, other), np.minimum(f, other))
    return np.where(tie, towards, f).astype(_F)


def _scalar_operand(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...]) -> int:
    """Which operand onnxruntime's broadcast loop hands its kernel as one value per run (1: a,
    2: b, 0: neither): the one broadcast along the innermost axis of the output longer than 1."""
    rank = len(out)
    a, b = (1,) * (rank - len(a)) + tuple(a), (1,) * (rank - len(b)) + tuple(b)
    for k in reversed(range(rank)):
        if out[k] != 1:
            return 1 if a[k] == 1 else 2 if b[k] == 1 else 0
    return 1


def _parse(node, graph):
    require_inputs(node, 2)
    a, b = (graph.tensors[i] for i in node.inputs)
    out = INT8 if attr_int(node, "signed", 1) else UINT8
    if a.dtype != out or b.dtype != out:
        raise OpError(node, f"operands and output must all be {out}, got {a.dtype} and {b.dtype}")
    shape = broadcast_shape(node, [a.shape, b.shape])
    sa, sb, sy = (_F(attr_float(node, f"{t}_scale", 1.0)) for t in "aby")
    za, zb, zy = (attr_int(node, f"{t}_zero_point", 0) for t in "aby")
    if node.op == "QLinearMul":
        return QLinearParams(shape, out.min, out.max, float(sa * sb / sy), 0.0, float(_F(zy)), za, zb, product=True)
    ra, rb, k = _add_factors(node)
    return QLinearParams(shape, out.min, out.max, float(ra), float(rb), float(k),
                         scalar=_scalar_operand(a.shape, b.shape, shape))


def _add_factors(node) -> tuple[np.float32, np.float32, np.float32]:
    """QLinearAdd's ``ra``, ``rb`` and ``k`` (float32)."""
    sa, sb, sy = (_F(attr_float(node, f"{t}_scale", 1.0)) for t in "aby")
    za, zb, zy = (attr_int(node, f"{t}_zero_point", 0) for t in "aby")
    ra, rb = sa / sy, sb / sy
    return ra, rb, _F(zy) - (ra * _F(za) + rb * _F(zb))


def qlinear_add_of_constant(node, a_shape, b: np.ndarray) -> tuple[float, np.ndarray] | None:
    """A QLinearAdd of a constant ``b`` as ``fma(a, ra, addend)``: ``(ra, addend)`` (float32, b's
    shape), or None where onnxruntime rounds a's product on its own (a one value per broadcast run)."""
    ra, rb, k = _add_factors(node)
    scalar = _scalar_operand(tuple(a_shape), b.shape, tuple(np.broadcast_shapes(tuple(a_shape), b.shape)))
    if scalar == 1:
        return None
    b = b.astype(_F)
    return float(ra), (k + b * rb if scalar == 2 else fma32(b, rb, k)).astype(_F)


def _infer(p, ins):
    return [(p.shape, ins[0].dtype)]


def _reference(p: QLinearParams, xs):
    a, b = (np.broadcast_to(x, p.shape) for x in xs)
    ra, rb, k = _F(p.ra), _F(p.rb), _F(p.k)
    if p.product:
        f = ((a - p.za) * (b - p.zb)).astype(_F) * ra + k
    elif p.scalar == 1:
        f = fma32(b, rb, k + a.astype(_F) * ra)
    elif p.scalar == 2:
        f = fma32(a, ra, k + b.astype(_F) * rb)
    else:
        f = fma32(a, ra, fma32(b, rb, k))
    return [np.clip(np.round(f.astype(_F)).astype(np.int64), p.lo, p.hi)]


def _cost(p, ins, outs):
    return Cost(ops=3 * outs[0].size, bytes=sum(t.nbytes for t in ins) + outs[0].nbytes)


def _attrs(rng, signed: bool) -> dict:
    lo, hi = (-128, 127) if signed else (0, 255)
    scales = {f"{t}_scale": float(_F(rng.uniform(0.01, 0.1))) for t in "aby"}
    return {**scales, **{f"{t}_zero_point": int(rng.integers(lo, hi + 1)) for t in "aby"}, "signed": int(signed)}


def _cases(rng):
    return [Case("int8_same_shape", (act(rand(rng, [4, 32]), I8), act(rand(rng, [4, 32]), I8)), _attrs(rng, True),
                 out_type="int8"),
            Case("uint8_row_broadcast", (act(rand(rng, [3, 16], 0, 255), U8), const(rand(rng, [16], 0, 255), U8)),
                 _attrs(rng, False), out_type="uint8"),
            Case("int8_scalar_span", (act(rand(rng, [2, 3, 8]), I8), act(rand(rng, [2, 3, 1]), I8)), _attrs(rng, True),
                 out_type="int8"),
            Case("uint8_scalar_first", (const(np.array([200], np.int64), U8), act(rand(rng, [5, 7], 0, 255), U8)),
                 _attrs(rng, False), out_type="uint8")]


for _name in ("QLinearAdd", "QLinearMul"):
    register(OpDef(_name, _parse, _infer, _reference, _cost, traits=frozenset({Trait.ELEMENTWISE, Trait.BROADCASTING}),
                   tiling="broadcast", examples=_cases))


@dataclass(frozen=True)
class QLinearSoftmaxParams:
    """The input shape, the row ``width``, the e(d) table, ``floor(1 / y_scale)`` (float32), the
    output's zero point and range."""

    shape: tuple[int, ...]
    width: int
    table: tuple[float, ...]
    y_inv: float
    zy: int
    lo: int
    hi: int


def softmax_table(x_scale: float, width: int) -> np.ndarray:
    """onnxruntime's e(d), d = 0..255, for an input scale and row width (float32)."""
    xs = np.float64(_F(x_scale))
    bs = max(0.0, float(np.log(_F(np.finfo(_F).max) / _F(width))) - 5.0) / xs
    return np.exp((np.arange(0, -256, -1, dtype=np.float64) + bs) * xs).astype(_F)


def _softmax_parse(node, graph):
    require_inputs(node, 1)
    x = graph.tensors[node.inputs[0]]
    out = INT8 if attr_int(node, "signed", 1) else UINT8
    if x.dtype != out:
        raise OpError(node, f"input and output must be {out}, got {x.dtype}")
    shape = tuple(x.shape)
    axis = normalize_axis(node, attr_int(node, "axis", -1), len(shape))
    width = int(np.prod(shape[axis:]))
    if width < 1:
        raise OpError(node, f"needs non-empty rows, got input shape {list(shape)}")
    table = softmax_table(attr_float(node, "x_scale"), width)
    y_inv = np.floor(_F(1.0) / _F(attr_float(node, "y_scale")))
    return QLinearSoftmaxParams(shape, width, tuple(float(v) for v in table), float(y_inv),
                                attr_int(node, "y_zero_point", 0), out.min, out.max)


def _softmax_reference(p: QLinearSoftmaxParams, xs):
    x = xs[0].reshape(-1, p.width)
    e = np.asarray(p.table, _F)[x.max(axis=1, keepdims=True) - x]
    total = np.cumsum(e, axis=1, dtype=_F)[:, -1:]                     # in row order, as onnxruntime
    y = np.round((e * _F(p.y_inv)).astype(_F) / total).astype(np.int64) + p.zy
    return [np.clip(y, p.lo, p.hi).reshape(p.shape)]


def _softmax_cases(rng):
    def case(label, x, dtype, **attrs):
        return Case(label, (act(x, dtype),), {"signed": int(dtype == I8), **attrs}, out_type=np.dtype(dtype).name)
    return [case("int8_rows", rand(rng, [3, 20]), I8, x_scale=0.05, y_scale=1 / 255, y_zero_point=-128),
            case("uint8_flattened_rows", rand(rng, [2, 3, 5], 0, 255), U8, x_scale=0.11, y_scale=1 / 255, axis=1),
            case("uint8_zero_point_saturates", rand(rng, [4, 7], 0, 255), U8, x_scale=0.2, y_scale=1 / 200,
                 y_zero_point=70)]


register(OpDef("QLinearSoftmax", _softmax_parse, lambda p, ins: [(p.shape, ins[0].dtype)], _softmax_reference,
               lambda p, ins, outs: Cost(ops=4 * outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes),
               traits=frozenset({Trait.ROWWISE}), tiling="softmax", examples=_softmax_cases))



@dataclass(frozen=True)
class TableLookupParams:
    """The shape, the output's type and its 256 values, indexed by the input's byte (``x mod 256``)."""

    shape: tuple[int, ...]
    out: DType
    table: tuple[int, ...]


def _lookup_parse(node, graph):
    require_inputs(node, 1)
    x = graph.tensors[node.inputs[0]]
    out = dtype_of_onnx(attr_int(node, "to", onnx_elem_type(INT8)))
    table = tuple(int(v) for v in node.attrs.get("table", ()))
    if x.dtype not in (INT8, UINT8) or out not in (INT8, UINT8, INT16, UINT16):
        raise OpError(node, f"maps an 8-bit input to 8- or 16-bit integers, got {x.dtype} to {out}")
    if len(table) != 256 or not all(out.min <= v <= out.max for v in table):
        raise OpError(node, f"needs a table of 256 {out} values, got {len(table)} in "
                            f"[{min(table, default=0)}, {max(table, default=0)}]")
    return TableLookupParams(tuple(x.shape), out, table)


def _lookup_reference(p: TableLookupParams, xs):
    return [np.asarray(p.table, np.int64)[xs[0] % 256]]


def _lookup_cases(rng):
    return [Case("int8_to_uint8", (act(rand(rng, [3, 40]), I8),),
                 {"table": [int(v) for v in rand(rng, [256], 0, 255)], "to": onnx_elem_type(UINT8)}, out_type="uint8"),
            Case("uint8_to_int8", (act(rand(rng, [2, 5, 7], 0, 255), U8),),
                 {"table": [int(v) for v in rand(rng, [256])], "to": onnx_elem_type(INT8)}, out_type="int8"),
            Case("int8_to_int16", (act(rand(rng, [3, 9]), I8),),
                 {"table": [int(v) for v in rand(rng, [256], -32768, 32767)], "to": onnx_elem_type(INT16)},
                 out_type="int16")]


register(OpDef("TableLookup", _lookup_parse, lambda p, ins: [(p.shape, p.out)], _lookup_reference,
               lambda p, ins, outs: Cost(ops=outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes + 256),
               traits=frozenset({Trait.ELEMENTWISE}), tiling="pointwise", examples=_lookup_cases,
               magnitude=lambda p, bounds, ins, outs: [max(abs(v) for v in p.table)]))
