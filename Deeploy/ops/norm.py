"""Integer normalisations back to 8 bits (see specs/integer-ops.md): iLayerNorm and iRMSNorm
normalise the last axis with an exact integer square root; iNoNorm is an affine map
``((x*weight + bias) * mul) >> log2(D)``. Outputs are int8 (clipped to n_levels); iRMSNorm's
optional ``offset`` is added before the clip, and with ``signed`` 0 it clips to 0..n_levels-1
(uint8), as RequantShift's ``signed``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import smallest_int_type
from Deeploy.ops._attrs import attr_int, log2_exact, require_inputs
from Deeploy.ops.bounds import output_type_magnitudes
from Deeploy.ops.examples import equal_rows, F32, Case, act, const, rand, tensor_attr
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["NormParams", "NoNormParams", "isqrt", "trunc_div"]


@dataclass(frozen=True)
class NormParams:
    """Shape (normalised over its last axis), ``shift = log2(D)``, the output clip range and the
    offset added before the clip (iRMSNorm's)."""

    shape: tuple[int, ...]
    shift: int
    lo: int
    hi: int
    offset: int = 0

    @property
    def width(self) -> int:
        return self.shape[-1]


@dataclass(frozen=True)
class NoNormParams:
    shape: tuple[int, ...]
    mul: int
    shift: int
    lo: int
    hi: int


def isqrt(v: np.ndarray) -> np.ndarray:
    """``floor(sqrt(v))`` exactly for non-negative int64 ``v`` below 2^62."""
    r = np.sqrt(v.astype(np.float64)).astype(np.int64)
    while True:
        over = r * r > v
        under = (r + 1) * (r + 1) <= v
        if not over.any() and not under.any():
            return r
        r = r - over + under


def trunc_div(a: np.ndarray, b) -> np.ndarray:
    """``a / b`` rounded toward zero, for positive ``b``."""
    q = np.floor_divide(np.abs(a), b)
    return np.where(a < 0, -q, q)


def _clip_range(node, signed: bool = True) -> tuple[int, int]:
    levels = attr_int(node, "n_levels")
    if not 2 <= levels <= 256:
        raise OpError(node, f"n_levels must be in 2..256 for an 8-bit output, got {levels}")
    return (-(levels // 2), levels // 2 - 1) if signed else (0, levels - 1)


def _check_operands(node, graph, names):
    x = graph.tensors[node.inputs[0]]
    if not x.shape or x.shape[-1] < 1:
        raise OpError(node, f"needs a non-empty last axis, got input shape {list(x.shape)}")
    for index, name in enumerate(names, start=1):
        t = graph.tensors[node.inputs[index]]
        try:
            fits = tuple(np.broadcast_shapes(t.shape, x.shape)) == tuple(x.shape)
        except ValueError:
            fits = False
        if not fits:
            raise OpError(node, f"{name} of shape {list(t.shape)} does not broadcast onto the "
                          f"input {list(x.shape)}")
    return tuple(x.shape)


def _norm_parse(names, offset: bool = False):
    """The parser of a normalisation with operands ``names``; ``offset``: it reads the ``offset``
    and ``signed`` attributes."""
    def parse(node, graph):
        require_inputs(node, 1 + len(names))
        shape = _check_operands(node, graph, names)
        shift = log2_exact(node, "D", attr_int(node, "D"))
        if not offset:
            return NormParams(shape, shift, *_clip_range(node))
        return NormParams(shape, shift, *_clip_range(node, bool(attr_int(node, "signed", 1))),
                          attr_int(node, "offset", 0))
    return parse


def _norm_infer(p, ins):
    return [(p.shape, smallest_int_type(p.lo, p.hi))]


def _layernorm_reference(p: NormParams, xs):
    x, weight, bias = xs
    mean = trunc_div(np.sum(x, axis=-1, keepdims=True), p.width)
    d = x - mean
    std = isqrt(np.sum(d * d, axis=-1, keepdims=True) // p.width + 1)
    return [np.clip((trunc_div(d * weight, std) + bias) >> p.shift, p.lo, p.hi)]


def _rmsnorm_reference(p: NormParams, xs):
    x, weight = xs
    std = isqrt(np.sum(x * x, axis=-1, keepdims=True) // p.width + 1)
    return [np.clip((trunc_div(x * weight, std) >> p.shift) + p.offset, p.lo, p.hi)]


def _norm_cost(p, ins, outs):
    return Cost(ops=8 * outs[0].size, bytes=sum(t.nbytes for t in ins) + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _norm_case(label, operands, out_type="int8", **attrs):
    attrs.setdefault("n_levels", 256)
    return Case(label, tuple(const(o, F32) if k else act(o, F32) for k, o in enumerate(operands)),
                attrs, out_type=out_type)


def _ilayernorm_cases(rng):
    crafted = np.array([[0, 0, 4, -4], [5, 5, 5, 5], [-7, -6, -6, -6], [-128, 127, -128, 127]])
    return [
        _norm_case("int8_rows", [rand(rng, [2, 5, 16]), rand(rng, [16]),
                                 rand(rng, [16], -2**12, 2**12)], D=16),
        _norm_case("int16_inputs_long_rows", [rand(rng, [3, 64], -2**14, 2**14), rand(rng, [64]),
                                              rand(rng, [64], -2**10, 2**10)], D=32),
        _norm_case("all_equal_rows", [equal_rows([-128, 3, 127], 8), rand(rng, [8]),
                                      rand(rng, [8], -2**11, 2**11)], D=8),
        _norm_case("crafted_rows_tensor_D", [crafted, rand(rng, [4]), rand(rng, [4], -500, 500)],
                   D=tensor_attr(4)),
    ]


def _irmsnorm_cases(rng):
    return [
        _norm_case("int8_rows", [rand(rng, [3, 32]), rand(rng, [32])], D=8),
        _norm_case("int16_inputs", [rand(rng, [2, 48], -2**12, 2**12),
                                    rand(rng, [48], -2**10, 2**10)], D=64),
        _norm_case("zero_and_equal_rows", [equal_rows([0, -128, 7, 127], 6), rand(rng, [6])],
                   D=1),
        # sum(x^2)/L + 1 is a perfect square: the +1 changes the root
        _norm_case("crafted_perfect_squares", [np.array([[0, 4], [1, 4], [0, 7], [-7, 0], [4, -1]]),
                                               np.array([20, -30])], D=1),
        _norm_case("uint8_out_offset", [rand(rng, [3, 20]), rand(rng, [20])], D=4, offset=128, signed=0,
                   out_type="uint8"),
    ]


def _inonorm_cases(rng):
    return [
        _norm_case("int8", [rand(rng, [2, 3, 8]), rand(rng, [8]), rand(rng, [8], -2**10, 2**10)],
                   D=256, mul=3),
        _norm_case("negative_mul", [rand(rng, [4, 6]), rand(rng, [6]), rand(rng, [6], -2**8, 2**8)],
                   D=512, mul=-5),
    ]


register(OpDef("iLayerNorm", _norm_parse(("weight", "bias")), _norm_infer, _layernorm_reference,
               _norm_cost,
               traits=frozenset({Trait.ROWWISE}), tiling="norm",
               magnitude=output_type_magnitudes,
               examples=_ilayernorm_cases))
register(OpDef("iRMSNorm", _norm_parse(("weight",), offset=True), _norm_infer, _rmsnorm_reference, _norm_cost,
               traits=frozenset({Trait.ROWWISE}), tiling="norm",
               magnitude=output_type_magnitudes,
               examples=_irmsnorm_cases))


def _nonorm_parse(node, graph):
    require_inputs(node, 3)
    shape = _check_operands(node, graph, ("weight", "bias"))
    shift = log2_exact(node, "D", attr_int(node, "D"))
    return NoNormParams(shape, attr_int(node, "mul"), shift, *_clip_range(node))


def _nonorm_reference(p: NoNormParams, xs):
    x, weight, bias = xs
    return [np.clip(((x * weight + bias) * p.mul) >> p.shift, p.lo, p.hi)]


register(OpDef("iNoNorm", _nonorm_parse, _norm_infer, _nonorm_reference,
               lambda p, ins, outs: Cost(ops=4 * outs[0].size,
                                         bytes=sum(t.nbytes for t in ins) + outs[0].nbytes),
               traits=frozenset({Trait.ROWWISE}), tiling="norm",
               magnitude=output_type_magnitudes,
               examples=_inonorm_cases))
