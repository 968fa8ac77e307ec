"""ResNet8: an int8 CIFAR-style ResNet-8 in the shape of the MLPerf Tiny one.

uint8 image [1,3,32,32] -> 3x3 stem conv (16 channels) -> three residual stages of 16, 32 and 64
channels at 32x32, 16x16 and 8x8: each a 3x3 conv (stride 2 from the second stage on), a 3x3
conv, and a shortcut (the identity in the first stage, a 1x1 stride-2 conv in the others), joined
by a residual Add -> IntegerMean over H,W -> Gemm classifier (10 classes). As in QuantLib
exports, an unsigned (ReLU-like) RequantShift follows the stem, the first conv of each stage and
each residual Add; the signed RequantShifts after the second conv and the shortcut conv bring
both branches of an Add to a common scale (the identity shortcut gets a RequantShift of its
own). Every RequantShift is calibrated on the activations of the sample image, channel
by channel for convs.
"""

from __future__ import annotations

from DeeployTest.generators.builder import Net
from DeeployTest.generators.layers import conv_rq, image, linear_rq, residual_add
from DeeployTest.generators.registry import test

STAGES = [(16, 1), (32, 2), (64, 2)]  # (channels, stride of the first conv)


@test("Models/ResNet8", max_data_bytes=1 << 20)
def resnet8(rng):
    net = Net("ResNet8")
    x = net.input("input", image(rng, (1, 3, 32, 32)))
    x = conv_rq(net, rng, x, 16, 3, bias=True, signed=False, name="stem")
    for s, (ch, stride) in enumerate(STAGES):
        pre = f"stage{s}"
        h = conv_rq(net, rng, x, ch, 3, stride=stride, signed=False, name=f"{pre}.conv1")
        h = conv_rq(net, rng, h, ch, 3, target=60, name=f"{pre}.conv2")
        if stride == 1 and ch == net.shape(x)[1]:
            shortcut, rescale = x, (False, True)
        else:
            shortcut = conv_rq(net, rng, x, ch, 1, stride=stride, target=60, name=f"{pre}.shortcut")
            rescale = (False, False)
        x = residual_add(net, h, shortcut, f"{pre}.add", signed=False, rescale=rescale)
    x = net.node("IntegerMean", [x], {"axes": [2, 3], "keepdims": 0}, name="avgpool")
    y = linear_rq(net, rng, x, 10, "classifier", center=False)
    net.output(net.rename(y, "output"))
    return net
