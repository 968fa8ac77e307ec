"""Op records of the tests: an op's cases (its ``OpDef.examples``) with the oracle they are checked
against, and the plain arithmetic the restated spec formulas use."""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from Deeploy.ops.examples import Case
from onnx import TensorProto, numpy_helper


# ---- case description ----------------------------------------------------------------------


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


