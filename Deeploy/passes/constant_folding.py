"""Constant folding: a node whose inputs are all constants, or whose output depends on its inputs'
shapes only (``Trait.SHAPE_ONLY``: Shape), is evaluated at compile time with its operator's
reference.  ``op(const...) -> const``

The frontend's inference already folds every such node except the quantization joints
(``Trait.QDQ_JOINT``), which the QDQ lowering reads on their constants: so the ops that take
parameter inputs (a Reshape's shape, a Clip's min and max) see constants wherever these come from
a constant subgraph. The pass folds what the lowering left."""

from __future__ import annotations

from Deeploy.ir.graph import Graph
from Deeploy.ops.folding import fold_node, folds
from Deeploy.passes._engine import on_copy

__all__ = ["fold_constants"]


@on_copy
def fold_constants(graph: Graph, log=None) -> bool:
    kept, modified = [], False
    for node in graph.nodes:
        if folds(node, graph):
            fold_node(graph, node)
            modified = True
            if log:
                log(f"  fold_constants: {node!r} evaluated at compile time")
        else:
            kept.append(node)
    graph.nodes = kept
    return modified
