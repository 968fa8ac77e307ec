"""Proven bounds on values, the one home of value ranges: a constant's actual values, an
activation's type range (or, for an int64 activation, its producer's proven bound). They choose
output and accumulator types (int32 when provably enough, else int64), reject nodes whose values
could exceed int64, and bound test data (each op's magnitude rule)."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, INT64, DType
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ops._registry import Trait, get_op

__all__ = ["magnitude", "value_bounds", "sum_type", "accumulator_type", "check_int64", "matmul_bound", "conv_bound",
           "all_integer", "magnitude_by_reference", "output_type_magnitudes", "value_range", "max_abs", "gemm_sum_bound",
           "conv_sum_bound", "wide_reason", "memoized"]


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


def _k_abs_sum(t: Tensor, axis: int) -> int | None:
    """The largest sum of |values| along the reduction ``axis`` of a constant, else None."""
    if t is None or not t.is_constant or t.value.ndim < 2 or not t.value.size:
        return None
    return int(np.abs(np.asarray(t.value, dtype=np.int64)).astype(object).sum(axis=axis).max())


def matmul_bound(p, a: Tensor, b: Tensor, c: Tensor | None, mags: Sequence[int] | None = None) -> int:
    """Largest |alpha * sum_k a*b + beta * c| (also bounds every partial sum) of a GEMM with params
    ``p`` (alpha, beta, k, trans_a, trans_b), from the operands' largest |values| ``mags`` (their
    magnitudes by default): k products of the largest, or, the tighter when A or B is constant, its
    largest sum of |values| along k times the other operand's largest |value|."""
    ma, mb, mc = mags if mags is not None else (magnitude(a), magnitude(b), magnitude(c))
    products = p.k * ma * mb
    for t, axis, other in ((a, -2 if p.trans_a else -1, mb), (b, -1 if p.trans_b else -2, ma)):
        k_sum = _k_abs_sum(t, axis)
        if k_sum is not None:
            products = min(products, k_sum * other)
    return abs(p.alpha) * products + abs(p.beta) * mc


def conv_bound(taps: int, x: Tensor, w: Tensor, bias: Tensor | None) -> int:
    """Largest |conv output| (and partial sum): per output channel (axis 0 of the weights) the
    sum of |w| times the largest |x| when the weights are constant, else ``taps`` products."""
    if w.is_constant and w.size:
        per_channel = np.abs(np.asarray(w.value, dtype=np.int64).reshape(w.shape[0], -1)).astype(object).sum(axis=1)
        weight_sum = int(max(per_channel))
    else:
        weight_sum = taps * magnitude(w)
    return weight_sum * magnitude(x) + magnitude(bias)


def magnitude_by_reference(reference, absolute=lambda p: p):
    """A magnitude rule for a linear op: its reference on the magnitudes (constants' |values|,
    activations at their bound; ``absolute`` makes the params' own factors non-negative)."""
    def rule(p, bounds, ins, outs):
        args = [None if t is None else np.abs(np.asarray(t.value, dtype=np.int64)) if t.is_constant else np.full(t.shape, b, dtype=np.int64)
                for t, b in zip(ins, bounds)]
        return [int(np.max(np.abs(reference(absolute(p), args)[0]), initial=0))]
    return rule


def output_type_magnitudes(p, bounds, ins, outs) -> list[int]:
    """A magnitude rule for ops whose outputs span their types (requantisation, softmaxes, norms)."""
    return [t.magnitude for t in outs]


accumulator_type = sum_type


_memo: tuple[Graph, dict] | None = None   # the graph ``memoized`` is active for, and its results


@contextmanager
def memoized(graph: Graph) -> Iterator[None]:
    """Within: each bound of ``graph`` computed once. For a stage that reads the graph only
    (``bind``), or parses the nodes in order, each after its producers and leaving them unchanged
    (``infer_graph``): a tensor's bound depends on the nodes before its readers only."""
    global _memo
    outer, _memo = _memo, (graph, {})
    try:
        yield
    finally:
        _memo = outer


