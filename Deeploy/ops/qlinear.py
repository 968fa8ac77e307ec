"""QLinearAdd and QLinearMul: onnxruntime's quantized Add and Mul (``com.microsoft``), the form a
lowered QDQ Add or Mul group takes (``passes/qdq.py``). Both 8-bit operands and the output share
one type (int8, or uint8 with ``signed=0``); the scales and zero points are the attributes
``a_scale``, ``a_zero_point``, ``b_scale``, ``b_zero_point``, ``y_scale``, ``y_zero_point``.
Bit-exact with onnxruntime's x86 (AVX2) kernels, all in float32:

- Add: ``ra = a_scale / y_scale``, ``rb = b_scale / y_scale``,
  ``k = y_zp - (ra * a_zp + rb * b_zp)``, and ``y = saturate(round_half_even(fma(a, ra, fma(b, rb, k))))``;
  where one operand is one value per innermost broadcast run (onnxruntime's scalar span),
  that operand's product is rounded and added to ``k`` first: ``fma(b, rb, k + a * ra)``
  (``scalar`` names it: 1 for a, 2 for b);
- Mul: ``r = a_scale * b_scale / y_scale`` and
  ``y = saturate(round_half_even(float((a - a_zp) * (b - b_zp)) * r + y_zp))``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT8, UINT8
from Deeploy.ops._attrs import attr_float, attr_int, broadcast_shape, require_inputs
from Deeploy.ops.examples import I8, U8, Case, act, const, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["QLinearParams", "fma32"]

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
    ra, rb = sa / sy, sb / sy
    k = _F(zy) - (ra * _F(za) + rb * _F(zb))
    return QLinearParams(shape, out.min, out.max, float(ra), float(rb), float(k),
                         scalar=_scalar_operand(a.shape, b.shape, shape))


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
