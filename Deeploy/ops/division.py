"""Integer divisions (see specs/integer-ops.md): int32 outputs when their proven bound fits,
else int64 (``ops/bounds.py``); a bound beyond int64 is an OpError.

TrueIntegerDiv divides by a constant: ``x * coeff`` with ``coeff = floor(Delta*eta/(y*eta+eps))``
computed exactly from the attributes; it is always followed by a RequantShift.
IntegerDiv (PACTOps) divides two activations: ``round(x*Delta*eta / (y*eta + eps))``, rounding
half away from zero as the upstream integer kernel does (unverified: no reference data)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32
from Deeploy.ops._attrs import attr_int, broadcast_shape, require_inputs
from Deeploy.ops.bounds import all_integer, check_int64, magnitude, sum_type, value_bounds
from Deeploy.ops.examples import F32, Case, act, rand, tensor_attr
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["TrueIntegerDivParams", "IntegerDivParams", "exact_attr", "div_round_half_away"]


def exact_attr(node, name: str, default: int | None = None) -> Fraction:
    """An integer or float attribute (plain or 1-element tensor) as an exact fraction."""
    if name not in node.attrs:
        if default is None:
            raise OpError(node, f"missing required attribute '{name}'")
        return Fraction(default)
    arr = np.asarray(node.attrs[name]).reshape(-1)
    if arr.size != 1:
        raise OpError(node, f"attribute '{name}' must hold one value, got {arr.size}")
    if arr.dtype.kind in "iub":
        return Fraction(int(arr[0]))
    value = float(arr[0])
    if not math.isfinite(value):
        raise OpError(node, f"attribute '{name}' is {value}")
    return Fraction(value)


# ---- TrueIntegerDiv ------------------------------------------------------------------------
@dataclass(frozen=True)
class TrueIntegerDivParams:
    """``out = x * coeff``."""

    shape: tuple[int, ...]
    coeff: int


def _true_div_parse(node, graph):
    require_inputs(node, 1)
    delta, eps, eta, y = (exact_attr(node, k) for k in ("Delta", "eps", "eta", "y"))
    den = y * eta + eps
    if den == 0:
        raise OpError(node, f"y*eta + eps is zero (y={y}, eta={eta}, eps={eps})")
    coeff = math.floor(delta * eta / den)
    if abs(coeff) >= 2 ** 31:
        raise OpError(node, f"coefficient Delta*eta/(y*eta+eps) = {coeff} does not fit int32")
    x = graph.tensors[node.inputs[0]]
    if all_integer([x]):
        check_int64(node, magnitude(x) * abs(coeff), "x * coeff", [x])
    return TrueIntegerDivParams(tuple(x.shape), coeff)


def _true_div_infer(p, ins):
    """int32, or int64 when |x| * |coeff| can exceed int32."""
    return [(p.shape, sum_type(magnitude(ins[0]) * abs(p.coeff)) if all_integer(ins) else INT32)]


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _true_integer_div_cases(rng):
    def div(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="int32")
    return [
        div("int_attrs", rand(rng, [3, 8], -2**15, 2**15 - 1), Delta=16384, eps=1, eta=200,
            y=7),
        div("float_attrs_exact_quotient", rand(rng, [4, 5]), Delta=1024.0, eps=0.5, eta=3.0,
            y=2.5),
        div("float_attrs_inexact", rand(rng, [4, 5]), Delta=2048.0, eps=0.1, eta=1000.0, y=0.3),
        div("tensor_attrs", rand(rng, [2, 6]), Delta=tensor_attr(16384),
            eps=tensor_attr(1, rank1=False), eta=tensor_attr(64), y=tensor_attr(3)),
    ]


def _integer_div_cases(rng):
    def div(label, x, y, **attrs):
        return Case(label, (act(x, F32), act(y, F32)), attrs, domain="PACTOps", out_type="int32")
    return [
        div("row_broadcast", rand(rng, [4, 6]), rand(rng, [1, 6], 0, 300), Delta=256, eps=3,
            eta=4),
        div("ties", rand(rng, [5, 8]), rand(rng, [5, 8], 1, 3), Delta=1, eps=0, eta=2),
        div("negative_denominators", rand(rng, [3, 7]), rand(rng, [3, 7], -5, 5), Delta=100,
            eps=1, eta=2),
    ]


register(OpDef("TrueIntegerDiv", _true_div_parse, _true_div_infer,
               lambda p, xs: [xs[0] * p.coeff],
               lambda p, ins, outs: Cost(ops=outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes),
               traits=frozenset({Trait.ELEMENTWISE}), tiling="pointwise",
               magnitude=lambda p, b, ins, outs: [b[0] * abs(p.coeff)],
               examples=_true_integer_div_cases))


# ---- IntegerDiv ----------------------------------------------------------------------------
@dataclass(frozen=True)
class IntegerDivParams:
    """``round(x*delta*eta / (y*eta + eps))`` with numpy broadcasting of x and y."""

    shape: tuple[int, ...]
    delta: int
    eps: int
    eta: int


def _int_div_parse(node, graph):
    require_inputs(node, 2)
    shapes = [graph.tensors[i].shape for i in node.inputs]
    delta, eps, eta = attr_int(node, "Delta"), attr_int(node, "eps"), attr_int(node, "eta", 1)
    p = IntegerDivParams(broadcast_shape(node, shapes), delta, eps, eta)
    ins = [graph.tensors[i] for i in node.inputs]
    if all_integer(ins):
        check_int64(node, _int_div_bound(p, magnitude(ins[0]), ins[1]), "the quotients", ins)
    return p


def _int_div_bound(p: IntegerDivParams, x_bound: int, y) -> int:
    """Largest |round(x*Delta*eta / (y*eta + eps))| for |x| <= ``x_bound``: over the smallest
    |y*eta + eps| that y's range allows (1 when the range reaches 0)."""
    ends = [v * p.eta + p.eps for v in value_bounds(y)]
    least = min(abs(e) for e in ends) if min(ends) > 0 or max(ends) < 0 else 1
    return (2 * x_bound * abs(p.delta * p.eta) + least) // (2 * least)


