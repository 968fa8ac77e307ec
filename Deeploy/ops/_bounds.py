"""Proven bounds on the values a node computes, from its inputs: a constant's actual values, an
activation's type range. They choose output and accumulator types (int32 when provably enough,
else int64) and reject nodes whose values could exceed int64."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, INT64, DType
from Deeploy.ir.graph import Node, Tensor

__all__ = ["magnitude", "value_bounds", "sum_type", "check_int64", "matmul_bound", "conv_bound", "all_integer",
           "magnitude_by_reference", "output_type_magnitudes"]


def value_bounds(t: Tensor | None) -> tuple[int, int]:
    """[lo, hi] of the values ``t`` holds ((0, 0) for an absent optional input)."""
    if t is None:
        return 0, 0
    if t.is_constant:
        return (int(t.value.min()), int(t.value.max())) if t.value.size else (0, 0)
    return t.dtype.min, t.dtype.max


def magnitude(t: Tensor | None) -> int:
    """The largest |value| ``t`` holds."""
    lo, hi = value_bounds(t)
    return max(-lo, hi)


def all_integer(tensors: Sequence[Tensor | None]) -> bool:
    return all(t is None or t.dtype is None or t.dtype.is_integer for t in tensors)


def sum_type(bound: int) -> DType:
    """int32 when every value of magnitude <= ``bound`` fits, else int64 (see ``check_int64``)."""
    return INT32 if bound < 2**31 else INT64


def check_int64(node: Node, bound: int, what: str, tensors: Sequence[Tensor | None]) -> None:
    """OpError naming the node and the operands' ranges when ``bound`` exceeds int64."""
    if bound < 2**63:
        return
    ranges = ", ".join(f"'{t.name}' in [{value_bounds(t)[0]}, {value_bounds(t)[1]}]" for t in tensors if t is not None)
    raise OpError(node, f"{what} can reach {bound} (operands {ranges}), beyond int64, the widest "
                  "accumulator")


def matmul_bound(alpha: int, beta: int, k: int, a: Tensor, b: Tensor, c: Tensor | None) -> int:
    """Largest |alpha * sum_k a*b + beta * c| (also bounds every partial sum)."""
    return abs(alpha) * k * magnitude(a) * magnitude(b) + abs(beta) * magnitude(c)


def conv_bound(taps: int, x: Tensor, w: Tensor, bias: Tensor | None) -> int:
    """Largest |conv output| (and partial sum): per output channel (axis 0 of the weights) the
    sum of |w| times the largest |x| when the weights are constant, else ``taps`` products."""
    if w.is_constant and w.size:
        per_channel = np.abs(w.value.reshape(w.shape[0], -1)).astype(object).sum(axis=1)
        weight_sum = int(max(per_channel))
    else:
        weight_sum = taps * magnitude(w)
    return weight_sum * magnitude(x) + magnitude(bias)


def magnitude_by_reference(reference, absolute=lambda p: p):
    """A magnitude rule for a linear op: its reference on the magnitudes (constants' |values|,
    activations at their bound; ``absolute`` makes the params' own factors non-negative)."""
    def rule(p, bounds, ins, outs):
        args = [None if t is None else np.abs(t.value) if t.is_constant else np.full(t.shape, b, dtype=np.int64)
                for t, b in zip(ins, bounds)]
        return [int(np.max(np.abs(reference(absolute(p), args)[0]), initial=0))]
    return rule


def output_type_magnitudes(p, bounds, ins, outs) -> list[int]:
    """A magnitude rule for ops whose outputs span their types (requantisation, softmaxes, norms)."""
    return [t.magnitude for t in outs]
