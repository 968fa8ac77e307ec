"""Element types of the compiler: signed and unsigned 8/16/32/64-bit integers, float32 and
bfloat16, with their C, numpy and ONNX names. The one home of "which type holds these values"."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import onnx

__all__ = ["DType", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64",
           "FLOAT32", "BFLOAT16", "ALL_DTYPES", "smallest_int_type", "widest", "dtype_by_name",
           "dtype_of_values", "dtype_of_onnx", "onnx_elem_type", "computed", "stored", "float_result",
           "wrapped", "FLOAT_ONNX_TYPES"]


@dataclass(frozen=True)
class DType:
    """An element type. Integer types hold the values in [min, max]; float types are IEEE
    float32 or bfloat16 (stored as the upper 16 bits of a float32)."""

    bits: int
    signed: bool
    is_float: bool = False

    @property
    def is_integer(self) -> bool:
        return not self.is_float

    @cached_property
    def name(self) -> str:
        if self.is_float:
            return "float32" if self.bits == 32 else "bfloat16"
        return f"{'' if self.signed else 'u'}int{self.bits}"

    @cached_property
    def ctype(self) -> str:
        if self.is_float:
            return "float" if self.bits == 32 else "deeploy_bf16_t"   # kernels/common.h: bits in a struct
        return f"{self.name}_t"

    @property
    def short(self) -> str:
        """Compact tag used in kernel variant names, e.g. ``s8``, ``u32``, ``f32``, ``bf16``."""
        if self.is_float:
            return "f32" if self.bits == 32 else "bf16"
        return f"{'s' if self.signed else 'u'}{self.bits}"

    @property
    def nbytes(self) -> int:
        return self.bits // 8

    @property
    def min(self) -> int | float:
        if self.is_float:
            return -float("inf")
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int | float:
        if self.is_float:
            return float("inf")
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @cached_property
    def numpy(self) -> np.dtype:
        if self.name == "bfloat16":
            import ml_dtypes
            return np.dtype(ml_dtypes.bfloat16)
        return np.dtype(self.name)

    @property
    def magnitude(self) -> int | float:
        """The largest |value| of the type."""
        return max(-self.min, self.max)

    def holds(self, lo: int | float, hi: int | float) -> bool:
        return self.min <= lo and hi <= self.max

    def __str__(self) -> str:
        return self.name


INT8, UINT8 = DType(8, True), DType(8, False)
INT16, UINT16 = DType(16, True), DType(16, False)
INT32, UINT32 = DType(32, True), DType(32, False)
INT64, UINT64 = DType(64, True), DType(64, False)
FLOAT32, BFLOAT16 = DType(32, True, True), DType(16, True, True)

_INTS_BY_SIZE = (INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64)
ALL_DTYPES = (*_INTS_BY_SIZE, UINT64, FLOAT32, BFLOAT16)

_ONNX = {onnx.TensorProto.INT8: INT8, onnx.TensorProto.UINT8: UINT8, onnx.TensorProto.INT16: INT16,
         onnx.TensorProto.UINT16: UINT16, onnx.TensorProto.INT32: INT32, onnx.TensorProto.UINT32: UINT32,
         onnx.TensorProto.INT64: INT64, onnx.TensorProto.UINT64: UINT64, onnx.TensorProto.FLOAT: FLOAT32,
         onnx.TensorProto.BFLOAT16: BFLOAT16}
_TO_ONNX = {t: elem for elem, t in _ONNX.items()}
_ONNX[onnx.TensorProto.BOOL] = UINT8   # bool tensors are held as uint8 (0 or 1)
FLOAT_ONNX_TYPES = (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.FLOAT16,
                    onnx.TensorProto.BFLOAT16)


def dtype_by_name(name: str) -> DType:
    for t in ALL_DTYPES:
        if t.name == name:
            return t
    raise ValueError(f"unknown element type '{name}' (expected one of {', '.join(t.name for t in ALL_DTYPES)})")


def dtype_of_onnx(elem_type: int) -> DType | None:
    """The DType of an ONNX TensorProto element type, None if the compiler has none for it."""
    return _ONNX.get(elem_type)


def onnx_elem_type(dtype: DType) -> int:
    return _TO_ONNX[dtype]


def smallest_int_type(lo: int, hi: int) -> DType:
    """The narrowest integer type holding [lo, hi]; signed types are preferred when both fit."""
    for t in _INTS_BY_SIZE:
        if t.holds(lo, hi):
            return t
    raise ValueError(f"integer range [{lo}, {hi}] does not fit in 64 bits")


def dtype_of_values(values: np.ndarray, empty: DType = INT8) -> DType:
    """The type a constant's values need: the narrowest integer type holding them (``empty``
    for no values), or the float type they already have."""
    values = np.asarray(values)
    if values.dtype.kind == "f" or values.dtype == BFLOAT16.numpy:
        return BFLOAT16 if values.dtype == BFLOAT16.numpy else FLOAT32
    if not values.size:
        return empty
    return smallest_int_type(int(values.min()), int(values.max()))


def widest(*types: DType) -> DType:
    """The narrowest integer type that holds every value of all integer ``types``."""
    return smallest_int_type(min(t.min for t in types), max(t.max for t in types))


def computed(values: np.ndarray, dtype: DType) -> np.ndarray:
    """``values`` as the references compute on them: int64 for an integer type, float32 for a
    float type (bfloat16 widened exactly)."""
    values = np.asarray(values)
    return values.astype(np.float32) if dtype.is_float else values.astype(np.int64)


def stored(values: np.ndarray, dtype: DType) -> np.ndarray:
    """A reference result as the type ``dtype`` holds it, in compute form (see ``computed``):
    float32 results of a bfloat16 tensor rounded to bfloat16 (to nearest even)."""
    values = np.asarray(values)
    if not dtype.is_float:
        return values.astype(np.int64)
    if dtype == BFLOAT16:
        return values.astype(np.float32).astype(BFLOAT16.numpy).astype(np.float32)
    return values.astype(np.float32)


def wrapped(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Integer ``values`` (int64) wrapped around into ``dtype``'s range, as ONNX integer arithmetic
    does (two's complement, modulo 2^bits)."""
    values = np.asarray(values, dtype=np.int64)
    if dtype.bits >= 64:
        return values
    return (values - dtype.min) % (1 << dtype.bits) + dtype.min


def float_result(*types: DType | None) -> DType | None:
    """The float type of an op's result when any operand is float (bfloat16 only when every
    float operand is bfloat16), None when all are integers."""
    floats = [t for t in types if t is not None and t.is_float]
    if not floats:
        return None
    return BFLOAT16 if all(t == BFLOAT16 for t in floats) else FLOAT32
