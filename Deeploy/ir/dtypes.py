"""Integer element types of the compiler: storage width, signedness, C and numpy names."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["IntType", "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64",
           "smallest_int_type", "widest", "dtype_by_name"]


@dataclass(frozen=True)
class IntType:
    """An integer storage type; values of a tensor of this type lie in [min, max]."""

    bits: int
    signed: bool

    @property
    def name(self) -> str:
        return f"{'' if self.signed else 'u'}int{self.bits}"

    @property
    def ctype(self) -> str:
        return f"{self.name}_t"

    @property
    def short(self) -> str:
        """Compact tag used in kernel variant names, e.g. ``s8`` or ``u32``."""
        return f"{'s' if self.signed else 'u'}{self.bits}"

    @property
    def nbytes(self) -> int:
        return self.bits // 8

    @property
    def min(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def max(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def numpy(self) -> np.dtype:
        return np.dtype(self.name)

    def holds(self, lo: int, hi: int) -> bool:
        return self.min <= lo and hi <= self.max

    def __str__(self) -> str:
        return self.name


INT8, UINT8 = IntType(8, True), IntType(8, False)
INT16, UINT16 = IntType(16, True), IntType(16, False)
INT32, UINT32 = IntType(32, True), IntType(32, False)
INT64 = IntType(64, True)

_BY_SIZE = (INT8, UINT8, INT16, UINT16, INT32, UINT32, INT64)


def dtype_by_name(name: str) -> IntType:
    for t in _BY_SIZE:
        if t.name == name:
            return t
    raise ValueError(f"unknown integer type '{name}' (expected one of {', '.join(t.name for t in _BY_SIZE)})")


def smallest_int_type(lo: int, hi: int) -> IntType:
    """The narrowest type holding [lo, hi]; signed types are preferred when both fit."""
    for t in _BY_SIZE:
        if t.holds(lo, hi):
            return t
    raise ValueError(f"integer range [{lo}, {hi}] does not fit in 64 bits")


def widest(*types: IntType) -> IntType:
    """The narrowest type that holds every value of all ``types``."""
    return smallest_int_type(min(t.min for t in types), max(t.max for t in types))
