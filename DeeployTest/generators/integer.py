"""The integer custom ops of QuantLib-style exports (see ../shared/specs/integer-ops.md):
iSoftmax, ITAMax, ITAPartialMax, iGELU, iLayerNorm, iRMSNorm, iHardswish, TrueIntegerDiv and
iNoNorm, the wide-output ones followed by a calibrated RequantShift. Goldens come from the
compiler's numpy references."""

from __future__ import annotations

import math

import numpy as np

from DeeployTest.generators.builder import Net, tensor_attr
from DeeployTest.generators.registry import ints_in, s8, test


def isoftmax_attrs(log2: int, tensor: bool = True) -> dict:
    """I-BERT style second-order exp coefficients for an input scale of ln2/log2 per step
    (the corpus pairs log2=255 -> coeffB=345, coeffC~62395)."""
    vals = {"coeffA": 1, "coeffB": round(1.353 * log2), "coeffC": round(0.9595 * log2 * log2),
            "log2": log2, "n_levels": 256}
    return {k: tensor_attr(v) for k, v in vals.items()} if tensor else vals


def igelu_attrs(scale: float) -> dict:
    """iGELU ``b`` and ``one`` for inputs of ``scale`` real units per integer step."""
    s_erf = scale / math.sqrt(2)
    return {"b": math.floor(-1.769 / s_erf), "one": math.floor(1 / (0.2888 * s_erf * s_erf))}


def _unary(op, x, attrs, rq=False, rng=None, rq_signed=True, consts=(), name=None):
    net = Net(name or op)
    x = net.input("input", x)
    ins = [x] + [net.const(v, f"{op}.{n}") for n, v in consts]
    y = net.node(op, ins, attrs)
    if rq:
        y = net.calib_rqs(y, signed=rq_signed, offset_rng=rng)
    net.output(y)
    return net


# ---- softmaxes -----------------------------------------------------------------------------
@test("Kernels/iSoftmax/Regular")
def isoftmax_regular(rng):
    return _unary("iSoftmax", s8(rng, (1, 3, 8, 8)), isoftmax_attrs(255))


@test("Kernels/iSoftmax/Attention_Row")
def isoftmax_attention(rng):
    # one query row over a 65-long KV cache, as in autoregressive attention
    return _unary("iSoftmax", s8(rng, (1, 4, 1, 65)), isoftmax_attrs(63))


@test("Kernels/iSoftmax/Wide_Row_IntAttrs")
def isoftmax_wide(rng):
    return _unary("iSoftmax", s8(rng, (2, 128)), isoftmax_attrs(24, tensor=False))


@test("Kernels/ITAMax/Regular")
def itamax_regular(rng):
    return _unary("ITAMax", s8(rng, (1, 2, 8, 16)), {"n_levels": 256})


@test("Kernels/ITAMax/Long_Row")
def itamax_long(rng):
    return _unary("ITAMax", s8(rng, (4, 100)), {"n_levels": tensor_attr(256)})


@test("Kernels/ITAPartialMax/Regular")
def itapartialmax_regular(rng):
    return _unary("ITAPartialMax", s8(rng, (1, 2, 4, 64)), {"group_width": 16, "n_levels": 256})


@test("Kernels/ITAPartialMax/Ragged_Group")
def itapartialmax_ragged(rng):
    # 40 columns: two full groups of 16 and a partial one of 8
    return _unary("ITAPartialMax", s8(rng, (3, 40)), {"group_width": 16, "n_levels": 256})


@test("Kernels/ITAPartialMax/Group8")
def itapartialmax_group8(rng):
    return _unary("ITAPartialMax", s8(rng, (2, 4, 32)), {"group_width": 8, "n_levels": 256})


# ---- iGELU ---------------------------------------------------------------------------------
@test("Kernels/iGELU/Regular_RQ")
def igelu_rq(rng):
    return _unary("iGELU", s8(rng, (1, 16, 32)), igelu_attrs(4 / 128), rq=True, rng=rng)


@test("Kernels/iGELU/TensorAttrs_RQ")
def igelu_tensor_rq(rng):
    attrs = {k: tensor_attr(v) for k, v in igelu_attrs(8 / 128).items()}
    return _unary("iGELU", s8(rng, (4, 96)), attrs, rq=True, rng=rng)


@test("Kernels/iGELU/NoRQ")
def igelu_plain(rng):
    return _unary("iGELU", s8(rng, (2, 64)), igelu_attrs(3 / 128))


# ---- iHardswish ----------------------------------------------------------------------------
@test("Kernels/iHardswish/Regular_RQ")
def ihardswish_rq(rng):
    return _unary("iHardswish", s8(rng, (1, 4, 8, 8)), {"one_over_six": 42, "three": 122, "six": 245},
                  rq=True, rng=rng)


@test("Kernels/iHardswish/LargeThree_RQ")
def ihardswish_large(rng):
    return _unary("iHardswish", s8(rng, (1, 1, 10, 100)), {"one_over_six": 33, "three": 765, "six": 1530},
                  rq=True, rng=rng)


