"""Op records for test_op_references.py, in the style of JAX's op tests.

``RECORDS`` maps every operator name to an ``OpRecord``: a generator of a few one-node cases
(operands with shapes and types, attributes, constant inputs) and the oracle the reference is
checked against:

- standard ONNX ops are run by onnxruntime (``expect_from_ort`` post-processes its output where
  the integer semantics differ, as for ReduceMean, which rounds half up);
- custom integer ops are checked against ``naive``, a deliberately plain re-statement of the
  formula in specs/integer-ops.md: Python ints, exact fractions, loops over rows and elements.

Case data are seeded by the op name, so a case does not change when records are added.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable

import numpy as np
from onnx import TensorProto, numpy_helper

from Deeploy.ops import Trait, op_named, registered_ops

__all__ = ["Operand", "Case", "OpRecord", "RECORDS", "ONNX_OPS", "CUSTOM_OPS", "ERROR_CASES",
           "cases_of", "act", "const"]

I8, U8, I32, I64, F32, F64 = np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64


# ---- case description ----------------------------------------------------------------------
@dataclass(frozen=True)
class Operand:
    """One node input: a graph input (``constant=False``) or an initializer."""

    value: np.ndarray
    constant: bool


def _operand(value, dtype, constant) -> Operand:
    original = np.asarray(value)
    array = original.astype(dtype) if dtype is not None else original
    if original.size and not np.array_equal(array.astype(np.float64), original.astype(np.float64)):
        raise ValueError(f"values do not survive the cast to {np.dtype(dtype)}")
    return Operand(array, constant)


def act(value, dtype=None) -> Operand:
    return _operand(value, dtype, False)


def const(value, dtype=None) -> Operand:
    return _operand(value, dtype, True)


@dataclass(frozen=True)
class Case:
    """A one-node model. ``operands`` lists the node's inputs in order (None: an omitted
    optional input); ``out_type`` is the output type the spec gives, where it gives one."""

    label: str
    operands: tuple[Operand | None, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 13
    domain: str = ""
    out_type: str | None = None

    @property
    def values(self) -> list[np.ndarray | None]:
        return [None if o is None else o.value.astype(np.int64) for o in self.operands]


@dataclass(frozen=True)
class OpRecord:
    name: str
    cases: Callable[[np.random.Generator], list[Case]]
    naive: Callable[[list[np.ndarray], dict[str, Any]], np.ndarray] | None = None
    expect_from_ort: Callable[[np.ndarray, Case], np.ndarray] | None = None

    @property
    def custom(self) -> bool:
        return self.naive is not None


def cases_of(record: OpRecord) -> list[Case]:
    return record.cases(np.random.default_rng(zlib.crc32(record.name.encode())))


# ---- data generators -----------------------------------------------------------------------
def rand(rng, shape, lo=-128, hi=127, extremes=True) -> np.ndarray:
    """Uniform integers in [lo, hi]; with ``extremes`` both bounds occur somewhere."""
    x = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
    if extremes and x.size >= 2:
        i, j = rng.choice(x.size, 2, replace=False)
        x.flat[i], x.flat[j] = lo, hi
    return x


def i64(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def tensor_attr(value, rank1=True) -> TensorProto:
    """A 1-element TENSOR attribute, as QuantLib-style exports write them."""
    return numpy_helper.from_array(np.array([value] if rank1 else value, dtype=np.float32))


def num(value) -> int | float | Fraction:
    """An attribute value as the ONNX file stores it (FLOAT attributes are float32)."""
    if isinstance(value, TensorProto):
        value = numpy_helper.to_array(value).reshape(-1)[0]
    if isinstance(value, (float, np.floating)):
        value = float(np.float32(value))
        return int(value) if value.is_integer() else value
    return int(value)


def rows(x: np.ndarray) -> list[list[int]]:
    return x.reshape(-1, x.shape[-1]).tolist()


def trunc_div(a: int, b: int) -> int:
    return math.trunc(Fraction(a, b))


def floor_div(a: int, b: int) -> int:
    return math.floor(Fraction(a, b))


def clip(v: int, lo: int, hi: int) -> int:
    return lo if v < lo else hi if v > hi else v


def shift_of(div: int) -> int:
    """log2 of a power of two, the long way."""
    s = 0
    while 2 ** s < div:
        s += 1
    assert 2 ** s == div
    return s


# ---- standard ONNX ops (oracle: onnxruntime) ---------------------------------------------
def _binary_cases(rng):
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


# ---- custom integer ops (oracle: the spec formula, naively) --------------------------------
def _flat_or_broadcast(c: np.ndarray, x_shape):
    """RequantShift's rule for mul/add: numpy broadcasting when it keeps x's shape, else a flat
    per-channel vector along axis 1. Returns index -> value."""
    if c.size == 1:
        value = int(c.reshape(-1)[0])
        return lambda idx: value
    try:
        keeps = tuple(np.broadcast_shapes(c.shape, x_shape)) == tuple(x_shape)
    except ValueError:
        keeps = False
    if keeps:
        full = np.broadcast_to(c, x_shape)
        return lambda idx: int(full[idx])
    flat = c.reshape(-1).tolist()
    return lambda idx: flat[idx[1]]


def naive_requant_shift(xs, attrs):
    x, mul, add = xs
    div = num(attrs["div"])
    signed = num(attrs.get("signed", 1))
    m, a = _flat_or_broadcast(mul, x.shape), _flat_or_broadcast(add, x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        acc = int(x[idx]) * m(idx) + a(idx)
        v = math.floor(Fraction(acc, div) + Fraction(1, 2))
        y[idx] = clip(v, -128, 127) if signed else clip(v, 0, 255)
    return y


def _requant_cases(rng):
    def rqs(label, x, mul, add, out_type="int8", **attrs):
        attrs.setdefault("n_levels", 256)
        attrs = {k: v for k, v in attrs.items() if v is not None}
        return Case(label, (act(x, F32), const(mul, F32), const(add, F32)), attrs, out_type=out_type)
    return [
        rqs("per_tensor", rand(rng, [1, 4, 5, 5], -2**15, 2**15), np.array(211),
            np.array([-1234]), div=2**15, signed=1),
        rqs("per_channel_1C11_negative_mul", rand(rng, [1, 4, 3, 3], -2**14, 2**14),
            rand(rng, [1, 4, 1, 1], -200, 200), rand(rng, [1, 4, 1, 1], -2**14, 2**14), div=2**12),
        rqs("C11_on_conv1d_output", rand(rng, [1, 6, 7], -2**14, 2**14),
            rand(rng, [6, 1, 1], 1, 255), rand(rng, [6, 1, 1], -2**14, 2**14), div=2**13),
        rqs("gemm_rows_M1", rand(rng, [5, 8], -2**12, 2**12), rand(rng, [5, 1], 1, 64),
            rand(rng, [5, 1], -2**10, 2**10), div=2**8),
        rqs("vector_C_unsigned_n_levels_out", rand(rng, [2, 6, 3, 4], -2**12, 2**12),
            rand(rng, [6], 1, 100), np.array(2**13), "uint8", n_levels_out=256, signed=0,
            div=2**10, n_levels=None),
        rqs("div1_tensor_attrs", rand(rng, [3, 10], -300, 300), np.array(1), np.array(0),
            div=tensor_attr(1), n_levels=tensor_attr(256, rank1=False), signed=1),
        rqs("half_way_ties", np.arange(-20, 20).reshape(4, 10), np.array(1), np.array(0),
            div=4),
    ]


def naive_isoftmax(xs, attrs):
    x = xs[0]
    a, b, c, log2, levels = (num(attrs[k]) for k in ("coeffA", "coeffB", "coeffC", "log2",
                                                        "n_levels"))
    out = []
    for row in rows(x):
        m = max(row)
        es = []
        for v in row:
            xt = v - m
            z = min(math.trunc(Fraction(-xt, log2)), 31)
            p = xt + z * log2
            es.append(math.floor(Fraction(a * (p + b) ** 2 + c, 2 ** z)))
        total = sum(es)
        out += [math.floor(Fraction(e * (levels - 1), total)) for e in es]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def _isoftmax_attrs(log2, coeff_a=1):
    """I-BERT's second-order exp for an input scale S = ln2/log2."""
    scale = math.log(2) / log2
    return dict(coeffA=coeff_a, coeffB=math.floor(1.353 / scale),
                coeffC=math.floor(0.344 / (0.3585 * scale ** 2)), log2=log2, n_levels=256)


