"""Cases of the custom integer ops and their oracles: plain restatements of specs/integer-ops.md."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from DeeployTest.test_suite.op_cases._case import (F32, act, Case, clip, const, floor_div, num, OpRecord, rand, rows,
                                              tensor_attr, trunc_div)


def _flat_or_broadcast(c: np.ndarray, x_shape):
    """RequantShift's rule for mul/add: numpy broadcasting when it keeps x's shape, else a flat
    per-channel vector along axis 1. Returns index -> value."""
    if c.size == 1:
        value = int(c.reshape(-1)[0])
        return lambda idx: value
    try:
        keeps = tuple(np.broadcast_shapes(c.shape, x_shape)) == tuple(x_shape)
    except ValueError:
        keeps = False
    if keeps:
        full = np.broadcast_to(c, x_shape)
        return lambda idx: int(full[idx])
    flat = c.reshape(-1).tolist()
    return lambda idx: flat[idx[1]]


def naive_requant_shift(xs, attrs):
    x, mul, add = xs
    div = num(attrs["div"])
    signed = num(attrs.get("signed", 1))
    m, a = _flat_or_broadcast(mul, x.shape), _flat_or_broadcast(add, x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        acc = int(x[idx]) * m(idx) + a(idx)
        v = math.floor(Fraction(acc, div) + Fraction(1, 2))
        y[idx] = clip(v, -128, 127) if signed else clip(v, 0, 255)
    return y


def _requant_cases(rng):
    def rqs(label, x, mul, add, out_type="int8", **attrs):
        attrs.setdefault("n_levels", 256)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        return Case(label, (act(x, F32), const(mul, F32), const(add, F32)), attrs, out_type=out_type)
    return [
        rqs("per_tensor", rand(rng, [1, 4, 5, 5], -2**15, 2**15), np.array(211),
            np.array([-1234]), div=2**15, signed=1),
        rqs("per_channel_1C11_negative_mul", rand(rng, [1, 4, 3, 3], -2**14, 2**14),
            rand(rng, [1, 4, 1, 1], -200, 200), rand(rng, [1, 4, 1, 1], -2**14, 2**14), div=2**12),
        rqs("C11_on_conv1d_output", rand(rng, [1, 6, 7], -2**14, 2**14),
            rand(rng, [6, 1, 1], 1, 255), rand(rng, [6, 1, 1], -2**14, 2**14), div=2**13),
        rqs("gemm_rows_M1", rand(rng, [5, 8], -2**12, 2**12), rand(rng, [5, 1], 1, 64),
            rand(rng, [5, 1], -2**10, 2**10), div=2**8),
        rqs("vector_C_unsigned_n_levels_out", rand(rng, [2, 6, 3, 4], -2**12, 2**12),
            rand(rng, [6], 1, 100), np.array(2**13), "uint8", n_levels_out=256, signed=0,
            div=2**10, n_levels=None),
        rqs("div1_tensor_attrs", rand(rng, [3, 10], -300, 300), np.array(1), np.array(0),
            div=tensor_attr(1), n_levels=tensor_attr(256, rank1=False), signed=1),
        rqs("half_way_ties", np.arange(-20, 20).reshape(4, 10), np.array(1), np.array(0),
            div=4),
    ]


def naive_isoftmax(xs, attrs):
    x = xs[0]
    a, b, c, log2, levels = (num(attrs[k]) for k in ("coeffA", "coeffB", "coeffC", "log2",
                                                        "n_levels"))
    out = []
    for row in rows(x):
        m = max(row)
        es = []
        for v in row:
            xt = v - m
            z = min(math.trunc(Fraction(-xt, log2)), 31)
            p = xt + z * log2
            es.append(math.floor(Fraction(a * (p + b) ** 2 + c, 2 ** z)))
        total = sum(es)
        out += [math.floor(Fraction(e * (levels - 1), total)) for e in es]
    return np.array(out, dtype=np.int64).reshape(x.shape)


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


def _ita_shift(m, v):
    return math.floor(Fraction(m - v + 16, 32))


def naive_itamax(xs, attrs):
    x = xs[0]
    levels = num(attrs["n_levels"])
    out = []
    for row in rows(x):
        m = max(row)
        sh = [_ita_shift(m, v) for v in row]
        total = sum(256 // 2 ** s for s in sh)
        inv = math.floor(Fraction((levels - 1) * 256, total))
        out += [inv // 2 ** s for s in sh]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_itapartialmax(xs, attrs):
    x = xs[0]
    width = num(attrs.get("group_width", 16))
    levels = num(attrs["n_levels"])
    out = []
    for row in rows(x):
        m, total = -128, 0
        for start in range(0, len(row), width):
            group = row[start:start + width]
            cm = max(group)
            if cm > m:
                total = total // 2 ** _ita_shift(cm, m)
                m = cm
            total += sum(256 // 2 ** _ita_shift(m, v) for v in group)
        inv = math.floor(Fraction((levels // 2 - 1) * 256, total))
        out += [inv // 2 ** _ita_shift(m, v) for v in row]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def _equal_rows(values, width):
    return np.repeat(np.array(values).reshape(-1, 1), width, axis=1)


def _itamax_cases(rng):
    def ita(label, x, **attrs):
        attrs.setdefault("n_levels", 256)
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    return [
        ita("full_int8", rand(rng, [2, 4, 24])),
        ita("all_equal_rows", _equal_rows([-128, 0, 127], 16)),
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
        ita("all_equal_rows", _equal_rows([-128, -100, 0, 127], 20), group_width=16),
    ]


def naive_igelu(xs, attrs):
    x = xs[0]
    b, one = num(attrs["b"]), num(attrs["one"])
    out = []
    for v in x.reshape(-1).tolist():
        sign = (v > 0) - (v < 0)
        q = min(abs(v), -b)
        erf = sign * (one - (q + b) ** 2)
        out.append(v * math.floor(Fraction(one + erf, 2)))
    return np.array(out, dtype=np.int64).reshape(x.shape)


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


def naive_ihardswish(xs, attrs):
    x = xs[0]
    one_over_six, three, six = (num(attrs[k]) for k in ("one_over_six", "three", "six"))
    out = [v * (clip(v + three, 0, six) * one_over_six) for v in x.reshape(-1).tolist()]
    return np.array(out, dtype=np.int64).reshape(x.shape)


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


def naive_true_integer_div(xs, attrs):
    x = xs[0]
    delta, eps, eta, y = (Fraction(num(attrs[k])) for k in ("Delta", "eps", "eta", "y"))
    coeff = math.floor(delta * eta / (y * eta + eps))
    return np.array([v * coeff for v in x.reshape(-1).tolist()], dtype=np.int64).reshape(x.shape)


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


def naive_integer_div(xs, attrs):
    """``round(x*Delta*eta / (y*eta + eps))``: the spec's round() does not fix ties; ties are
    taken away from zero, as the module documents for the upstream kernel."""
    x, y = xs
    delta, eps, eta = num(attrs["Delta"]), num(attrs["eps"]), num(attrs.get("eta", 1))
    xb, yb = np.broadcast_arrays(x, y)
    out = []
    for xv, yv in zip(xb.reshape(-1).tolist(), yb.reshape(-1).tolist()):
        q = Fraction(xv * delta * eta, yv * eta + eps)
        r = math.floor(abs(q) + Fraction(1, 2))
        out.append(r if q >= 0 else -r)
    return np.array(out, dtype=np.int64).reshape(xb.shape)


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


def naive_ilayernorm(xs, attrs):
    x, weight, bias = xs
    div = num(attrs["D"])
    w, b = weight.reshape(-1).tolist(), bias.reshape(-1).tolist()
    out = []
    for row in rows(x):
        length = len(row)
        mean = trunc_div(sum(row), length)
        d = [v - mean for v in row]
        std = math.isqrt(floor_div(sum(v * v for v in d), length) + 1)
        out += [clip(floor_div(trunc_div(dv * w[k % len(w)], std) + b[k % len(b)], div), -128, 127)
                for k, dv in enumerate(d)]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_irmsnorm(xs, attrs):
    x, weight = xs
    div = num(attrs["D"])
    w = weight.reshape(-1).tolist()
    out = []
    for row in rows(x):
        std = math.isqrt(trunc_div(sum(v * v for v in row), len(row)) + 1)
        out += [clip(floor_div(trunc_div(v * w[k % len(w)], std), div), -128, 127)
                for k, v in enumerate(row)]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_inonorm(xs, attrs):
    """``((x*weight + bias) * mul) >> s``, clipped to int8: the spec lists iNoNorm among the ops
    that bring values back to 8 bits, though its formula omits the clip."""
    x, weight, bias = xs
    div, mul = num(attrs["D"]), num(attrs["mul"])
    w, b = np.broadcast_to(weight, x.shape), np.broadcast_to(bias, x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        y[idx] = clip(floor_div((int(x[idx]) * int(w[idx]) + int(b[idx])) * mul, div), -128, 127)
    return y


def _norm_case(label, operands, **attrs):
    attrs.setdefault("n_levels", 256)
    return Case(label, tuple(const(o, F32) if k else act(o, F32) for k, o in enumerate(operands)),
                attrs, out_type="int8")


def _ilayernorm_cases(rng):
    crafted = np.array([[0, 0, 4, -4], [5, 5, 5, 5], [-7, -6, -6, -6], [-128, 127, -128, 127]])
    return [
        _norm_case("int8_rows", [rand(rng, [2, 5, 16]), rand(rng, [16]),
                                 rand(rng, [16], -2**12, 2**12)], D=16),
        _norm_case("int16_inputs_long_rows", [rand(rng, [3, 64], -2**14, 2**14), rand(rng, [64]),
                                              rand(rng, [64], -2**10, 2**10)], D=32),
        _norm_case("all_equal_rows", [_equal_rows([-128, 3, 127], 8), rand(rng, [8]),
                                      rand(rng, [8], -2**11, 2**11)], D=8),
        _norm_case("crafted_rows_tensor_D", [crafted, rand(rng, [4]), rand(rng, [4], -500, 500)],
                   D=tensor_attr(4)),
    ]


def _irmsnorm_cases(rng):
    return [
        _norm_case("int8_rows", [rand(rng, [3, 32]), rand(rng, [32])], D=8),
        _norm_case("int16_inputs", [rand(rng, [2, 48], -2**12, 2**12),
                                    rand(rng, [48], -2**10, 2**10)], D=64),
        _norm_case("zero_and_equal_rows", [_equal_rows([0, -128, 7, 127], 6), rand(rng, [6])],
                   D=1),
        # sum(x^2)/L + 1 is a perfect square: the +1 changes the root
        _norm_case("crafted_perfect_squares", [np.array([[0, 4], [1, 4], [0, 7], [-7, 0], [4, -1]]),
                                               np.array([20, -30])], D=1),
    ]


def _inonorm_cases(rng):
    return [
        _norm_case("int8", [rand(rng, [2, 3, 8]), rand(rng, [8]), rand(rng, [8], -2**10, 2**10)],
                   D=256, mul=3),
        _norm_case("negative_mul", [rand(rng, [4, 6]), rand(rng, [6]), rand(rng, [6], -2**8, 2**8)],
                   D=512, mul=-5),
    ]


def naive_integer_mean(xs, attrs):
    x = xs[0]
    axes = sorted(a % x.ndim for a in attrs["axes"])
    keepdims = num(attrs.get("keepdims", 1))
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    kept_shape = moved.shape[:x.ndim - len(axes)]
    out = []
    for group in moved.reshape(int(np.prod(kept_shape, dtype=np.int64)), -1).tolist():
        out.append(math.floor(Fraction(sum(group), len(group)) + Fraction(1, 2)))
    shape = [1 if k in axes else d for k, d in enumerate(x.shape)] if keepdims else kept_shape
    return np.array(out, dtype=np.int64).reshape(shape)


def _integer_mean_cases(rng):
    def mean(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs)
    return [
        mean("axis1_dropped", rand(rng, [2, 5, 6]), axes=[1], keepdims=0),
        mean("spatial_keepdims", rand(rng, [1, 4, 3, 3]), axes=[2, 3], keepdims=1),
        mean("ties_default_keepdims", rand(rng, [6, 2], -3, 3), axes=[-1]),
        mean("two_axes_of_three", rand(rng, [4, 3, 2]), axes=[0, 2], keepdims=0),
    ]


CUSTOM_RECORDS = [
    OpRecord("RequantShift", _requant_cases, naive_requant_shift),
    OpRecord("iSoftmax", _isoftmax_cases, naive_isoftmax),
    OpRecord("ITAMax", _itamax_cases, naive_itamax),
    OpRecord("ITAPartialMax", _itapartialmax_cases, naive_itapartialmax),
    OpRecord("iGELU", _igelu_cases, naive_igelu),
    OpRecord("iLayerNorm", _ilayernorm_cases, naive_ilayernorm),
    OpRecord("iRMSNorm", _irmsnorm_cases, naive_irmsnorm),
    OpRecord("iHardswish", _ihardswish_cases, naive_ihardswish),
    OpRecord("TrueIntegerDiv", _true_integer_div_cases, naive_true_integer_div),
    OpRecord("IntegerDiv", _integer_div_cases, naive_integer_div),
    OpRecord("iNoNorm", _inonorm_cases, naive_inonorm),
    OpRecord("IntegerMean", _integer_mean_cases, naive_integer_mean),
]
