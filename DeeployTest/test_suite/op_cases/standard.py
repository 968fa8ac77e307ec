"""What the standard ONNX ops' records need beyond their cases (oracle: onnxruntime): where
onnxruntime's float result differs from the integer meaning, the post-processing of its output."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from DeeployTest.test_suite.op_cases._case import Case


def _round_half_up_mean(ort_mean: np.ndarray, case: Case) -> np.ndarray:
    """ORT computes the float mean; integer ReduceMean rounds it half up. The exact sum is
    recovered from ORT's double-precision mean (|sum| << 2^52) and rounded exactly."""
    x = case.operands[0].value
    n = x.size // max(ort_mean.size, 1)
    sums = np.rint(ort_mean.astype(np.float64) * n).astype(np.int64)
    out = [math.floor(Fraction(int(s), n) + Fraction(1, 2)) for s in sums.reshape(-1)]
    return np.array(out, dtype=np.int64).reshape(ort_mean.shape)


EXPECT_FROM_ORT = {"ReduceMean": _round_half_up_mean}
