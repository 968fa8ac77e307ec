"""KWS_DSCNN: an int8 keyword-spotting DS-CNN in the shape of the MLPerf Tiny one.

int8 MFCC-like features [1,1,49,10] (49 frames of 10 coefficients) -> 10x4 stride-2 stem conv
with asymmetric 'same' padding (64 channels, 25x5) -> four depthwise-separable blocks (depthwise
3x3 + pointwise 1x1, each conv followed by an unsigned, ReLU-like RequantShift) -> ReduceMean
over H,W (keepdims) -> Flatten -> Gemm classifier (12 keywords) -> signed RequantShift. Every
RequantShift is calibrated per channel on the activations of the sample utterance.
"""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.layers import conv_rq, linear_rq
from DeeployTest.generators.registry import test

CHANNELS = 64
BLOCKS = 4
KEYWORDS = 12


def mfcc_like(rng, frames=49, coeffs=10):
    """Signed 8-bit 'MFCC' features: a loud energy coefficient following a speech-like
    envelope, higher coefficients ever smaller, all smooth in time; the full int8 range."""
    t = np.linspace(0, 1, frames)
    envelope = np.exp(-((t - rng.uniform(0.35, 0.65)) / rng.uniform(0.15, 0.25)) ** 2)
    feats = np.zeros((frames, coeffs))
    for c in range(coeffs):
        noise = rng.normal(0, 1, size=frames + 4)
        smooth = np.convolve(noise, np.ones(5) / 5, mode="valid")
        feats[:, c] = smooth * (1.0 / (1 + c)) * (0.3 + envelope)
    feats[:, 0] += 3.0 * envelope - 1.2
    feats = feats / np.max(np.abs(feats))
    q = np.clip(np.round(feats * 127.5 - 0.5), -128, 127).astype(np.int64)
    return q.reshape(1, 1, frames, coeffs)


@test("Models/KWS_DSCNN", max_data_bytes=1 << 20)
def kws_dscnn(rng):
    net = Net("KWS_DSCNN")
    x = net.input("input", mfcc_like(rng))
    # 'same' padding of a 10x4 stride-2 kernel over 49x10: 4 above, 5 below, 1 either side
    x = conv_rq(net, rng, x, CHANNELS, (10, 4), stride=2, pads=[4, 1, 5, 1], bias=True, signed=False,
                name="stem")
    for b in range(BLOCKS):
        x = conv_rq(net, rng, x, CHANNELS, 3, group=CHANNELS, bias=True, signed=False, name=f"block{b}.dw")
        x = conv_rq(net, rng, x, CHANNELS, 1, signed=False, name=f"block{b}.pw")
    x = net.node("ReduceMean", [x], {"axes": [2, 3], "keepdims": 1}, name="avgpool")
    x = net.node("Flatten", [x], {"axis": 1}, name="flatten")
    y = linear_rq(net, rng, x, KEYWORDS, "classifier", center=False)
    net.output(net.rename(y, "output"))
    return net
