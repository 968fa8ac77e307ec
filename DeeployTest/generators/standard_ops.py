"""Standard ONNX ops on typed tensors (bool, integer and float32 data as declared in the file):
Where, Expand, Split, Cast, Shape and Resize. Goldens from onnxruntime."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto

from DeeployTest.generators.floatnets import FloatNet
from DeeployTest.generators.registry import ints_in, test


def _ints(rng, shape, dtype):
    info = np.iinfo(dtype)
    return ints_in(rng, int(info.min), int(info.max), shape).astype(dtype)


def _bools(rng, shape):
    return rng.integers(0, 2, size=shape).astype(bool)


@test("Kernels/Where/Bool_Broadcast_Int8")
def where_int8(rng):
    net = FloatNet("where_int8", rng)
    c = net.input("cond", [2, 1, 6], value=_bools(rng, [2, 1, 6]))
    x = net.input("x", [2, 4, 6], value=_ints(rng, [2, 4, 6], np.int8))
    net.output(net.node("Where", [c, x, net.const(np.array([[-5], [7], [0], [127]], np.int8), "other")]),
               TensorProto.INT8)
    return net


@test("Kernels/Where/Float_Scalar")
def where_float(rng):
    net = FloatNet("where_float", rng)
    c = net.input("cond", [3, 16], value=_bools(rng, [3, 16]))
    x = net.input("x", [3, 16])
    net.output(net.node("Where", [c, x, net.const(np.array(0.5, np.float32), "other")]))
    return net


@test("Kernels/Expand/Int16_Rank_Grows")
def expand_int16(rng):
    net = FloatNet("expand_int16", rng)
    x = net.input("x", [3, 1, 5], value=_ints(rng, [3, 1, 5], np.int16))
    net.output(net.node("Expand", [x, net.const(np.array([2, 3, 4, 5], np.int64), "shape")]), TensorProto.INT16)
    return net


@test("Kernels/Expand/Float_Row")
def expand_float(rng):
    net = FloatNet("expand_float", rng)
    x = net.input("x", [1, 24])
    net.output(net.node("Expand", [x, net.const(np.array([6, 1], np.int64), "shape")]))
    return net


@test("Kernels/Split/Sizes_Axis1_Int8")
def split_sizes(rng):
    net = FloatNet("split_sizes", rng)
    x = net.input("x", [2, 9, 4], value=_ints(rng, [2, 9, 4], np.int8))
    for y in net.node("Split", [x, net.const(np.array([2, 3, 4], np.int64), "split")], n_out=3, axis=1):
        net.output(y, TensorProto.INT8)
    return net


@test("Kernels/Split/NumOutputs_LastAxis_Float")
def split_num_outputs(rng):
    net = FloatNet("split_num_outputs", rng)
    x = net.input("x", [4, 11])
    for y in net.node("Split", [x], n_out=3, axis=-1, num_outputs=3):
        net.output(y)
    return net


@test("Kernels/Cast/Integer_And_Float")
def cast_types(rng):
    """int32 -> int8 (wraps), int32 -> float32, float32 -> int32 (truncates), uint8 -> int64."""
    net = FloatNet("cast_types", rng)
    x = net.input("x", [3, 8], value=_ints(rng, [3, 8], np.int32))
    f = net.input("f", [3, 8], scale=1e5)
    u = net.input("u", [12], value=_ints(rng, [12], np.uint8))
    net.output(net.node("Cast", [x], to=TensorProto.INT8), TensorProto.INT8)
    net.output(net.node("Cast", [x], to=TensorProto.FLOAT))
    net.output(net.node("Cast", [f], to=TensorProto.INT32), TensorProto.INT32)
    net.output(net.node("Cast", [u], to=TensorProto.INT64), TensorProto.INT64)
    return net


@test("Kernels/Shape/Output_And_Reshape")
def shape_node(rng):
    """Shape as a graph output (start/end) and feeding a Reshape (both fold to constants)."""
    net = FloatNet("shape_node", rng)
    x = net.input("x", [2, 3, 4, 5], value=_ints(rng, [2, 3, 4, 5], np.int8))
    net.output(net.node("Shape", [x], start=1, end=-1), TensorProto.INT64)
    dims = net.node("Shape", [net.node("Transpose", [x], perm=[0, 2, 3, 1])])
    net.output(net.node("Reshape", [x, dims]), TensorProto.INT8)
    return net


def _resize(net, x, mode, scales=None, sizes=None, **attrs):
    empty = net.const(np.zeros(0, np.float32), "empty")
    ins = [x, "", net.const(np.array(scales, np.float32), "scales")] if scales is not None else \
        [x, "", empty, net.const(np.array(sizes, np.int64), "sizes")]
    return net.node("Resize", ins, mode=mode, **attrs)


@test("Kernels/Resize/Nearest_Int8_2x")
def resize_nearest_int8(rng):
    net = FloatNet("resize_nearest_int8", rng)
    x = net.input("x", [1, 4, 5, 6], value=_ints(rng, [1, 4, 5, 6], np.int8))
    net.output(_resize(net, x, "nearest", scales=[1, 1, 2, 2]), TensorProto.INT8)
    return net


@test("Kernels/Resize/Nearest_Float_Sizes_Asymmetric")
def resize_nearest_float(rng):
    net = FloatNet("resize_nearest_float", rng)
    x = net.input("x", [2, 3, 7, 5])
    net.output(_resize(net, x, "nearest", sizes=[2, 3, 4, 9], coordinate_transformation_mode="asymmetric",
                       nearest_mode="floor"))
    return net


@test("Kernels/Resize/Linear_Float_HalfPixel")
def resize_linear(rng):
    net = FloatNet("resize_linear", rng)
    x = net.input("x", [1, 8, 6, 5])
    net.output(_resize(net, x, "linear", scales=[1, 1, 2, 1.6]))
    return net


@test("Kernels/Resize/Linear_Float_AlignCorners_Down")
def resize_linear_down(rng):
    net = FloatNet("resize_linear_down", rng)
    x = net.input("x", [2, 3, 9, 8])
    net.output(_resize(net, x, "linear", sizes=[2, 3, 5, 3], coordinate_transformation_mode="align_corners"))
    return net
