"""Integer softmaxes over the last axis, all with a uint8 output (see specs/integer-ops.md):
iSoftmax (I-BERT style second-order exp), ITAMax (base-2 softmax) and ITAPartialMax (ITAMax
streamed over column groups of ``group_width``)."""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import UINT8
from Deeploy.ops._attrs import attr_int, require_inputs
from Deeploy.ops.bounds import output_type_magnitudes
from Deeploy.ops.examples import equal_rows, F32, Case, act, rand, tensor_attr
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["ISoftmaxParams", "ITAMaxParams", "ITAPartialMaxParams"]

_MAX_SHIFT = 63  # larger right shifts of a non-negative int64 give 0 as well


def _levels(node) -> int:
    levels = attr_int(node, "n_levels")
    if not 2 <= levels <= 256:
        raise OpError(node, f"n_levels must be in 2..256 for a uint8 output, got {levels}")
    return levels


def _rows(node, graph) -> tuple[tuple[int, ...], int]:
    require_inputs(node, 1)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if not shape or shape[-1] < 1:
        raise OpError(node, f"needs a non-empty last axis, got input shape {list(shape)}")
    return shape, shape[-1]


# ---- iSoftmax ------------------------------------------------------------------------------
@dataclass(frozen=True)
class ISoftmaxParams:
    """``e = (coeff_a*(p + coeff_b)^2 + coeff_c) >> z`` per element, normalised to n_levels-1."""

    shape: tuple[int, ...]
    coeff_a: int
    coeff_b: int
    coeff_c: int
    log2: int
    n_levels: int

    @property
    def width(self) -> int:
        return self.shape[-1]


def _isoftmax_parse(node, graph):
    shape, _ = _rows(node, graph)
    a, b, c = (attr_int(node, k) for k in ("coeffA", "coeffB", "coeffC"))
    log2 = attr_int(node, "log2")
    if log2 < 1:
        raise OpError(node, f"log2 must be positive, got {log2}")
    if a * b * b + c <= 0:
        raise OpError(node, f"coeffA*coeffB^2 + coeffC = {a * b * b + c} must be positive "
                      "(the exp of the row maximum)")
    return ISoftmaxParams(shape, a, b, c, log2, _levels(node))


