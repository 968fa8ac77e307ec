"""Element-wise kernels: Add, Sub, Mul, Max, Min (with broadcasting and constants), Relu, Clip."""

from __future__ import annotations

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import ints_in, s8, test, u8


def _binary(op, rng, a_shape, b_shape, rq=False, a_unsigned=False):
    net = Net(f"{op}")
    a = net.input("input_0", (u8 if a_unsigned else s8)(rng, a_shape))
    b = net.input("input_1", s8(rng, b_shape))
    y = net.node(op, [a, b])
    if rq:
        y = net.calib_rqs(y, offset_rng=rng)
    net.output(y)
    return net


def _with_const(op, rng, x_shape, c_value, const_first=False, rq=False):
    net = Net(f"{op}")
    x = net.input("input_0", s8(rng, x_shape))
    c = net.const(c_value, f"{op}.constant")
    y = net.node(op, [c, x] if const_first else [x, c])
    if rq:
        y = net.calib_rqs(y, offset_rng=rng)
    net.output(y)
    return net


# ---- Max, Min ------------------------------------------------------------------------------
for _op in ("Max", "Min"):
    test(f"Kernels/{_op}/Regular")(lambda rng, op=_op: _binary(op, rng, (1, 8, 8, 8), (1, 8, 8, 8)))
    test(f"Kernels/{_op}/Broadcast_Channel")(lambda rng, op=_op: _binary(op, rng, (1, 8, 6, 6), (1, 8, 1, 1)))
    test(f"Kernels/{_op}/Const_Vector")(
        lambda rng, op=_op: _with_const(op, rng, (2, 4, 16), s8(rng, (16,)), const_first=True))
    test(f"Kernels/{_op}/Mixed_Signedness")(
        lambda rng, op=_op: _binary(op, rng, (1, 4, 8, 8), (1, 4, 8, 8), a_unsigned=True))


# ---- Add -----------------------------------------------------------------------------------
@test("Kernels/Add/Regular")
@test("IntKernels/Add/Regular")   # the path the upstream tutorial uses
def add_regular(rng):
    return _binary("Add", rng, (1, 8, 8, 8), (1, 8, 8, 8))


@test("Kernels/Add/Broadcast_Channel")
def add_broadcast(rng):
    return _binary("Add", rng, (1, 8, 6, 6), (1, 8, 1, 1))


@test("Kernels/Add/Const_Vector")
def add_const_vector(rng):
    return _with_const("Add", rng, (2, 4, 16), s8(rng, (16,)), const_first=True)


@test("Kernels/Add/Const_Scalar")
def add_const_scalar(rng):
    return _with_const("Add", rng, (1, 16, 32), 17)


@test("Kernels/Add/Mixed_Signedness")
def add_mixed(rng):
    return _binary("Add", rng, (1, 4, 8, 8), (1, 4, 8, 8), a_unsigned=True)


@test("Kernels/Add/Regular_RQ")
def add_rq(rng):
    return _binary("Add", rng, (1, 16, 8, 8), (1, 16, 8, 8), rq=True)


# ---- Sub -----------------------------------------------------------------------------------
@test("Kernels/Sub/Regular")
def sub_regular(rng):
    return _binary("Sub", rng, (1, 8, 8, 8), (1, 8, 8, 8))


@test("Kernels/Sub/Broadcast_Spatial")
def sub_broadcast(rng):
    return _binary("Sub", rng, (1, 4, 8, 8), (1, 1, 8, 8))


@test("Kernels/Sub/Const_Left")
def sub_const_left(rng):
    return _with_const("Sub", rng, (4, 32), 5, const_first=True)


@test("Kernels/Sub/Regular_RQ")
def sub_rq(rng):
    return _binary("Sub", rng, (1, 64, 16), (1, 64, 16), rq=True)


# ---- Mul -----------------------------------------------------------------------------------
@test("Kernels/Mul/Regular")
def mul_regular(rng):
    return _binary("Mul", rng, (1, 8, 8, 8), (1, 8, 8, 8))


@test("Kernels/Mul/Broadcast_Channel")
def mul_broadcast(rng):
    return _binary("Mul", rng, (1, 8, 4, 4), (1, 8, 1, 1))


@test("Kernels/Mul/Const_Scalar")
def mul_const_scalar(rng):
    return _with_const("Mul", rng, (1, 8, 32), -3)


@test("Kernels/Mul/Regular_RQ")
def mul_rq(rng):
    return _binary("Mul", rng, (1, 4, 128), (1, 4, 128), rq=True)


# ---- Relu ----------------------------------------------------------------------------------
def _unary(op, rng, x, attrs=None, extra=(), opset=13):
    net = Net(op, opset=opset)
    x = net.input("input_0", x)
    ins = [x] + [net.const(v, f"{op}.{n}") if v is not None else "" for n, v in extra]
    net.output(net.node(op, ins, attrs))
    return net


@test("Kernels/Relu/Int8")
def relu_int8(rng):
    return _unary("Relu", rng, s8(rng, (1, 8, 8, 8)))


@test("Kernels/Relu/Int16")
def relu_int16(rng):
    return _unary("Relu", rng, ints_in(rng, -20000, 20000, (1, 16, 64)))


@test("Kernels/Relu/Uint8")
def relu_uint8(rng):
    return _unary("Relu", rng, u8(rng, (2, 8, 16)))


# ---- Clip ----------------------------------------------------------------------------------
@test("Kernels/Clip/Opset13_Inputs")
def clip_inputs(rng):
    return _unary("Clip", rng, s8(rng, (1, 8, 8, 8)), extra=[("min", -32), ("max", 63)])


@test("Kernels/Clip/Opset6_Attrs")
def clip_attrs(rng):
    return _unary("Clip", rng, s8(rng, (1, 4, 16, 4)), attrs={"min": 0.0, "max": 6.0}, opset=6)


@test("Kernels/Clip/Min_Only")
def clip_min_only(rng):
    return _unary("Clip", rng, s8(rng, (4, 64)), extra=[("min", -10)])


@test("Kernels/Clip/Int16")
def clip_int16(rng):
    return _unary("Clip", rng, ints_in(rng, -30000, 30000, (1, 8, 64)), extra=[("min", -1000), ("max", 1000)])
