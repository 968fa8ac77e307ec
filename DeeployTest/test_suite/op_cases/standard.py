"""Cases of the standard ONNX ops (oracle: onnxruntime)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from DeeployTest.test_suite.op_cases._case import F32, F64, I32, I64, I8, U8, act, Case, const, i64, OpRecord, rand


def binary_cases(rng):
    return [
        Case("same_shape", (act(rand(rng, [2, 3, 4]), I32), act(rand(rng, [2, 3, 4]), I32))),
        Case("const_row_broadcast", (act(rand(rng, [2, 3, 4]), I32),
                                     const(rand(rng, [4], -1000, 1000), I32))),
        Case("both_broadcast", (act(rand(rng, [2, 1, 5]), I32), act(rand(rng, [3, 1]), I32))),
        Case("scalar_const", (act(rand(rng, [3, 5]), I32), const(np.array(-7), I32))),
        Case("int16_range", (act(rand(rng, [4, 6], -32768, 32767), I32),
                             act(rand(rng, [4, 6], -32768, 32767), I32))),
    ]


def _conv_cases(rng):
    def conv(label, x_shape, w_shape, bias=True, **attrs):
        operands = [act(rand(rng, x_shape), F32), const(rand(rng, w_shape), F32)]
        if bias:
            operands.append(const(rand(rng, [w_shape[0]], -4096, 4096), F32))
        return Case(label, tuple(operands), attrs)
    return [
        conv("3x3_pad1_bias", [1, 3, 6, 6], [4, 3, 3, 3], pads=[1, 1, 1, 1]),
        conv("stride2_dilation", [2, 4, 9, 8], [3, 4, 2, 3], bias=False, strides=[2, 2],
             dilations=[2, 1]),
        conv("depthwise_asym_pads", [1, 6, 5, 5], [6, 1, 3, 3], group=6, pads=[0, 1, 2, 1]),
        conv("grouped", [1, 4, 5, 4], [6, 2, 3, 1], group=2, strides=[1, 2]),
        conv("pointwise", [1, 8, 3, 3], [5, 8, 1, 1]),
        conv("conv1d", [1, 3, 10], [4, 3, 3], pads=[2, 0], strides=[2]),
        conv("same_upper_stride2", [1, 2, 7, 6], [3, 2, 3, 3], auto_pad="SAME_UPPER",
             strides=[2, 2]),
    ]


def _gemm_cases(rng):
    return [
        Case("bias_vector", (act(rand(rng, [4, 8]), F32), const(rand(rng, [8, 5]), F32),
                             const(rand(rng, [5], -4096, 4096), F32))),
        Case("trans_alpha_beta", (act(rand(rng, [8, 4]), F32), const(rand(rng, [5, 8]), F32),
                                  const(rand(rng, [4, 1], -4096, 4096), F32)),
             dict(transA=1, transB=1, alpha=2.0, beta=3.0)),
        Case("no_bias", (act(rand(rng, [3, 16]), F32), const(rand(rng, [16, 7]), F32))),
        Case("two_activations_bias_matrix", (act(rand(rng, [4, 6]), F32),
                                             act(rand(rng, [6, 3]), F32),
                                             const(rand(rng, [4, 3], -4096, 4096), F32))),
    ]


def _matmul_cases(rng):
    return [
        Case("2d", (act(rand(rng, [3, 4]), I32), act(rand(rng, [4, 5]), I32))),
        Case("batched", (act(rand(rng, [2, 3, 4]), I32), act(rand(rng, [2, 4, 5]), I32))),
        Case("shared_weights", (act(rand(rng, [2, 3, 3, 64]), I32),
                                const(rand(rng, [64, 6]), I32))),
        Case("shared_a", (const(rand(rng, [3, 4]), I32), act(rand(rng, [2, 4, 5]), I32))),
    ]


def _maxpool_cases(rng):
    def pool(label, shape, dtype=I8, lo=-128, hi=127, **attrs):
        return Case(label, (act(rand(rng, shape, lo, hi), dtype),), attrs, opset=12)
    return [
        pool("2x2_stride2", [1, 3, 6, 6], kernel_shape=[2, 2], strides=[2, 2]),
        pool("3x3_stride2_pad1", [2, 2, 7, 7], kernel_shape=[3, 3], strides=[2, 2],
             pads=[1, 1, 1, 1]),
        pool("ceil_mode", [1, 2, 7, 6], kernel_shape=[3, 2], strides=[2, 2], ceil_mode=1),
        pool("dilation_asym_pads", [1, 1, 8, 9], kernel_shape=[2, 3], dilations=[2, 2],
             pads=[1, 0, 0, 2]),
        pool("1d", [1, 4, 11], kernel_shape=[3], strides=[2], pads=[1, 1]),
        pool("same_lower_uint8", [1, 2, 5, 5], U8, 0, 255, kernel_shape=[2, 2], strides=[2, 2],
             auto_pad="SAME_LOWER"),
    ]


def _pad_cases(rng):
    return [
        Case("pads_and_value_inputs", (act(rand(rng, [2, 3, 4]), I8), const(i64(0, 1, 2, 1, 0, 3)),
                                       const(np.array(-7), I8))),
        Case("negative_pads_crop", (act(rand(rng, [3, 5]), I8), const(i64(-1, 2, 0, -2)))),
        Case("opset18_axes_wide_value", (act(rand(rng, [2, 3, 4]), I32), const(i64(1, -1, 2, 0)),
                                         const(np.array(300), I32), const(i64(-1, 1))), opset=18),
        Case("opset10_attributes", (act(rand(rng, [1, 2, 3, 3]), F32),),
             dict(mode="constant", pads=[0, 0, 1, 2, 0, 0, 2, 1], value=5.0), opset=10),
    ]


def _concat_cases(rng):
    return [
        Case("axis1_three_inputs", (act(rand(rng, [2, 1, 3]), I8), act(rand(rng, [2, 4, 3]), I8),
                                    act(rand(rng, [2, 2, 3]), I8)), dict(axis=1)),
        Case("negative_axis", (act(rand(rng, [3, 2]), I8), act(rand(rng, [3, 5]), I8)),
             dict(axis=-1)),
        Case("empty_kv_cache", (act(np.zeros([1, 2, 0, 4]), I8), act(rand(rng, [1, 2, 3, 4]), I8)),
             dict(axis=2)),
        Case("wide_constant", (act(rand(rng, [2, 3]), I32),
                               const(rand(rng, [1, 3], -30000, 30000), I32)), dict(axis=0)),
    ]


def _slice_cases(rng):
    big = np.iinfo(np.int64)
    def sl(label, shape, *params):
        return Case(label, (act(rand(rng, shape), I8),) + tuple(const(i64(*p)) for p in params))
    return [
        sl("starts_ends", [4, 6], [1, 2], [3, 5]),
        sl("steps_negative_axes", [3, 8, 5], [0, -1], [8, -9], [-2, 2], [3, -2]),
        sl("clamped_ends", [4, 5], [-100, 2], [big.max, big.min], [0, 1], [1, -1]),
        sl("empty_result", [4, 5], [3], [1], [0]),
        Case("opset9_attributes", (act(rand(rng, [3, 4, 5]), F32),),
             dict(starts=[1, -3], ends=[1000, -1], axes=[0, 2]), opset=9),
    ]


def _gather_cases(rng):
    return [
        Case("axis0_vector", (act(rand(rng, [5, 3]), I8), const(i64(3, 0, 4, 3))), dict(axis=0)),
        Case("last_axis_negative_matrix", (act(rand(rng, [2, 3, 6], -30000, 30000), I32),
                                           const(np.array([[-1, 0], [2, -6]]), I32)),
             dict(axis=-1)),
        Case("scalar_index", (act(rand(rng, [4, 5]), I8), const(np.array(2), I64)), dict(axis=1)),
    ]


def _view_case(rng, label, shape, attrs=None, opset=13, axes=None, dtype=I8, lo=-128, hi=127):
    operands = (act(rand(rng, shape, lo, hi), dtype),)
    if axes is not None:
        operands += (const(i64(*axes)),)
    return Case(label, operands, attrs or {}, opset=opset)


def _reshape_cases(rng):
    return [_view_case(rng, "zero_and_minus_one", [2, 3, 4], axes=[0, -1]),
            _view_case(rng, "split_dims", [6, 4], axes=[2, 3, 2, 2]),
            _view_case(rng, "to_1d", [2, 3, 2], axes=[-1])]


def _flatten_cases(rng):
    return [_view_case(rng, "default_axis", [2, 3, 4]),
            _view_case(rng, "axis0", [2, 3, 4], dict(axis=0)),
            _view_case(rng, "negative_axis", [2, 3, 4, 2], dict(axis=-1)),
            _view_case(rng, "axis_is_rank", [2, 3, 4], dict(axis=3))]


def _squeeze_cases(rng):
    return [_view_case(rng, "axes_input", [1, 3, 1], axes=[0, -1]),
            _view_case(rng, "all_unit_axes", [1, 2, 1, 3]),
            _view_case(rng, "opset11_attribute", [2, 3, 1], dict(axes=[2]), opset=11)]


def _unsqueeze_cases(rng):
    return [_view_case(rng, "axes_input", [2, 3], axes=[0, 3]),
            _view_case(rng, "negative_axis", [2, 3], axes=[-1]),
            _view_case(rng, "opset11_attribute", [2, 3], dict(axes=[1]), opset=11)]


def _identity_cases(rng):
    return [_view_case(rng, "int8", [2, 5]),
            _view_case(rng, "uint8", [3, 4], dtype=U8, lo=0, hi=255)]


def _transpose_cases(rng):
    return [_view_case(rng, "nchw_to_nhwc", [1, 3, 4, 5], dict(perm=[0, 2, 3, 1])),
            _view_case(rng, "default_reverse", [2, 3, 4]),
            _view_case(rng, "wide_2d", [3, 7], dict(perm=[1, 0]), dtype=I32, lo=-2**31,
                       hi=2**31 - 1)]


def _reducesum_cases(rng):
    def red(label, shape, axes=None, opset=13, **attrs):
        operands = (act(rand(rng, shape, -30000, 30000), I32),)
        if axes is not None and opset >= 13:
            operands += (const(i64(*axes)),)
        elif axes is not None:
            attrs["axes"] = axes
        return Case(label, operands, attrs, opset=opset)
    return [red("axes_input_keepdims", [2, 3, 4], [1]),
            red("negative_axes_dropped", [2, 3, 4], [-1, 0], keepdims=0),
            red("all_axes", [2, 3, 4]),
            red("noop_empty_axes", [2, 3], noop_with_empty_axes=1),
            red("opset11_attribute", [2, 3, 4], [2], opset=11, keepdims=0)]


def _relu_cases(rng):
    return [Case("int8", (act(rand(rng, [3, 7]), I8),), opset=14),
            Case("int32", (act(rand(rng, [3, 7], -2**31, 2**31 - 1), I32),), opset=14),
            Case("fake_float", (act(rand(rng, [2, 8]), F32),))]


def _clip_cases(rng):
    x = lambda: act(rand(rng, [4, 6]), I8)  # noqa: E731
    bound = lambda v: const(np.array(v), I8)  # noqa: E731
    return [Case("min_max_inputs", (x(), bound(-5), bound(9))),
            Case("max_only", (x(), None, bound(3))),
            Case("min_only", (x(), bound(-3))),
            Case("min_above_max", (x(), bound(10), bound(-10))),
            Case("int32_bounds_beyond_int8", (x(), bound(-128), bound(127))),
            Case("opset6_float_attrs", (act(rand(rng, [4, 5]), F32),),
                 dict(min=-5.0, max=9.0), opset=6),
            Case("opset6_min_attr_only", (act(rand(rng, [4, 5]), F32),), dict(min=-3.0), opset=6)]


def _reducemean_cases(rng):
    return [
        Case("axis_attr_ties", (act(rand(rng, [2, 4, 3], -3, 3), F64),), dict(axes=[1])),
        Case("global_average_pool", (act(rand(rng, [1, 3, 4, 4]), F64),), dict(axes=[2, 3])),
        Case("opset18_axes_input_ties", (act(rand(rng, [3, 5, 2], -4, 4), F64), const(i64(-1))),
             dict(keepdims=0), opset=18),
        Case("all_axes", (act(rand(rng, [2, 3, 2]), F64),), dict(keepdims=0)),
    ]


def _round_half_up_mean(ort_mean: np.ndarray, case: Case) -> np.ndarray:
    """ORT computes the float mean; integer ReduceMean rounds it half up. The exact sum is
    recovered from ORT's double-precision mean (|sum| << 2^52) and rounded exactly."""
    x = case.operands[0].value
    n = x.size // max(ort_mean.size, 1)
    sums = np.rint(ort_mean.astype(np.float64) * n).astype(np.int64)
    out = [math.floor(Fraction(int(s), n) + Fraction(1, 2)) for s in sums.reshape(-1)]
    return np.array(out, dtype=np.int64).reshape(ort_mean.shape)


STANDARD_RECORDS = [
    OpRecord("Conv", _conv_cases),
    OpRecord("Gemm", _gemm_cases),
    OpRecord("MatMul", _matmul_cases),
    OpRecord("MaxPool", _maxpool_cases),
    OpRecord("Pad", _pad_cases),
    OpRecord("Concat", _concat_cases),
    OpRecord("Slice", _slice_cases),
    OpRecord("Gather", _gather_cases),
    OpRecord("Reshape", _reshape_cases),
    OpRecord("Flatten", _flatten_cases),
    OpRecord("Squeeze", _squeeze_cases),
    OpRecord("Unsqueeze", _unsqueeze_cases),
    OpRecord("Identity", _identity_cases),
    OpRecord("Transpose", _transpose_cases),
    OpRecord("ReduceSum", _reducesum_cases),
    OpRecord("Relu", _relu_cases),
    OpRecord("Clip", _clip_cases),
    OpRecord("ReduceMean", _reducemean_cases, expect_from_ort=_round_half_up_mean),
]