def _isoftmax_reference(p: ISoftmaxParams, xs):
    x = xs[0]
    xt = x - np.max(x, axis=-1, keepdims=True)           # <= 0
    z = np.minimum((-xt) // p.log2, 31)                  # trunc == floor: -xt >= 0
    q = xt + z * p.log2
    e = (p.coeff_a * (q + p.coeff_b) ** 2 + p.coeff_c) >> z
    total = np.sum(e, axis=-1, keepdims=True)
    return [np.floor_divide(e * (p.n_levels - 1), total)]


def _softmax_cost(p, ins, outs):
    return Cost(ops=12 * outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _isoftmax_attrs(log2, coeff_a=1):
    """I-BERT's second-order exp for an input scale S = ln2/log2."""
    scale = math.log(2) / log2
    return dict(coeffA=coeff_a, coeffB=math.floor(1.353 / scale),
                coeffC=math.floor(0.344 / (0.3585 * scale ** 2)), log2=log2, n_levels=256)


def _isoftmax_cases(rng):
    def sm(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    equal = np.repeat(np.array([[-128], [0], [127]]), 12, axis=1)
    return [
        sm("full_int8_log2_127", rand(rng, [2, 3, 16]), **_isoftmax_attrs(127)),
        sm("log2_255_long_rows", rand(rng, [2, 100]), **_isoftmax_attrs(255)),
        sm("coeffA_3_tensor_attrs", rand(rng, [4, 9]),
           **{k: tensor_attr(v) for k, v in _isoftmax_attrs(96, coeff_a=3).items()}),
        sm("z_capped_small_log2", rand(rng, [3, 20]), **_isoftmax_attrs(3)),
        sm("int16_inputs_z_capped_at_31", rand(rng, [3, 12], -2**15, 2**15 - 1),
           **_isoftmax_attrs(127)),
        sm("all_equal_rows", equal, **_isoftmax_attrs(127)),
        sm("single_column", rand(rng, [5, 1]), **_isoftmax_attrs(127)),
    ]




def _itamax_cases(rng):
    def ita(label, x, **attrs):
        attrs.setdefault("n_levels", 256)
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    return [
        ita("full_int8", rand(rng, [2, 4, 24])),
        ita("all_equal_rows", equal_rows([-128, 0, 127], 16)),
        ita("single_column", rand(rng, [5, 1])),
        ita("n_levels_16", rand(rng, [3, 8]), n_levels=16),
        ita("int16_range_large_shifts", rand(rng, [3, 12], -2**15, 2**15 - 1)),
    ]


def _itapartialmax_cases(rng):
    def ita(label, x, **attrs):
        attrs.setdefault("n_levels", 256)
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    rising = np.sort(rand(rng, [2, 48]), axis=1)
    return [
        ita("default_group_width_40_cols", rand(rng, [2, 3, 40])),
        ita("group4_ragged_last_group", rand(rng, [3, 10]), group_width=4),
        ita("group_wider_than_row", rand(rng, [3, 7]), group_width=32),
        ita("max_rises_every_group", rising, group_width=16),
        ita("max_falls_every_group", rising[:, ::-1].copy(), group_width=8),
        ita("all_equal_rows", equal_rows([-128, -100, 0, 127], 20), group_width=16),
    ]


register(OpDef("iSoftmax", _isoftmax_parse, lambda p, ins: [(p.shape, UINT8)],
               _isoftmax_reference, _softmax_cost,
               traits=frozenset({Trait.ROWWISE}), tiling="softmax", fuse_slots=0,
               magnitude=output_type_magnitudes,
               examples=_isoftmax_cases, value_attrs=frozenset({"coeffA", "coeffB", "coeffC", "log2"})))


# ---- ITAMax --------------------------------------------------------------------------------
@dataclass(frozen=True)
class ITAMaxParams:
    shape: tuple[int, ...]
    n_levels: int


def _ita_shift(m, x):
    return np.minimum((m - x + 16) >> 5, _MAX_SHIFT)


def _itamax_parse(node, graph):
    shape, _ = _rows(node, graph)
    return ITAMaxParams(shape, _levels(node))


def _itamax_reference(p: ITAMaxParams, xs):
    x = xs[0]
    sh = _ita_shift(np.max(x, axis=-1, keepdims=True), x)
    total = np.sum(256 >> sh, axis=-1, keepdims=True)    # >= 256: the maximum adds 256
    inv = ((p.n_levels - 1) * 256) // total
    return [inv >> sh]


register(OpDef("ITAMax", _itamax_parse, lambda p, ins: [(p.shape, UINT8)],
               _itamax_reference, _softmax_cost,
               traits=frozenset({Trait.ROWWISE}), tiling="softmax",
               magnitude=output_type_magnitudes,
               examples=_itamax_cases))


# ---- ITAPartialMax -------------------------------------------------------------------------
@dataclass(frozen=True)
class ITAPartialMaxParams:
    shape: tuple[int, ...]
    group_width: int
    n_levels: int


def _itapartialmax_parse(node, graph):
    shape, _ = _rows(node, graph)
    group = attr_int(node, "group_width", 16)
    if group < 1:
        raise OpError(node, f"group_width must be positive, got {group}")
    x = graph.tensors[node.inputs[0]]
    if x.dtype is not None and x.dtype.min < -128:
        raise OpError(node, f"input type {x.dtype} is wider than 8 bits: the running maximum "
                      "starts at -128")
    return ITAPartialMaxParams(shape, group, _levels(node))


def _itapartialmax_reference(p: ITAPartialMaxParams, xs):
    x = xs[0]
    lead = x.shape[:-1]
    m = np.full(lead + (1,), -128, dtype=np.int64)
    total = np.zeros(lead + (1,), dtype=np.int64)
    for g in range(0, x.shape[-1], p.group_width):
        block = x[..., g:g + p.group_width]
        cm = np.max(block, axis=-1, keepdims=True)
        grow = cm > m
        total = np.where(grow, total >> _ita_shift(cm, m), total)
        m = np.where(grow, cm, m)
        total = total + np.sum(256 >> _ita_shift(m, block), axis=-1, keepdims=True)
    inv = ((p.n_levels // 2 - 1) * 256) // total
    return [inv >> _ita_shift(m, x)]


register(OpDef("ITAPartialMax", _itapartialmax_parse, lambda p, ins: [(p.shape, UINT8)],
               _itapartialmax_reference, _softmax_cost,
               traits=frozenset({Trait.ROWWISE}), tiling="softmax",
               magnitude=output_type_magnitudes,
               examples=_itapartialmax_cases))
