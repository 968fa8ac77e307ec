"""Value ranges for choosing accumulator types: a constant's actual values, else its type's range."""

from __future__ import annotations

from Deeploy.ir.dtypes import INT32, INT64, DType
from Deeploy.ir.graph import Graph

__all__ = ["value_range", "max_abs", "accumulator_type"]


def value_range(graph: Graph, name: str) -> tuple[int, int]:
    """Bounds of the values tensor ``name`` can hold ((0, 0) for an absent optional input)."""
    if not name:
        return 0, 0
    t = graph.tensors[name]
    if t.is_constant:
        return (int(t.value.min()), int(t.value.max())) if t.size else (0, 0)
    return t.dtype.min, t.dtype.max


def max_abs(graph: Graph, name: str) -> int:
    lo, hi = value_range(graph, name)
    return max(-lo, hi)


def accumulator_type(bound: int) -> DType:
    """int32 when every value of magnitude <= ``bound`` fits, else int64."""
    return INT32 if bound < 2**31 else INT64
