"""miniMobileNetv2: a small int8 MobileNetV2-style CNN.

uint8 image [1,3,16,16] -> 3x3 stride-2 stem conv -> inverted residual blocks (pointwise
expand -> depthwise 3x3 -> pointwise project, a residual Add where shapes allow) -> Flatten ->
Gemm classifier. A RequantShift follows every conv and add: unsigned (ReLU6-like) after the
expand and depthwise convs, signed elsewhere; the residual Add sums two branches first brought
to a common scale by RequantShifts, as QuantLib exports do. Every RequantShift is calibrated on
the activations of the sample image, channel by channel for convs.
"""

from __future__ import annotations

from DeeployTest.generators.builder import Net
from DeeployTest.generators.layers import image as _image
from DeeployTest.generators.registry import test, weights

# (expand channels, output channels, depthwise stride, residual)
BLOCKS = [(32, 16, 2, False), (32, 16, 1, True), (48, 24, 1, False), (48, 24, 1, True)]


def _conv(net, rng, x, ch_out, k, stride=1, group=1, bias=False, signed=True, name="conv"):
    ch_in = net.shape(x)[1]
    w = net.const(weights(rng, (ch_out, ch_in // group, k, k)), f"{name}.weight")
    ins = [x, w]
    if bias:
        ins.append(net.const(rng.integers(-4000, 4001, size=ch_out), f"{name}.bias"))
    pad = k // 2
    y = net.node("Conv", ins, {"dilations": [1, 1], "group": group, "kernel_shape": [k, k],
                               "pads": [pad] * 4, "strides": [stride, stride]}, name=name)
    return net.calib_rqs(y, signed=signed, axis=1, offset_rng=rng, name=f"{name}.rqs",
                         zero_frac=None if signed else 0.25, max_shift=16)


@test("Models/miniMobileNetv2", max_data_bytes=1 << 20)
def mini_mobilenet_v2(rng):
    net = Net("miniMobileNetv2")
    x = net.input("input", _image(rng, (1, 3, 16, 16)))
    x = _conv(net, rng, x, 16, 3, stride=2, bias=True, name="stem")
    for b, (expand, out, stride, residual) in enumerate(BLOCKS):
        block_in = x
        h = _conv(net, rng, x, expand, 1, signed=False, name=f"block{b}.expand")
        h = _conv(net, rng, h, expand, 3, stride=stride, group=expand, bias=True, signed=False,
                  name=f"block{b}.dw")
        h = _conv(net, rng, h, out, 1, name=f"block{b}.project")
        if residual:
            # both branches to a common scale, add, requantize
            left = net.calib_rqs(h, target=80, center=False, name=f"block{b}.add_lhs", max_shift=16)
            right = net.calib_rqs(block_in, target=80, center=False, name=f"block{b}.add_rhs", max_shift=16)
            s = net.node("Add", [left, right], name=f"block{b}.add")
            h = net.calib_rqs(s, center=False, name=f"block{b}.add.rqs", max_shift=16)
        x = h
    flat = net.node("Flatten", [x], {"axis": 1}, name="flatten")
    n_in = net.shape(flat)[1]
    w = net.const(weights(rng, (10, n_in)), "classifier.weight")
    bias = net.const(rng.integers(-5000, 5001, size=10), "classifier.bias")
    logits = net.node("Gemm", [flat, w, bias], {"alpha": 1.0, "beta": 1.0, "transB": 1}, name="classifier")
    y = net.calib_rqs(logits, center=False, name="classifier.rqs", max_shift=16)
    net.output(net.rename(y, "output"))
    return net
