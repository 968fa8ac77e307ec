"""Linear kernels: Gemm (transA/transB, alpha/beta, bias, rank-3 batched A), MatMul (2-D,
batched, broadcast operands) and RequantShift alone (scalar, per-channel, per-row, unsigned,
negative multipliers, the attribute spellings seen in real files)."""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import ints_in, s8, test, weights


# ---- Gemm ----------------------------------------------------------------------------------
def _gemm(rng, a_shape, b_shape, c_shape=None, rq=None, ort=True, **attrs):
    net = Net("Gemm")
    a = net.input("input", s8(rng, a_shape))
    ins = [a, net.const(weights(rng, b_shape), "Gemm.weight")]
    if c_shape is not None:
        ins.append(net.const(rng.integers(-3000, 3001, size=c_shape), "Gemm.bias"))
    attrs = {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0, **attrs}
    y = net.node("Gemm", ins, attrs, ort=ort)
    if rq == "row":
        y = net.calib_rqs(y, axis=0, vec_shape=(net.shape(y)[0], 1), offset_rng=rng)
    elif rq == "col":
        y = net.calib_rqs(y, axis=-1, vec_shape=(net.shape(y)[-1],), offset_rng=rng)
    elif rq == "scalar":
        y = net.calib_rqs(y, offset_rng=rng)
    elif isinstance(rq, dict):   # scalar, with the RequantShift's calibration options
        y = net.calib_rqs(y, offset_rng=rng, **rq)
    net.output(y)
    return net


@test("Kernels/Gemm/Regular")
def gemm_regular(rng):
    return _gemm(rng, (16, 32), (32, 8), (8,))


@test("Kernels/Gemm/TransB_RQPerColumn")
def gemm_transb(rng):
    return _gemm(rng, (8, 64), (16, 64), (16,), rq="col", transB=1)


@test("Kernels/Gemm/AlphaBeta_RQPerRow")
def gemm_alpha_beta(rng):
    return _gemm(rng, (16, 24), (24, 12), (16, 12), rq="row", alpha=2.0, beta=3.0)


@test("Kernels/Gemm/TransA_NoBias")
def gemm_transa(rng):
    return _gemm(rng, (32, 6), (32, 8), None, transA=1)


@test("Kernels/Gemm/Batch_RQ")
def gemm_batch(rng):
    # rank-3 A: not standard ONNX (onnxruntime rejects it), but real exports contain it
    return _gemm(rng, (2, 4, 16), (8, 16), (8,), rq="scalar", ort=False, transB=1)


