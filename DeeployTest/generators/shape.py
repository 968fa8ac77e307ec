"""Data-movement kernels: Pad, Concat (incl. a zero-sized input), Slice, Gather, Reshape,
Flatten, Squeeze, Unsqueeze, Identity, Transpose."""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import s8, test, u8


def _i64(net, values, name):
    return net.const(np.asarray(values, dtype=np.int64), name, dtype=np.int64)


def _single(op, x, attrs=None, consts=(), opset=13, ort_opset=None):
    """input -> op(input, *consts) -> output; consts: (name, value, dtype) or '' to skip."""
    net = Net(op, opset=opset, ort_opset=ort_opset)
    x = net.input("input", x)
    ins = [x]
    for c in consts:
        ins.append("" if c == "" else net.const(c[1], f"{op}.{c[0]}", dtype=c[2]))
    net.output(net.node(op, ins, attrs))
    return net


# ---- Pad -----------------------------------------------------------------------------------
@test("Kernels/Pad/Regular_2D")
def pad_2d(rng):
    return _single("Pad", s8(rng, (1, 4, 8, 8)), {"mode": "constant"},
                   [("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1]), np.int64)], opset=11)


@test("Kernels/Pad/Regular_1D")
def pad_1d(rng):
    return _single("Pad", s8(rng, (1, 4, 32)), None, [("pads", np.array([0, 0, 2, 0, 0, 1]), np.int64)],
                   opset=11)


@test("Kernels/Pad/Value_Channels")
def pad_value(rng):
    # a non-zero pad value and padding along the channel axis too
    return _single("Pad", s8(rng, (1, 3, 5, 6)), {"mode": "constant"},
                   [("pads", np.array([0, 1, 2, 0, 0, 0, 1, 3]), np.int64),
                    ("value", np.array(-7), np.float32)], opset=13)


@test("Kernels/Pad/Attr_Opset13")
def pad_attr_opset13(rng):
    # pads as an attribute in an opset-13 file, as some exports write it (onnxruntime checks
    # it as the equivalent opset-10 Pad)
    return _single("Pad", u8(rng, (1, 2, 6, 8)), {"mode": "constant", "pads": [0, 0, 1, 2, 0, 0, 1, 0],
                                                  "value": 0.0}, opset=13, ort_opset=10)


# ---- Concat --------------------------------------------------------------------------------
def _concat(rng, shapes, axis, makers=None, consts=()):
    net = Net("Concat")
    makers = makers or [s8] * len(shapes)
    ins = []
    for k, (shape, make) in enumerate(zip(shapes, makers)):
        if k in consts:
            ins.append(net.const(make(rng, shape), f"Concat.const_{k}"))
        else:
            ins.append(net.input(f"input_{k}", make(rng, shape)))
    net.output(net.node("Concat", ins, {"axis": axis}))
    return net


@test("Kernels/Concat/Axis1")
def concat_axis1(rng):
    return _concat(rng, [(1, 4, 6, 6), (1, 8, 6, 6)], 1)


@test("Kernels/Concat/Three_NegAxis")
def concat_three(rng):
    return _concat(rng, [(1, 4, 5, 8), (1, 4, 3, 8), (1, 4, 7, 8)], -2, consts={1})


@test("Kernels/Concat/ZeroSized_KVCache")
def concat_zero(rng):
    # an empty past KV cache (prefill) concatenated with the new keys
    return _concat(rng, [(1, 4, 0, 8), (1, 4, 6, 8)], -2)


@test("Kernels/Concat/LastAxis_Mixed_Types")
def concat_mixed(rng):
    return _concat(rng, [(2, 3, 5), (2, 3, 4)], 2, makers=[s8, u8])


# ---- Slice ---------------------------------------------------------------------------------
def _slice_consts(starts, ends, axes=None, steps=None):
    out = [("starts", np.array(starts), np.int64), ("ends", np.array(ends), np.int64)]
    if axes is not None or steps is not None:
        out.append(("axes", np.array(axes), np.int64) if axes is not None else "")
    if steps is not None:
        out.append(("steps", np.array(steps), np.int64))
    return out


@test("Kernels/Slice/Regular")
def slice_regular(rng):
    return _single("Slice", s8(rng, (1, 8, 8, 8)), None, _slice_consts([1, 2], [4, 7], [1, 2]))


@test("Kernels/Slice/Steps_NegativeIndices")
def slice_steps(rng):
    return _single("Slice", s8(rng, (1, 8, 10, 6)), None, _slice_consts([0, -8, 1], [8, -1, 100], [1, 2, 3], [2, 3, 2]))


@test("Kernels/Slice/NegativeStep")
def slice_reverse(rng):
    return _single("Slice", s8(rng, (4, 12)), None, _slice_consts([-1, 10], [-100, 1], [0, 1], [-1, -3]))


@test("Kernels/Slice/Chain")
def slice_chain(rng):
    net = Net("Slice")
    x = net.input("input", u8(rng, (1, 8, 8, 8)))
    y = net.node("Slice", [x] + [_i64(net, v, n) for n, v in (("starts", [2]), ("ends", [5]), ("axes", [1]),
                                                                ("steps", [1]))])
    y = net.node("Slice", [y] + [_i64(net, v, n) for n, v in (("starts", [1]), ("ends", [8]), ("axes", [-2]),
                                                                ("steps", [1]))])
    net.output(y)
    return net


@test("Kernels/Slice/Attrs_Opset9")
def slice_attrs(rng):
    return _single("Slice", s8(rng, (2, 6, 9)), {"starts": [1, 0], "ends": [5, -2], "axes": [1, 2]}, opset=9)


# ---- Gather --------------------------------------------------------------------------------
def _gather(rng, x, indices, axis):
    return _single("Gather", x, {"axis": axis}, [("indices", np.asarray(indices), np.int64)])


@test("Kernels/Gather/Axis0")
def gather_axis0(rng):
    return _gather(rng, s8(rng, (6, 8)), [4, 0, 2], 0)


@test("Kernels/Gather/Scalar_Index")
def gather_scalar(rng):
    return _gather(rng, s8(rng, (1, 8, 5)), np.array(3), 1)


@test("Kernels/Gather/Negative_Indices_LastAxis")
def gather_negative(rng):
    return _gather(rng, s8(rng, (2, 4, 10)), [-1, 0, -3, 5], -1)


@test("Kernels/Gather/Indices_2D")
def gather_2d(rng):
    return _gather(rng, u8(rng, (7, 4, 3)), [[0, 6, 2], [1, 1, 5]], 0)


# ---- Reshape / Flatten / Squeeze / Unsqueeze / Identity -------------------------------------
@test("Kernels/Reshape/Regular")
def reshape_regular(rng):
    return _single("Reshape", s8(rng, (1, 8, 4, 4)), None, [("shape", np.array([1, 8, 16]), np.int64)])


@test("Kernels/Reshape/Infer_Dims")
def reshape_infer(rng):
    return _single("Reshape", s8(rng, (2, 3, 4, 5)), None, [("shape", np.array([0, -1, 5]), np.int64)])


@test("Kernels/Reshape/Between_Ops")
def reshape_between(rng):
    # a view in the middle of the graph: Add -> Reshape -> RequantShift
    net = Net("Reshape")
    a = net.input("input_0", s8(rng, (1, 4, 16)))
    b = net.input("input_1", s8(rng, (1, 4, 16)))
    y = net.node("Add", [a, b])
    y = net.node("Reshape", [y, _i64(net, [1, 4, 4, 4], "shape")])
    net.output(net.calib_rqs(y, offset_rng=rng))
    return net


@test("Kernels/Flatten/Axis1")
def flatten_axis1(rng):
    return _single("Flatten", s8(rng, (1, 4, 3, 3)), {"axis": 1})


@test("Kernels/Flatten/Axis2")
def flatten_axis2(rng):
    return _single("Flatten", s8(rng, (2, 3, 4, 5)), {"axis": 2})


@test("Kernels/Flatten/Axis0")
def flatten_axis0(rng):
    return _single("Flatten", s8(rng, (3, 4, 5)), {"axis": 0})


@test("Kernels/Flatten/NegativeAxis")
def flatten_negative(rng):
    return _single("Flatten", u8(rng, (2, 3, 8)), {"axis": -1})


@test("Kernels/Squeeze/Attr_Opset11")
def squeeze_attr(rng):
    return _single("Squeeze", s8(rng, (1, 8, 1, 6)), {"axes": [0, 2]}, opset=11)


@test("Kernels/Squeeze/Input_Opset13")
def squeeze_input(rng):
    return _single("Squeeze", s8(rng, (4, 1, 16, 1)), None, [("axes", np.array([-1]), np.int64)])


@test("Kernels/Squeeze/All_Ones")
def squeeze_all(rng):
    return _single("Squeeze", s8(rng, (1, 12, 1, 1)))


@test("Kernels/Unsqueeze/Attr_Opset11")
def unsqueeze_attr(rng):
    return _single("Unsqueeze", s8(rng, (8, 6)), {"axes": [0]}, opset=11)


@test("Kernels/Unsqueeze/Input_Opset13")
def unsqueeze_input(rng):
    return _single("Unsqueeze", s8(rng, (4, 16)), None, [("axes", np.array([1, -1]), np.int64)])


@test("Kernels/Unsqueeze/Multiple_Axes")
def unsqueeze_multi(rng):
    return _single("Unsqueeze", u8(rng, (3, 5)), None, [("axes", np.array([0, 2, 4]), np.int64)])


@test("Kernels/Identity/Input_Output")
def identity_regular(rng):
    return _single("Identity", s8(rng, (1, 32)))


@test("Kernels/Identity/Then_Add")
def identity_add(rng):
    net = Net("Identity")
    x = net.input("input", s8(rng, (1, 16)))
    y = net.node("Identity", [x])
    net.output(net.node("Add", [y, y]))
    return net


@test("Kernels/Identity/Output_Identity")
def identity_output(rng):
    net = Net("Identity")
    a = net.input("input_0", s8(rng, (2, 24)))
    b = net.input("input_1", s8(rng, (2, 24)))
    net.output(net.node("Identity", [net.node("Sub", [a, b])]))
    return net


# ---- Transpose -----------------------------------------------------------------------------
@test("Kernels/Transpose/Default_2D")
def transpose_2d(rng):
    return _single("Transpose", s8(rng, (12, 20)))


@test("Kernels/Transpose/NCHW_to_NHWC")
def transpose_nhwc(rng):
    return _single("Transpose", s8(rng, (1, 8, 5, 6)), {"perm": [0, 2, 3, 1]})


@test("Kernels/Transpose/Heads")
def transpose_heads(rng):
    return _single("Transpose", s8(rng, (1, 6, 4, 16)), {"perm": [0, 2, 1, 3]})


@test("Kernels/Transpose/Rotate_3D")
def transpose_3d(rng):
    return _single("Transpose", u8(rng, (3, 4, 10)), {"perm": [2, 0, 1]})