def _int_div_infer(p: IntegerDivParams, ins):
    """int32, or int64 when the quotients' bound can exceed int32."""
    return [(p.shape, sum_type(_int_div_bound(p, magnitude(ins[0]), ins[1])) if all_integer(ins) else INT32)]


def div_round_half_away(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` rounded to nearest, ties away from zero, exactly (den != 0)."""
    if np.any(den == 0):
        raise ZeroDivisionError("IntegerDiv: y*eta + eps is zero for some element")
    a, b = np.abs(num), np.abs(den)
    q = (2 * a + b) // (2 * b)
    return np.where((num < 0) != (den < 0), -q, q)


def _int_div_reference(p: IntegerDivParams, xs):
    x, y = xs
    scale = p.delta * p.eta
    big = max(int(np.abs(x).max(initial=0)) * abs(scale),
              int(np.abs(y).max(initial=0)) * abs(p.eta) + abs(p.eps)) >= 2 ** 60
    if big:  # exact Python integers where int64 could overflow
        x, y = x.astype(object), y.astype(object)
    out = div_round_half_away(x * scale, y * p.eta + p.eps)
    return [np.asarray(np.broadcast_to(out, p.shape), dtype=np.int64)]


register(OpDef("IntegerDiv", _int_div_parse, _int_div_infer, _int_div_reference,
               lambda p, ins, outs: Cost(ops=5 * outs[0].size,
                                         bytes=sum(t.nbytes for t in ins) + outs[0].nbytes),
               traits=frozenset({Trait.ELEMENTWISE, Trait.BROADCASTING}), tiling="broadcast",
               magnitude=lambda p, b, ins, outs: [_int_div_bound(p, b[0], ins[1])],
               examples=_integer_div_cases))
