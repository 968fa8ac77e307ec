"""Compile-time evaluation of one node: whether it folds (``folds``) and its outputs as constants
(``fold_node``), computed with its op's reference. Inference folds as it goes; the constant
folding pass folds what the QDQ lowering left."""

from __future__ import annotations

from typing import Callable

from Deeploy.ir.dtypes import computed, stored
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import Trait, get_op

__all__ = ["folds", "fold_node"]


def folds(node: Node, graph: Graph, is_constant: Callable[[str], bool] | None = None, joints: bool = True) -> bool:
    """Whether ``node`` evaluates at compile time: a shape-only op, or all its inputs constant
    (``is_constant``, default the graph's constants); ``joints``: also a quantization joint. A
    graph output it writes becomes a constant, which ``graph_outputs`` copies into the output (a
    copy marked ``materialize``, which never folds)."""
    op = get_op(node)
    is_constant = is_constant or graph.is_constant
    inputs = [i for i in node.inputs if i]
    return bool(inputs) and (op.has(Trait.SHAPE_ONLY) or all(is_constant(i) for i in inputs)) \
        and (joints or not op.has(Trait.QDQ_JOINT)) and not node.attrs.get("materialize")


def fold_node(graph: Graph, node: Node) -> None:
    """Make ``node``'s outputs constants holding what its op's reference computes from its
    (parsed) parameters and constant inputs; the caller drops the node."""
    values = get_op(node).reference(node.params, [computed(graph.tensors[i].value, graph.tensors[i].dtype)
                                                  if i and graph.is_constant(i) else None for i in node.inputs])
    for name, value in zip(node.outputs, values):
        if name:
            t = graph.tensors[name]
            keep = t.dtype.is_float or graph.onnx_integers   # else typed by its values
            t.set_value(stored(value, t.dtype), t.dtype if keep else None)
