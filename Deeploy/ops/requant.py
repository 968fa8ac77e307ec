"""RequantShift: ``clip((x*mul + add + 2^(s-1)) >> s)`` back to 8 bits, with scalar or
per-channel ``mul``/``add`` (see specs/integer-ops.md)."""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import smallest_int_type
from Deeploy.ops._attrs import attr_int, log2_exact, require_inputs
from Deeploy.ops.bounds import output_type_magnitudes
from Deeploy.ops.examples import F32, Case, act, const, rand, tensor_attr
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["RequantParams", "REQUANT_ATTRS", "channel_layout", "channel_strides", "requant_params", "requantize"]


@dataclass(frozen=True)
class RequantParams:
    """x viewed as [outer, channels, inner]; mul/add hold 1 or ``channels`` values each."""

    shift: int
    lo: int
    hi: int
    outer: int
    channels: int
    inner: int
    mul_per_channel: bool
    add_per_channel: bool


def channel_layout(node, x_shape, vec_shapes) -> tuple[int, int, int]:
    """(outer, channels, inner) such that every non-scalar vector indexes the middle extent.

    A vector broadcasts numpy-style onto x when that keeps x's shape; otherwise a flat vector
    as long as axis 1 is taken along axis 1 (a [C,1,1] constant on a [1,C,L] Conv1D output).
    """
    rank = len(x_shape)
    varying: set[int] = set()
    for shape in vec_shapes:
        size = int(math.prod(shape))
        if size == 1:
            continue
        axes = None
        if len(shape) <= rank:
            try:
                if tuple(np.broadcast_shapes(shape, x_shape)) == tuple(x_shape):
                    offset = rank - len(shape)
                    axes = {offset + k for k, d in enumerate(shape) if d != 1}
            except ValueError:
                pass
        if axes is None and rank >= 2 and size == x_shape[1]:
            axes = {1}
        if axes is None:
            raise OpError(node, f"constant of shape {list(shape)} cannot be applied per channel to "
                          f"an input of shape {list(x_shape)}")
        if varying and axes != varying:
            raise OpError(node, "mul and add vary along different axes")
        varying = axes
    if not varying:
        return int(math.prod(x_shape)), 1, 1
    first, last = min(varying), max(varying)
    if last - first + 1 != len(varying):
        raise OpError(node, f"per-channel constants vary along non-adjacent axes {sorted(varying)}")
    prod = lambda dims: int(math.prod(dims))  # noqa: E731
    return prod(x_shape[:first]), prod(x_shape[first:last + 1]), prod(x_shape[last + 1:])


REQUANT_ATTRS = ("div", "n_levels", "n_levels_out", "signed")


def channel_strides(rq: RequantParams, dims: tuple[int, ...], per_channel: bool) -> tuple[int, ...] | None:
    """Strides indexing a per-channel mul or add over an output of shape ``dims`` (0 where the
    constant does not vary), or None if its channels are not whole consecutive dims."""
    if not per_channel or rq.channels == 1:
        return (0,) * len(dims)
    for first in range(len(dims)):
        for last in range(first, len(dims)):
            inner = int(math.prod(dims[last + 1:]))
            if inner == rq.inner and int(math.prod(dims[first:last + 1])) == rq.channels:
                strides, step = [0] * len(dims), 1
                for axis in range(last, first - 1, -1):
                    strides[axis], step = step, step * dims[axis]
                return tuple(strides)
    return None


def requant_params(node, x_shape, mul, add) -> RequantParams:
    """Requantisation of an ``x_shape`` tensor by the ``mul``/``add`` tensors and the node's
    div / n_levels(_out) / signed attributes."""
    levels = attr_int(node, "n_levels_out", None)
    levels = attr_int(node, "n_levels") if levels is None else levels
    if levels < 2 or levels > 256:
        raise OpError(node, f"n_levels must be in 2..256, got {levels}")
    signed = bool(attr_int(node, "signed", 1))
    shift = log2_exact(node, "div", attr_int(node, "div"))
    lo, hi = (-(levels // 2), levels // 2 - 1) if signed else (0, levels - 1)
    outer, channels, inner = channel_layout(node, x_shape, [mul.shape, add.shape])
    return RequantParams(shift, lo, hi, outer, channels, inner, mul.size > 1, add.size > 1)


def _rqs_parse(node, graph):
    require_inputs(node, 3)
    x, mul, add = (graph.tensors[i] for i in node.inputs)
    return requant_params(node, x.shape, mul, add)


def _rqs_infer(p: RequantParams, ins):
    return [(ins[0].shape, smallest_int_type(p.lo, p.hi))]


def requantize(acc: np.ndarray, shift: int, lo: int, hi: int) -> np.ndarray:
    """Round-half-up arithmetic shift and clip, on int64 accumulators."""
    rounding = (1 << (shift - 1)) if shift > 0 else 0
    return np.clip((acc + rounding) >> shift, lo, hi)


def _rqs_reference(p: RequantParams, xs):
    x, mul, add = xs
    view = x.reshape(p.outer, p.channels, p.inner)
    m = mul.reshape(1, -1, 1) if p.mul_per_channel else mul.reshape(1, 1, 1)
    a = add.reshape(1, -1, 1) if p.add_per_channel else add.reshape(1, 1, 1)
    return [requantize(view * m + a, p.shift, p.lo, p.hi).reshape(x.shape)]


def _rqs_cost(p: RequantParams, ins, outs):
    return Cost(ops=4 * outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
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


register(OpDef("RequantShift", _rqs_parse, _rqs_infer, _rqs_reference, _rqs_cost,
               traits=frozenset({Trait.ELEMENTWISE}), tiling="requant",
               magnitude=output_type_magnitudes,
               examples=_requant_cases))
