"""Layers shared by the whole-network generators (not a test family itself): sample images, a
Conv or linear layer followed by its calibrated RequantShift, and the QuantLib-style residual Add
(both branches brought to a common scale by RequantShifts, added, requantized)."""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import weights

__all__ = ["image", "conv_rq", "linear_rq", "residual_add", "shape_const"]


def image(rng, shape):
    """A smooth uint8 'image' (blobs and gradients) rather than white noise."""
    c, h, w = shape[1:]
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    img = np.zeros((c, h, w))
    for k in range(c):
        for _ in range(3):
            cy, cx, r = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.15, 0.5)
            img[k] += rng.uniform(-1, 1) * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / r ** 2)
        img[k] += rng.uniform(-0.5, 0.5) * xx + rng.uniform(-0.5, 0.5) * yy
    img += rng.normal(0, 0.08, size=img.shape)
    img = (img - img.min()) / (img.max() - img.min())
    return np.round(img * 255).astype(np.int64).reshape(shape)


def _pair(v):
    return tuple(v) if isinstance(v, (tuple, list)) else (v, v)


def conv_rq(net: Net, rng, x, ch_out, kernel, stride=1, pads=None, group=1, bias=False,
            signed=True, name="conv", zero_frac=0.25, target=None, max_shift=16):
    """2-D Conv (``pads`` [top, left, bottom, right], default 'same' for odd kernels) and a
    per-channel RequantShift: signed, or unsigned with a ReLU-like cut of ``zero_frac``."""
    ch_in = net.shape(x)[1]
    kh, kw = _pair(kernel)
    sh, sw = _pair(stride)
    if pads is None:
        pads = [kh // 2, kw // 2, kh // 2, kw // 2]
    w = net.const(weights(rng, (ch_out, ch_in // group, kh, kw)), f"{name}.weight")
    ins = [x, w]
    if bias:
        ins.append(net.const(rng.integers(-4000, 4001, size=ch_out), f"{name}.bias"))
    y = net.node("Conv", ins, {"dilations": [1, 1], "group": group, "kernel_shape": [kh, kw],
                               "pads": list(pads), "strides": [sh, sw]}, name=name)
    return net.calib_rqs(y, signed=signed, axis=1, offset_rng=rng, name=f"{name}.rqs", target=target,
                         zero_frac=None if signed else zero_frac, max_shift=max_shift)


def linear_rq(net: Net, rng, x, n_out, name, form="gemm", signed=True, zero_frac=0.25,
              target=None, center=True, bias_amp=3000, max_shift=16, rq=True, weight=None):
    """A fully connected layer over the last axis of ``x`` and a per-tensor RequantShift.

    form: 'gemm' (Gemm, weight [n_out, n_in], transB=1, bias input C), 'gemm_nt' (Gemm,
    weight [n_in, n_out]), or 'matmul' (MatMul with a [n_in, n_out] weight, then an Add of the
    bias, as the QuantLib exports of transformers write linear layers). ``weight``: given
    weights (in the layout of the form) instead of random ones."""
    n_in = net.shape(x)[-1]
    b = net.const(rng.integers(-bias_amp, bias_amp + 1, size=n_out), f"{name}.bias")
    if form == "gemm":
        w = net.const(weights(rng, (n_out, n_in)) if weight is None else weight, f"{name}.weight")
        y = net.node("Gemm", [x, w, b], {"alpha": 1.0, "beta": 1.0, "transB": 1}, name=name)
    elif form == "gemm_nt":
        w = net.const(weights(rng, (n_in, n_out)) if weight is None else weight, f"{name}.weight")
        y = net.node("Gemm", [x, w, b], {"alpha": 1.0, "beta": 1.0}, name=name)
    elif form == "matmul":
        w = net.const(weights(rng, (n_in, n_out)) if weight is None else weight, f"{name}.weight")
        y = net.node("MatMul", [x, w], name=f"{name}_MatMul")
        y = net.node("Add", [y, b], name=f"{name}_Add")
    else:
        raise ValueError(form)
    if not rq:
        return y
    return net.calib_rqs(y, signed=signed, name=f"{name}.rqs", target=target, center=center,
                         zero_frac=None if signed else zero_frac, max_shift=max_shift)


def residual_add(net: Net, a, b, name, signed=True, zero_frac=0.25, branch_target=60, max_shift=16,
                 rescale=(True, True)):
    """QuantLib-style residual: both branches to a common scale (a RequantShift on each branch
    marked in ``rescale``; the others already are at that scale), Add, requantize (signed, or
    unsigned with a ReLU-like cut)."""
    branches = []
    for side, x, rq in (("lhs", a, rescale[0]), ("rhs", b, rescale[1])):
        if rq:
            x = net.calib_rqs(x, target=branch_target, center=False, name=f"{name}.{side}.rqs",
                              max_shift=max_shift)
        branches.append(x)
    s = net.node("Add", branches, name=name)
    return net.calib_rqs(s, signed=signed, center=False, name=f"{name}.rqs", max_shift=max_shift,
                         zero_frac=None if signed else zero_frac)


def shape_const(net: Net, values, name):
    return net.const(np.array(values, dtype=np.int64), name, dtype=np.int64)