# ---- MatMul --------------------------------------------------------------------------------
def gemm_int8_bias_rq(rng, m, k, n, c_shape, mul, add, shift, signed=True, c_max=128):
    """Gemm with a C (shape c_shape, values in [-c_max, c_max): int8 by default) and a scalar
    RequantShift (mul, add, shift) small enough for 32-bit requantisation arithmetic: GemmRQ's
    bias path in the assembly store."""
    net = Net("Gemm")
    a = net.input("input", ints_in(rng, -128, 127, (m, k)))
    ins = [a, net.const(weights(rng, (k, n)), "Gemm.weight"),
           net.const(rng.integers(-c_max, c_max, size=c_shape), "Gemm.bias")]
    y = net.node("Gemm", ins, {"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0})
    net.output(net.rqs(y, mul, add, shift, signed=signed))
    return net


def _matmul(rng, a_shape, b_shape, const_b=False, bias=False, rq=False):
    net = Net("MatMul")
    a = net.input("input_0", s8(rng, a_shape))
    b = net.const(weights(rng, b_shape), "MatMul.weight") if const_b else net.input("input_1", s8(rng, b_shape))
    y = net.node("MatMul", [a, b])
    if bias:
        y = net.node("Add", [net.const(rng.integers(-2000, 2001, size=b_shape[-1]), "MatMul.bias"), y])
    if rq:
        y = net.calib_rqs(y, offset_rng=rng)
    net.output(y)
    return net


@test("Kernels/MatMul/Regular")
def matmul_regular(rng):
    return _matmul(rng, (16, 32), (32, 24))


@test("Kernels/MatMul/Const_B_RQ")
def matmul_const_rq(rng):
    return _matmul(rng, (8, 64), (64, 32), const_b=True, rq=True)


@test("Kernels/MatMul/Batched")
def matmul_batched(rng):
    return _matmul(rng, (2, 3, 8, 16), (2, 3, 16, 8))


@test("Kernels/MatMul/Broadcast_B")
def matmul_broadcast_b(rng):
    return _matmul(rng, (2, 4, 8, 16), (16, 12), const_b=True)


@test("Kernels/MatMul/Broadcast_A")
def matmul_broadcast_a(rng):
    return _matmul(rng, (8, 16), (3, 16, 4))


@test("Kernels/MatMul/Add_RQ")
def matmul_add_rq(rng):
    return _matmul(rng, (1, 4, 64), (64, 32), const_b=True, bias=True, rq=True)


@test("Kernels/MatMul/Quirks_Unsorted_DuplicateOpset")
def matmul_quirks(rng):
    # node list not in topological order and a duplicated opset import, as in real exports
    net = _matmul(rng, (2, 8, 32), (32, 16), const_b=True, bias=True, rq=True)
    net.reverse_nodes = net.duplicate_opset = True
    return net


# ---- RequantShift --------------------------------------------------------------------------
def _rqs(rng, x, mul, add, shift, signed=True, attr_style="tensor"):
    net = Net("RequantShift")
    x = net.input("input", x)
    net.output(net.rqs(x, mul, add, shift, signed=signed, attr_style=attr_style))
    return net


@test("Kernels/RequantShift/Scalar")
def rqs_scalar(rng):
    # rank-0 div attribute, rank-0 mul/add initializers
    x = ints_in(rng, -(1 << 20), 1 << 20, (1, 16, 32))
    return _rqs(rng, x, np.array(115), np.array(-300000), 20, attr_style="tensor0")


@test("Kernels/RequantShift/PerChannel_NegativeMul")
def rqs_per_channel(rng):
    x = ints_in(rng, -(1 << 16), 1 << 16, (1, 8, 6, 6))
    mul = rng.integers(60, 250, size=(8, 1, 1)) * np.where(np.arange(8) % 3 == 1, -1, 1).reshape(8, 1, 1)
    add = rng.integers(-10, 11, size=(8, 1, 1)) * (1 << 17) + rng.integers(-5000, 5000, size=(8, 1, 1))
    return _rqs(rng, x, mul, add, 17)


@test("Kernels/RequantShift/Unsigned_IntAttrs")
def rqs_unsigned(rng):
    # plain INT attributes and n_levels (not n_levels_out), per channel as [1,C,1,1]
    x = ints_in(rng, -30000, 30000, (1, 8, 4, 4))
    mul = rng.integers(30, 130, size=(1, 8, 1, 1))
    add = rng.integers(60, 130, size=(1, 8, 1, 1)) * (1 << 15)  # centre the output near 128
    return _rqs(rng, x, mul, add, 15, signed=False, attr_style="int")


@test("Kernels/RequantShift/PerRow_2D")
def rqs_per_row(rng):
    x = ints_in(rng, -(1 << 18), 1 << 18, (16, 24))
    mul = rng.integers(5, 30, size=(16, 1))
    add = rng.integers(-50000, 50000, size=(16, 1))
    return _rqs(rng, x, mul, add, 16)


@test("Kernels/RequantShift/Int8_Input")
def rqs_int8(rng):
    # an 8-bit to 8-bit rescale, as on the residual branches of real networks
    x = s8(rng, (2, 64))
    return _rqs(rng, x, np.array([11]), np.array([-24]), 4)