def _once(graph: Graph, key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()``, computed once per ``key`` while ``memoized(graph)`` is active."""
    if _memo is None or _memo[0] is not graph:
        return compute()
    table = _memo[1]
    if key not in table:
        table[key] = compute()
    return table[key]


def value_range(graph: Graph, name: str) -> tuple[int, int]:
    """Bounds of the values tensor ``name`` can hold ((0, 0) for an absent optional input): a
    constant's values; for an integer activation its type's range, narrowed to its producer's
    proven bound when that is tighter (an int32 sum of two int8 tensors stays within +-256)."""
    return _once(graph, ("range", name), lambda: _value_range(graph, name))


def _value_range(graph: Graph, name: str) -> tuple[int, int]:
    t = graph.tensors[name] if name else None
    if t is not None and not t.is_constant and t.dtype is not None and t.dtype.is_integer:
        bound = _produced_bound(graph, name, _PRODUCER_DEPTH)
        if bound is not None:
            return max(-bound, t.dtype.min), min(bound, t.dtype.max)
    return value_bounds(t)


_PRODUCER_DEPTH = 16   # producers followed back from one tensor (chains of data movement, sums)


def _produced_bound(graph: Graph, name: str, depth: int) -> int | None:
    """The proven largest |value| of ``name`` from the node that writes it: the GEMM/conv/sum
    bounds, the op's magnitude rule on its inputs' proven bounds, or a data-movement op's input
    bound; None when the producer proves nothing tighter than the type."""
    return _once(graph, ("produced", name, depth), lambda: _producer_bound(graph, name, depth))


def _producer_bound(graph: Graph, name: str, depth: int) -> int | None:
    node = graph.producer(name)
    if node is None or depth <= 0:
        return None
    if node.op in ("Gemm", "MatMul"):
        return gemm_sum_bound(node, graph)
    if node.op == "Conv":
        return conv_sum_bound(node, graph)
    if node.op == "ReduceSum":
        return node.params.count * magnitude(graph.tensors[node.inputs[0]])
    op = get_op(node)
    if op.magnitude is None and not op.has(Trait.DATA_MOVEMENT):
        return None
    ins = [graph.tensors[i] if i else None for i in node.inputs]
    if not all_integer(ins) or node.params is None:
        return None
    if op.magnitude is None:   # data movement: its input's bound
        return _input_bound(graph, node.inputs[0], depth - 1)
    outs = [graph.tensors[o].dtype for o in node.outputs]
    if op.magnitude is output_type_magnitudes:   # reads no input bounds
        return output_type_magnitudes(node.params, None, ins, outs)[node.outputs.index(name)]
    bounds = [_input_bound(graph, i, depth - 1) for i in node.inputs]
    return op.magnitude(node.params, bounds, ins, outs)[node.outputs.index(name)]


def _input_bound(graph: Graph, name: str, depth: int) -> int:
    """Largest |value| of an operand: a constant's, else its proven bound within its type."""
    t = graph.tensors[name] if name else None
    if t is None or t.is_constant:
        return max_abs(graph, name)
    bound = _produced_bound(graph, name, depth)
    return magnitude(t) if bound is None else min(bound, magnitude(t))


def max_abs(graph: Graph, name: str) -> int:
    lo, hi = value_range(graph, name)
    return max(-lo, hi)


def _tensors(node: Node, graph: Graph) -> list:
    return [graph.tensors[i] if i else None for i in node.inputs]


def gemm_sum_bound(node: Node, graph: Graph) -> int:
    """Largest |alpha * A@B + beta * C| of a Gemm/MatMul node or its requantised form (whose
    params hold the GEMM's as ``base``); bounds every partial sum too."""
    p = getattr(node.params, "base", node.params)
    if p.sum_bound is not None:
        return p.sum_bound
    ins = _tensors(node, graph)
    return matmul_bound(p, ins[0], ins[1], ins[2] if len(ins) > 2 else None)


def conv_sum_bound(node: Node, graph: Graph) -> int:
    """Largest |conv output| (and partial sum) of a Conv node or its requantised form."""
    p = getattr(node.params, "base", node.params)
    ins = _tensors(node, graph)
    taps = (p.ch_in // p.group) * p.kernel[0] * p.kernel[1]
    return conv_bound(taps, ins[0], ins[1], ins[2] if len(ins) > 2 else None)


def wide_reason(what: str, bound: int, node: Node, graph: Graph) -> str | None:
    """Why a kernel cannot compute ``what`` (a bound beyond int64, naming the operands' ranges),
    or None when int64 suffices."""
    if bound < 2**63:
        return None
    ranges = ", ".join(f"'{i}' in [{value_range(graph, i)[0]}, {value_range(graph, i)[1]}]" for i in node.inputs if i)
    return f"{what} can reach {bound}, beyond int64 (operands {ranges})"
