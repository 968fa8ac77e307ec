"""AnomalyDetection_AE: an int8 fully connected autoencoder in the shape of the MLPerf Tiny
anomaly-detection model (128 -> 64 -> 8 -> 64 -> 128), batch 1.

int8 log-mel-like frame [1,128] -> three hidden layers (64, the 8-wide bottleneck, 64), each a
linear layer and an unsigned, ReLU-like RequantShift -> a linear output layer (128) and a signed
RequantShift. The linear layers
alternate between the forms QuantLib exports use: Gemm (transB=1, bias input), MatMul + Add of
the bias, and Gemm without transB. Each RequantShift is calibrated (per tensor) on the
activations of the sample frame.
"""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.layers import linear_rq
from DeeployTest.generators.registry import test

# (features out, form, signed)
LAYERS = [("encoder.0", 64, "gemm", False), ("encoder.1", 8, "matmul", False),
          ("decoder.0", 64, "gemm_nt", False), ("decoder.1", 128, "matmul", True)]


def log_mel_frame(rng, n=128):
    """A smooth spectral frame with a few harmonic peaks, signed 8-bit, full range."""
    f = np.arange(n)
    spec = -0.6 + 0.8 * np.exp(-f / 50.0)
    for _ in range(5):
        spec += rng.uniform(0.2, 0.7) * np.exp(-((f - rng.uniform(0, n)) / rng.uniform(2, 8)) ** 2)
    spec += rng.normal(0, 0.05, size=n)
    spec = (spec - spec.min()) / (spec.max() - spec.min())
    return np.round(spec * 255 - 128).astype(np.int64).reshape(1, n)


@test("Models/AnomalyDetection_AE", max_data_bytes=1 << 20)
def anomaly_detection_ae(rng):
    net = Net("AnomalyDetection_AE")
    x = net.input("input", log_mel_frame(rng))
    for name, n_out, form, signed in LAYERS:
        x = linear_rq(net, rng, x, n_out, name, form=form, signed=signed, zero_frac=0.25, center=True)
    net.output(net.rename(x, "output"))
    return net