@test("Kernels/iHardswish/NoRQ")
def ihardswish_plain(rng):
    return _unary("iHardswish", s8(rng, (2, 64)), {"one_over_six": 21, "three": 48, "six": 96})


# ---- TrueIntegerDiv ------------------------------------------------------------------------
@test("Kernels/TrueIntegerDiv/RQ_Div_RQ")
def true_div_corpus_like(rng):
    net = Net("TrueIntegerDiv")
    x = net.input("input", ints_in(rng, -16384, 16383, (1, 16, 64)))
    y = net.calib_rqs(x, target=100)
    y = net.node("TrueIntegerDiv", [y], {"Delta": 16384, "eps": 1, "eta": 200000, "y": 2})
    net.output(net.calib_rqs(y, center=False))
    return net


@test("Kernels/TrueIntegerDiv/Int8_Y4_RQ")
def true_div_int8(rng):
    net = Net("TrueIntegerDiv")
    x = net.input("input", s8(rng, (4, 64)))
    y = net.node("TrueIntegerDiv", [x], {"Delta": 4096, "eps": 1, "eta": 65536, "y": 4})
    net.output(net.calib_rqs(y, center=False))
    return net


@test("Kernels/TrueIntegerDiv/TensorAttrs_Y8_RQ")
def true_div_tensor(rng):
    net = Net("TrueIntegerDiv")
    x = net.input("input", s8(rng, (2, 8, 16)))
    attrs = {k: tensor_attr(v) for k, v in {"Delta": 8192, "eps": 3, "eta": 1000, "y": 8}.items()}
    y = net.node("TrueIntegerDiv", [x], attrs)
    net.output(net.calib_rqs(y, center=False))
    return net


# ---- normalisations ------------------------------------------------------------------------
def _norm_weight(rng, n, shift, gain=40.0):
    return np.round(rng.uniform(0.5, 1.5, size=n) * gain * (1 << shift)).astype(np.int64)


@test("Kernels/iLayerNorm/Regular")
def ilayernorm_regular(rng):
    shift = 8
    return _unary("iLayerNorm", s8(rng, (1, 16, 64)), {"D": tensor_attr(1 << shift), "n_levels": tensor_attr(256)},
                  consts=[("weight", _norm_weight(rng, 64, shift)),
                          ("bias", rng.integers(-10, 11, size=64) * (1 << shift))])


@test("Kernels/iLayerNorm/Small_IntAttrs")
def ilayernorm_small(rng):
    shift = 10
    x = np.clip(np.round(rng.normal(20, 30, size=(2, 8, 32))), -128, 127).astype(np.int64)  # non-zero mean
    x.reshape(-1)[:2] = [-128, 127]
    return _unary("iLayerNorm", x, {"D": 1 << shift, "n_levels": 256},
                  consts=[("weight", _norm_weight(rng, 32, shift, 50.0)),
                          ("bias", rng.integers(-2000, 2001, size=32))])


@test("Kernels/iRMSNorm/Regular")
def irmsnorm_regular(rng):
    shift = 16
    return _unary("iRMSNorm", ints_in(rng, -64, 64, (1, 16, 64)), {"D": 1 << shift, "n_levels": 256},
                  consts=[("weight", _norm_weight(rng, 64, shift, 45.0))])


@test("Kernels/iRMSNorm/Small")
def irmsnorm_small(rng):
    shift = 12
    return _unary("iRMSNorm", s8(rng, (4, 32)), {"D": tensor_attr(1 << shift), "n_levels": tensor_attr(256)},
                  consts=[("weight", _norm_weight(rng, 32, shift, 60.0))])


def _inonorm(rng, x_shape, w_shape, b_shape, shift, tensor_attrs=True):
    net = Net("iNoNorm")
    x = net.input("input", s8(rng, x_shape))
    w = rng.integers(20, 121, size=w_shape) * np.where(rng.random(w_shape) < 0.2, -1, 1)
    b = rng.integers(-3000, 3001, size=b_shape)
    acc = net.value(x) * w + b
    amp = max(np.percentile(np.abs(acc), 99.7), 1.0)
    mul = max(1, round(115 * (1 << shift) / amp))
    attrs = {"D": 1 << shift, "mul": mul, "n_levels": 256}
    if tensor_attrs:
        attrs = {k: tensor_attr(v) for k, v in attrs.items()}
    net.output(net.node("iNoNorm", [x, net.const(w, "iNoNorm.weight"), net.const(b, "iNoNorm.bias")], attrs))
    return net


@test("Kernels/iNoNorm/Regular")
def inonorm_regular(rng):
    return _inonorm(rng, (1, 32, 32), (32, 32), (32,), 16)


@test("Kernels/iNoNorm/Vector_Weight_IntAttrs")
def inonorm_vector(rng):
    return _inonorm(rng, (2, 8, 24), (24,), (24,), 12, tensor_attrs=False)