def _isoftmax_cases(rng):
    def sm(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    equal = np.repeat(np.array([[-128], [0], [127]]), 12, axis=1)
    return [
        sm("full_int8_log2_127", rand(rng, [2, 3, 16]), **_isoftmax_attrs(127)),
        sm("log2_255_long_rows", rand(rng, [2, 100]), **_isoftmax_attrs(255)),
        sm("coeffA_3_tensor_attrs", rand(rng, [4, 9]),
           **{k: tensor_attr(v) for k, v in _isoftmax_attrs(96, coeff_a=3).items()}),
        sm("z_capped_small_log2", rand(rng, [3, 20]), **_isoftmax_attrs(3)),
        sm("int16_inputs_z_capped_at_31", rand(rng, [3, 12], -2**15, 2**15 - 1),
           **_isoftmax_attrs(127)),
        sm("all_equal_rows", equal, **_isoftmax_attrs(127)),
        sm("single_column", rand(rng, [5, 1]), **_isoftmax_attrs(127)),
    ]


def _ita_shift(m, v):
    return math.floor(Fraction(m - v + 16, 32))


def naive_itamax(xs, attrs):
    x = xs[0]
    levels = num(attrs["n_levels"])
    out = []
    for row in rows(x):
        m = max(row)
        sh = [_ita_shift(m, v) for v in row]
        total = sum(256 // 2 ** s for s in sh)
        inv = math.floor(Fraction((levels - 1) * 256, total))
        out += [inv // 2 ** s for s in sh]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_itapartialmax(xs, attrs):
    x = xs[0]
    width = num(attrs.get("group_width", 16))
    levels = num(attrs["n_levels"])
    out = []
    for row in rows(x):
        m, total = -128, 0
        for start in range(0, len(row), width):
            group = row[start:start + width]
            cm = max(group)
            if cm > m:
                total = total // 2 ** _ita_shift(cm, m)
                m = cm
            total += sum(256 // 2 ** _ita_shift(m, v) for v in group)
        inv = math.floor(Fraction((levels // 2 - 1) * 256, total))
        out += [inv // 2 ** _ita_shift(m, v) for v in row]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def _equal_rows(values, width):
    return np.repeat(np.array(values).reshape(-1, 1), width, axis=1)


def _itamax_cases(rng):
    def ita(label, x, **attrs):
        attrs.setdefault("n_levels", 256)
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    return [
        ita("full_int8", rand(rng, [2, 4, 24])),
        ita("all_equal_rows", _equal_rows([-128, 0, 127], 16)),
        ita("single_column", rand(rng, [5, 1])),
        ita("n_levels_16", rand(rng, [3, 8]), n_levels=16),
        ita("int16_range_large_shifts", rand(rng, [3, 12], -2**15, 2**15 - 1)),
    ]


def _itapartialmax_cases(rng):
    def ita(label, x, **attrs):
        attrs.setdefault("n_levels", 256)
        return Case(label, (act(x, F32),), attrs, out_type="uint8")
    rising = np.sort(rand(rng, [2, 48]), axis=1)
    return [
        ita("default_group_width_40_cols", rand(rng, [2, 3, 40])),
        ita("group4_ragged_last_group", rand(rng, [3, 10]), group_width=4),
        ita("group_wider_than_row", rand(rng, [3, 7]), group_width=32),
        ita("max_rises_every_group", rising, group_width=16),
        ita("max_falls_every_group", rising[:, ::-1].copy(), group_width=8),
        ita("all_equal_rows", _equal_rows([-128, -100, 0, 127], 20), group_width=16),
    ]


def naive_igelu(xs, attrs):
    x = xs[0]
    b, one = num(attrs["b"]), num(attrs["one"])
    out = []
    for v in x.reshape(-1).tolist():
        sign = (v > 0) - (v < 0)
        q = min(abs(v), -b)
        erf = sign * (one - (q + b) ** 2)
        out.append(v * math.floor(Fraction(one + erf, 2)))
    return np.array(out, dtype=np.int64).reshape(x.shape)


def _igelu_cases(rng):
    def gelu(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="int32")
    edges = np.array([-128, -36, -35, -34, -1, 0, 1, 34, 35, 36, 127])
    return [
        gelu("int8_ibert_scale", rand(rng, [4, 32]), b=-35, one=1355),
        gelu("edges_around_b", edges, b=-35, one=1355),
        gelu("all_int8_odd_one_negative_half", np.arange(-128, 128), b=-40, one=501),
        gelu("int16_inputs_tensor_attrs", rand(rng, [2, 20], -3000, 3000),
             b=tensor_attr(-600), one=tensor_attr(400001)),
    ]


def naive_ihardswish(xs, attrs):
    x = xs[0]
    one_over_six, three, six = (num(attrs[k]) for k in ("one_over_six", "three", "six"))
    out = [v * (clip(v + three, 0, six) * one_over_six) for v in x.reshape(-1).tolist()]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def _ihardswish_cases(rng):
    def hs(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="int32")
    edges = np.array([-128, -61, -60, -59, 0, 59, 60, 61, 127])
    return [
        hs("int8", rand(rng, [4, 16]), one_over_six=2731, three=60, six=120),
        hs("edges_around_three_six", edges, one_over_six=2731, three=60, six=120),
        hs("all_int8", np.arange(-128, 128).reshape(16, 16), one_over_six=5461, three=32,
           six=64),
        hs("int16_inputs", rand(rng, [3, 10], -2000, 2000), one_over_six=11, three=300, six=600),
    ]


def naive_true_integer_div(xs, attrs):
    x = xs[0]
    delta, eps, eta, y = (Fraction(num(attrs[k])) for k in ("Delta", "eps", "eta", "y"))
    coeff = math.floor(delta * eta / (y * eta + eps))
    return np.array([v * coeff for v in x.reshape(-1).tolist()], dtype=np.int64).reshape(x.shape)


def _true_integer_div_cases(rng):
    def div(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs, out_type="int32")
    return [
        div("int_attrs", rand(rng, [3, 8], -2**15, 2**15 - 1), Delta=16384, eps=1, eta=200,
            y=7),
        div("float_attrs_exact_quotient", rand(rng, [4, 5]), Delta=1024.0, eps=0.5, eta=3.0,
            y=2.5),
        div("float_attrs_inexact", rand(rng, [4, 5]), Delta=2048.0, eps=0.1, eta=1000.0, y=0.3),
        div("tensor_attrs", rand(rng, [2, 6]), Delta=tensor_attr(16384),
            eps=tensor_attr(1, rank1=False), eta=tensor_attr(64), y=tensor_attr(3)),
    ]


def naive_integer_div(xs, attrs):
    """``round(x*Delta*eta / (y*eta + eps))``: the spec's round() does not fix ties; ties are
    taken away from zero, as the module documents for the upstream kernel."""
    x, y = xs
    delta, eps, eta = num(attrs["Delta"]), num(attrs["eps"]), num(attrs.get("eta", 1))
    xb, yb = np.broadcast_arrays(x, y)
    out = []
    for xv, yv in zip(xb.reshape(-1).tolist(), yb.reshape(-1).tolist()):
        q = Fraction(xv * delta * eta, yv * eta + eps)
        r = math.floor(abs(q) + Fraction(1, 2))
        out.append(r if q >= 0 else -r)
    return np.array(out, dtype=np.int64).reshape(xb.shape)


def _integer_div_cases(rng):
    def div(label, x, y, **attrs):
        return Case(label, (act(x, F32), act(y, F32)), attrs, domain="PACTOps", out_type="int32")
    return [
        div("row_broadcast", rand(rng, [4, 6]), rand(rng, [1, 6], 0, 300), Delta=256, eps=3,
            eta=4),
        div("ties", rand(rng, [5, 8]), rand(rng, [5, 8], 1, 3), Delta=1, eps=0, eta=2),
        div("negative_denominators", rand(rng, [3, 7]), rand(rng, [3, 7], -5, 5), Delta=100,
            eps=1, eta=2),
    ]


def naive_ilayernorm(xs, attrs):
    x, weight, bias = xs
    div = num(attrs["D"])
    w, b = weight.reshape(-1).tolist(), bias.reshape(-1).tolist()
    out = []
    for row in rows(x):
        length = len(row)
        mean = trunc_div(sum(row), length)
        d = [v - mean for v in row]
        std = math.isqrt(floor_div(sum(v * v for v in d), length) + 1)
        out += [clip(floor_div(trunc_div(dv * w[k % len(w)], std) + b[k % len(b)], div), -128, 127)
                for k, dv in enumerate(d)]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_irmsnorm(xs, attrs):
    x, weight = xs
    div = num(attrs["D"])
    w = weight.reshape(-1).tolist()
    out = []
    for row in rows(x):
        std = math.isqrt(trunc_div(sum(v * v for v in row), len(row)) + 1)
        out += [clip(floor_div(trunc_div(v * w[k % len(w)], std), div), -128, 127)
                for k, v in enumerate(row)]
    return np.array(out, dtype=np.int64).reshape(x.shape)


def naive_inonorm(xs, attrs):
    """``((x*weight + bias) * mul) >> s``, clipped to int8: the spec lists iNoNorm among the ops
    that bring values back to 8 bits, though its formula omits the clip."""
    x, weight, bias = xs
    div, mul = num(attrs["D"]), num(attrs["mul"])
    w, b = np.broadcast_to(weight, x.shape), np.broadcast_to(bias, x.shape)
    y = np.zeros(x.shape, dtype=np.int64)
    for idx in np.ndindex(*x.shape):
        y[idx] = clip(floor_div((int(x[idx]) * int(w[idx]) + int(b[idx])) * mul, div), -128, 127)
    return y


def _norm_case(label, operands, **attrs):
    attrs.setdefault("n_levels", 256)
    return Case(label, tuple(const(o, F32) if k else act(o, F32) for k, o in enumerate(operands)),
                attrs, out_type="int8")


def _ilayernorm_cases(rng):
    crafted = np.array([[0, 0, 4, -4], [5, 5, 5, 5], [-7, -6, -6, -6], [-128, 127, -128, 127]])
    return [
        _norm_case("int8_rows", [rand(rng, [2, 5, 16]), rand(rng, [16]),
                                 rand(rng, [16], -2**12, 2**12)], D=16),
        _norm_case("int16_inputs_long_rows", [rand(rng, [3, 64], -2**14, 2**14), rand(rng, [64]),
                                              rand(rng, [64], -2**10, 2**10)], D=32),
        _norm_case("all_equal_rows", [_equal_rows([-128, 3, 127], 8), rand(rng, [8]),
                                      rand(rng, [8], -2**11, 2**11)], D=8),
        _norm_case("crafted_rows_tensor_D", [crafted, rand(rng, [4]), rand(rng, [4], -500, 500)],
                   D=tensor_attr(4)),
    ]


def _irmsnorm_cases(rng):
    return [
        _norm_case("int8_rows", [rand(rng, [3, 32]), rand(rng, [32])], D=8),
        _norm_case("int16_inputs", [rand(rng, [2, 48], -2**12, 2**12),
                                    rand(rng, [48], -2**10, 2**10)], D=64),
        _norm_case("zero_and_equal_rows", [_equal_rows([0, -128, 7, 127], 6), rand(rng, [6])],
                   D=1),
        # sum(x^2)/L + 1 is a perfect square: the +1 changes the root
        _norm_case("crafted_perfect_squares", [np.array([[0, 4], [1, 4], [0, 7], [-7, 0], [4, -1]]),
                                               np.array([20, -30])], D=1),
    ]


def _inonorm_cases(rng):
    return [
        _norm_case("int8", [rand(rng, [2, 3, 8]), rand(rng, [8]), rand(rng, [8], -2**10, 2**10)],
                   D=256, mul=3),
        _norm_case("negative_mul", [rand(rng, [4, 6]), rand(rng, [6]), rand(rng, [6], -2**8, 2**8)],
                   D=512, mul=-5),
    ]


def naive_integer_mean(xs, attrs):
    x = xs[0]
    axes = sorted(a % x.ndim for a in attrs["axes"])
    keepdims = num(attrs.get("keepdims", 1))
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    kept_shape = moved.shape[:x.ndim - len(axes)]
    out = []
    for group in moved.reshape(int(np.prod(kept_shape, dtype=np.int64)), -1).tolist():
        out.append(math.floor(Fraction(sum(group), len(group)) + Fraction(1, 2)))
    shape = [1 if k in axes else d for k, d in enumerate(x.shape)] if keepdims else kept_shape
    return np.array(out, dtype=np.int64).reshape(shape)


def _integer_mean_cases(rng):
    def mean(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs)
    return [
        mean("axis1_dropped", rand(rng, [2, 5, 6]), axes=[1], keepdims=0),
        mean("spatial_keepdims", rand(rng, [1, 4, 3, 3]), axes=[2, 3], keepdims=1),
        mean("ties_default_keepdims", rand(rng, [6, 2], -3, 3), axes=[-1]),
        mean("two_axes_of_three", rand(rng, [4, 3, 2]), axes=[0, 2], keepdims=0),
    ]


# ---- the table -----------------------------------------------------------------------------
_TABLE = [

    OpRecord("Conv", _conv_cases), OpRecord("Gemm", _gemm_cases), OpRecord("MatMul", _matmul_cases),
    OpRecord("MaxPool", _maxpool_cases), OpRecord("Pad", _pad_cases),
    OpRecord("Concat", _concat_cases), OpRecord("Slice", _slice_cases),
    OpRecord("Gather", _gather_cases), OpRecord("Reshape", _reshape_cases),
    OpRecord("Flatten", _flatten_cases), OpRecord("Squeeze", _squeeze_cases),
    OpRecord("Unsqueeze", _unsqueeze_cases), OpRecord("Identity", _identity_cases),
    OpRecord("Transpose", _transpose_cases), OpRecord("ReduceSum", _reducesum_cases),
    OpRecord("Relu", _relu_cases), OpRecord("Clip", _clip_cases),
    OpRecord("ReduceMean", _reducemean_cases, expect_from_ort=_round_half_up_mean),
    OpRecord("RequantShift", _requant_cases, naive_requant_shift),
    OpRecord("iSoftmax", _isoftmax_cases, naive_isoftmax),
    OpRecord("ITAMax", _itamax_cases, naive_itamax),
    OpRecord("ITAPartialMax", _itapartialmax_cases, naive_itapartialmax),
    OpRecord("iGELU", _igelu_cases, naive_igelu),
    OpRecord("iLayerNorm", _ilayernorm_cases, naive_ilayernorm),
    OpRecord("iRMSNorm", _irmsnorm_cases, naive_irmsnorm),
    OpRecord("iHardswish", _ihardswish_cases, naive_ihardswish),
    OpRecord("TrueIntegerDiv", _true_integer_div_cases, naive_true_integer_div),
    OpRecord("IntegerDiv", _integer_div_cases, naive_integer_div),
    OpRecord("iNoNorm", _inonorm_cases, naive_inonorm),
    OpRecord("IntegerMean", _integer_mean_cases, naive_integer_mean),
]
# standard binary broadcasting ops need no record of their own: the broadcasting cases fit them all
_BY_TRAIT = [OpRecord(name, _binary_cases) for name, op in sorted(registered_ops().items())
             if op.has(Trait.STANDARD) and op.has(Trait.BROADCASTING)]
RECORDS: dict[str, OpRecord] = {r.name: r for r in _BY_TRAIT + _TABLE}
assert len(RECORDS) == len(_TABLE) + len(_BY_TRAIT), "an op has two records"
ONNX_OPS = sorted(name for name in RECORDS if op_named(name).has(Trait.STANDARD))
CUSTOM_OPS = sorted(name for name in RECORDS if not op_named(name).has(Trait.STANDARD))


# ---- nodes the op definitions must reject ------------------------------------------------
def _shape_only(*shapes):
    return tuple(act(np.zeros(s), F32) for s in shapes)


# (label, op, operands, attrs, fragment of the expected message)
ERROR_CASES = [
    ("conv_group_not_dividing_channels", "Conv",
     _shape_only([1, 6, 5, 5]) + (const(np.ones([4, 2, 3, 3]), F32),), dict(group=4), "group=4"),
    ("conv_kernel_larger_than_input", "Conv",
     _shape_only([1, 2, 3, 3]) + (const(np.ones([2, 2, 5, 5]), F32),), {}, "larger than"),
    ("matmul_inner_dims", "MatMul", _shape_only([2, 3], [4, 5]), {}, "inner dimensions"),
    ("gemm_inner_dims_transB", "Gemm", _shape_only([2, 3], [3, 4]), dict(transB=1),
     "inner dimensions"),
    ("requant_div_not_pow2", "RequantShift",
     _shape_only([1, 4]) + (const(np.array(3), F32), const(np.array(0), F32)),
     dict(div=3, n_levels=256, signed=1), "'div' must be a power of two"),
    ("add_no_broadcast", "Add", _shape_only([2, 3], [4]), {}, "do not broadcast"),
    ("reshape_element_count", "Reshape", _shape_only([2, 3]) + (const(i64(4, 2)),), {},
     "cannot reshape"),
    ("gather_index_out_of_range", "Gather", _shape_only([3, 4]) + (const(i64(0, 4)),),
     dict(axis=1), "out of range"),
    ("concat_mismatch_outside_axis", "Concat", _shape_only([3, 4], [3, 5]), dict(axis=0),
     "does not match"),
    ("transpose_bad_perm", "Transpose", _shape_only([2, 3, 4]), dict(perm=[0, 2, 2]),
     "not a permutation"),
    ("maxpool_window_on_padding_only", "MaxPool", _shape_only([1, 1, 4, 4]),
     dict(kernel_shape=[2, 2], pads=[2, 0, 0, 0]), "padding only"),
    ("ilayernorm_D_not_pow2", "iLayerNorm",
     _shape_only([3, 4]) + (const(np.ones(4), F32), const(np.ones(4), F32)),
     dict(D=100, n_levels=256), "'D' must be a power of two"),
    ("isoftmax_log2_zero", "iSoftmax", _shape_only([3, 4]),
     dict(coeffA=1, coeffB=248, coeffC=32200, log2=0, n_levels=256), "log2 must be positive"),
    ("irmsnorm_weight_shape", "iRMSNorm", _shape_only([3, 4]) + (const(np.ones(3), F32),),
     dict(D=8, n_levels=256), "does not broadcast"),
]
