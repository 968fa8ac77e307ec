"""Test records of the ops: a one-node case describes a node's operands (graph inputs or
initializers, with shapes and values) and attributes. Each op module gives its ``OpDef.examples``
(rng -> cases); DeeployTest/test_suite/test_op_references.py checks every case against
onnxruntime or a restated spec formula."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from onnx import TensorProto, numpy_helper

__all__ = ["Operand", "Case", "act", "const", "rand", "frand", "i64", "tensor_attr", "shift_of", "equal_rows",
           "I8", "U8", "I32", "I64", "F32", "F64"]

I8, U8, I32, I64, F32, F64 = np.int8, np.uint8, np.int32, np.int64, np.float32, np.float64


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
    optional input); ``out_type`` is the output type the spec gives, where it gives one;
    ``outputs`` how many outputs the node has."""

    label: str
    operands: tuple[Operand | None, ...]
    attrs: dict[str, Any] = field(default_factory=dict)
    opset: int = 13
    domain: str = ""
    out_type: str | None = None
    outputs: int = 1

    @property
    def values(self) -> list[np.ndarray | None]:
        """The operands as int64, or as float64 when they hold non-integer values (float cases)."""
        return [None if o is None else o.value.astype(np.int64) if np.all(o.value == np.round(o.value))
                else o.value.astype(np.float64) for o in self.operands]


def rand(rng, shape, lo=-128, hi=127, extremes=True) -> np.ndarray:
    """Uniform integers in [lo, hi]; with ``extremes`` both bounds occur somewhere."""
    x = rng.integers(lo, hi, size=shape, endpoint=True, dtype=np.int64)
    if extremes and x.size >= 2:
        i, j = rng.choice(x.size, 2, replace=False)
        x.flat[i], x.flat[j] = lo, hi
    return x


def frand(rng, shape, lo=-4.0, hi=4.0) -> np.ndarray:
    """Uniform float32 values in [lo, hi) (float networks' test data)."""
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def i64(*values) -> np.ndarray:
    return np.array(values, dtype=np.int64)


def tensor_attr(value, rank1=True) -> TensorProto:
    """A 1-element TENSOR attribute, as QuantLib-style exports write them."""
    return numpy_helper.from_array(np.array([value] if rank1 else value, dtype=np.float32))


def shift_of(div: int) -> int:
    """log2 of a power of two, the long way."""
    s = 0
    while 2 ** s < div:
        s += 1
    assert 2 ** s == div
    return s


def equal_rows(values, width):
    return np.repeat(np.array(values).reshape(-1, 1), width, axis=1)
