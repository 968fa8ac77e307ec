"""Convolution and pooling kernels: Conv (1-D/2-D; regular, depthwise, pointwise, grouped,
strided, padded, dilated; with and without bias; some followed by a RequantShift) and MaxPool."""

from __future__ import annotations

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import s8, test, u8, weights


def _conv(rng, x_shape, ch_out, kernel, group=1, strides=None, pads=None, dilations=None,
          bias=False, rq=None, unsigned_input=False, auto_pad=None, rq_vec_shape=None,
          explicit_attrs=True):
    """x -> Conv [-> RequantShift]; rq: None, 'signed' or 'unsigned' (per output channel)."""
    dims = len(x_shape) - 2
    net = Net("Conv")
    x = net.input("input", (u8 if unsigned_input else s8)(rng, x_shape))
    ch_in = x_shape[1]
    w = net.const(weights(rng, (ch_out, ch_in // group) + tuple(kernel)), "Conv.weight")
    ins = [x, w]
    if bias:
        ins.append(net.const(rng.integers(-2000, 2001, size=ch_out), "Conv.bias"))
    attrs = {"group": group, "kernel_shape": list(kernel)}
    if explicit_attrs or strides:
        attrs["strides"] = list(strides or (1,) * dims)
    if explicit_attrs or dilations:
        attrs["dilations"] = list(dilations or (1,) * dims)
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    elif explicit_attrs or pads:
        attrs["pads"] = list(pads or (0,) * (2 * dims))
    y = net.node("Conv", ins, attrs)
    if rq:
        y = net.calib_rqs(y, signed=rq == "signed", axis=1, vec_shape=rq_vec_shape, offset_rng=rng)
    net.output(y)
    return net


@test("Kernels/Conv/Regular_2D")
def conv_regular_2d(rng):
    return _conv(rng, (1, 4, 8, 8), 8, (3, 3))


@test("Kernels/Conv/Regular_2D_Bias_Padded")
def conv_bias_padded(rng):
    return _conv(rng, (1, 3, 10, 10), 8, (3, 3), pads=(1, 1, 1, 1), bias=True)


@test("Kernels/Conv/Regular_2D_RQ")
def conv_regular_rq(rng):
    return _conv(rng, (1, 8, 8, 8), 16, (3, 3), pads=(1, 1, 1, 1), rq="signed")


@test("Kernels/Conv/Unsigned_Input_Stem_RQ")
def conv_stem(rng):
    return _conv(rng, (1, 3, 16, 16), 8, (3, 3), strides=(2, 2), pads=(1, 1, 1, 1), rq="signed",
                 unsigned_input=True)


@test("Kernels/Conv/DW_2D_RQ")
def conv_dw_rq(rng):
    return _conv(rng, (1, 16, 8, 8), 16, (3, 3), group=16, pads=(1, 1, 1, 1), bias=True, rq="signed")


@test("Kernels/Conv/DW_2D_Strided")
def conv_dw_strided(rng):
    return _conv(rng, (1, 8, 9, 9), 8, (3, 3), group=8, strides=(2, 2), pads=(1, 1, 1, 1))


@test("Kernels/Conv/DW_2D_Multiplier")
def conv_dw_multiplier(rng):
    # group == ch_in with two output channels per group (a depthwise multiplier of 2)
    return _conv(rng, (1, 4, 6, 6), 8, (3, 3), group=4, pads=(1, 1, 1, 1), bias=True)


@test("Kernels/Conv/PW_2D_RQ")
def conv_pw_rq(rng):
    return _conv(rng, (1, 16, 8, 8), 32, (1, 1), rq="signed")


@test("Kernels/Conv/PW_2D_RQ_Unsigned")
def conv_pw_rq_unsigned(rng):
    return _conv(rng, (1, 8, 8, 8), 16, (1, 1), bias=True, rq="unsigned", rq_vec_shape=(1, 16, 1, 1))


@test("Kernels/Conv/StridedPadded_2D_RQ")
def conv_strided_padded(rng):
    # asymmetric padding: top 1, left 0, bottom 0, right 2
    return _conv(rng, (1, 4, 9, 9), 8, (3, 3), strides=(2, 2), pads=(1, 0, 0, 2), rq="signed")


@test("Kernels/Conv/Grouped_2D")
def conv_grouped(rng):
    return _conv(rng, (1, 8, 6, 6), 12, (3, 3), group=2, bias=True)


@test("Kernels/Conv/Dilated_2D")
def conv_dilated(rng):
    return _conv(rng, (1, 4, 10, 10), 4, (3, 3), dilations=(2, 2), pads=(2, 2, 2, 2))


@test("Kernels/Conv/Rect_Kernel_AutoPad")
def conv_rect_same(rng):
    return _conv(rng, (1, 4, 7, 9), 6, (3, 5), auto_pad="SAME_UPPER", explicit_attrs=False)


@test("Kernels/Conv/Regular_1D")
def conv_1d(rng):
    return _conv(rng, (1, 8, 32), 16, (3,), pads=(1, 1))


@test("Kernels/Conv/Regular_1D_RQ")
def conv_1d_rq(rng):
    # mul/add as [C,1,1] on a [1,C,L] output: applied per channel along axis 1 (real exports)
    return _conv(rng, (1, 8, 32), 16, (3,), pads=(1, 1), bias=True, rq="unsigned", rq_vec_shape=(16, 1, 1))


@test("Kernels/Conv/DW_1D")
def conv_dw_1d(rng):
    return _conv(rng, (1, 8, 24), 8, (5,), group=8, pads=(2, 2), bias=True)


@test("Kernels/Conv/Strided_Dilated_1D")
def conv_1d_strided_dilated(rng):
    return _conv(rng, (1, 4, 40), 8, (3,), strides=(2,), dilations=(2,), pads=(1, 0))


# ---- MaxPool -------------------------------------------------------------------------------
def _maxpool(rng, x, attrs, opset=13):
    net = Net("MaxPool", opset=opset)
    x = net.input("input", x)
    net.output(net.node("MaxPool", [x], attrs))
    return net


@test("Kernels/MaxPool/Regular_1D")
def maxpool_1d(rng):
    return _maxpool(rng, s8(rng, (1, 16, 32)), {"kernel_shape": [3], "strides": [2], "pads": [0, 0]})


@test("Kernels/MaxPool/Regular_2D")
def maxpool_2d(rng):
    return _maxpool(rng, s8(rng, (1, 8, 8, 8)), {"kernel_shape": [2, 2], "strides": [2, 2]})


@test("Kernels/MaxPool/Padded_2D")
def maxpool_padded(rng):
    # all inputs negative: a zero from the padding would win if padding took part
    x = -1 - u8(rng, (1, 4, 9, 9)) // 2  # [-128, -1]
    return _maxpool(rng, x, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})


@test("Kernels/MaxPool/CeilMode_Uint8_2D")
def maxpool_ceil(rng):
    return _maxpool(rng, u8(rng, (1, 4, 10, 7)), {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1})

