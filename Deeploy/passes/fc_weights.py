"""Fully connected layers with their weights stored per output: ``MatMul(x [1, K], W [K, N])``
with constant W ``=>  Gemm(x, W^T, transB=1)``, so that each output is a dot product of two
contiguous vectors (the same sums; a target whose kernels read rows of B faster uses it)."""

from __future__ import annotations

import numpy as np

from Deeploy.ir.graph import Graph, Node
from Deeploy.passes._engine import Rule, RuleSet, apply_rules, chain

__all__ = ["transpose_fc_weights", "FC_WEIGHTS"]


def _one_row(graph: Graph, matched: list[Node]) -> str | None:
    node = matched[0]
    x, w = (graph.tensors[name] for name in node.inputs[:2])
    if not graph.is_constant(w.name) or w.shape is None or len(w.shape) != 2:
        return "the weights are not a constant matrix"
    if x.shape is None or len(x.shape) != 2 or x.shape[0] != 1:
        return "the input is not one row"
    return None


def _transposed(graph: Graph, matched: list[Node]) -> list[Node]:
    node = matched[0]
    w = graph.tensors[node.inputs[1]]
    wt = graph.add_constant(f"{node.name}.weight_t", np.ascontiguousarray(np.asarray(w.value).T))
    return [Node(node.name, "Gemm", [node.inputs[0], wt], node.outputs, {"transB": 1}, "")]


FC_WEIGHTS = RuleSet("fc_weights", (Rule("matmul_one_row", chain("MatMul"), _one_row, _transposed),))


def transpose_fc_weights(graph: Graph, log=None) -> tuple[Graph, bool]:
    return apply_rules(graph, FC_WEIGHTS, log)
