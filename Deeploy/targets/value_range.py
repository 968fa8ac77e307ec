"""Value ranges for choosing accumulator types: a constant's actual values, else its type's range."""

from __future__ import annotations

from Deeploy.ir.dtypes import INT32, INT64, DType
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops._bounds import conv_bound, magnitude, matmul_bound

__all__ = ["value_range", "max_abs", "accumulator_type", "gemm_sum_bound", "conv_sum_bound", "wide_reason"]


def value_range(graph: Graph, name: str) -> tuple[int, int]:
    """Bounds of the values tensor ``name`` can hold ((0, 0) for an absent optional input)."""
    if not name:
        return 0, 0
    t = graph.tensors[name]
    if t.is_constant:
        return (int(t.value.min()), int(t.value.max())) if t.size else (0, 0)
    if t.dtype == INT64:  # widened for its producer's proven bound: that bound is the tighter one
        bound = _produced_bound(graph, name)
        if bound is not None:
            return max(-bound, t.dtype.min), min(bound, t.dtype.max)
    return t.dtype.min, t.dtype.max


def _produced_bound(graph: Graph, name: str) -> int | None:
    """The proven bound of the node that writes ``name``, for ops whose output type follows one."""
    node = next((n for n in graph.nodes if name in n.outputs), None)
    if node is None:
        return None
    if node.op in ("Gemm", "MatMul"):
        return gemm_sum_bound(node, graph)
    if node.op == "Conv":
        return conv_sum_bound(node, graph)
    if node.op == "ReduceSum":
        return node.params.count * magnitude(graph.tensors[node.inputs[0]])
    return None


def max_abs(graph: Graph, name: str) -> int:
    lo, hi = value_range(graph, name)
    return max(-lo, hi)


def accumulator_type(bound: int) -> DType:
    """int32 when every value of magnitude <= ``bound`` fits, else int64."""
    return INT32 if bound < 2**31 else INT64


def _tensors(node: Node, graph: Graph) -> list:
    return [graph.tensors[i] if i else None for i in node.inputs]


def gemm_sum_bound(node: Node, graph: Graph) -> int:
    """Largest |alpha * A@B + beta * C| of a Gemm/MatMul node or its requantised form (whose
    params hold the GEMM's as ``base``); bounds every partial sum too."""
    p = getattr(node.params, "base", node.params)
    ins = _tensors(node, graph)
    return matmul_bound(p.alpha, p.beta, p.k, ins[0], ins[1], ins[2] if len(ins) > 2 else None)


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
