"""Float reductions over several axes with too few outputs to share among cores, in two stages:

- ``ReduceX(x, axes)  =>  ReduceX(ReduceX(x, [last of axes], keepdims=1), axes)`` for float
  reductions that allow it (``Trait.TWO_STAGE``: ReduceMean and ReduceSum; a mean of
  equal-sized group means is the mean).

The first stage has many outputs (the cores split them) and a short reduced extent (its tiles
fit a small L1); the second reduces what is left (the last axis is then of size 1). Each output
is still summed in one fixed order, whatever the number of cores. Integer means are left alone:
a rounded mean of rounded means is not the rounded mean.
"""

from __future__ import annotations

from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import Trait, ops_with
from Deeploy.passes._engine import on_copy

__all__ = ["split_float_reductions", "FEW_OUTPUTS"]

FEW_OUTPUTS = 8   # a reduction with fewer outputs than this leaves cores idle


def _splits(node: Node, graph: Graph) -> bool:
    if node.op not in ops_with(Trait.TWO_STAGE) or not node.inputs or not node.inputs[0]:
        return False
    x, y = graph.tensors[node.inputs[0]], graph.tensors[node.outputs[0]]
    if x.dtype is None or not x.dtype.is_float or x.shape is None or y.shape is None:
        return False
    axes = [a for a in node.params.axes if x.shape[a] > 1]
    return len(axes) > 1 and y.size < FEW_OUTPUTS


@on_copy
def split_float_reductions(graph: Graph, log=None) -> bool:
    nodes, modified = [], False
    for node in graph.nodes:
        if not _splits(node, graph):
            nodes.append(node)
            continue
        axes = [int(a) for a in node.params.axes]
        last = max(a for a in axes if graph.tensors[node.inputs[0]].shape[a] > 1)
        part = graph.add_tensor(f"{node.outputs[0]}_part")
        nodes += [
            Node(graph.fresh(f"{node.name}_part"), node.op, [node.inputs[0]], [part], {"axes": [last], "keepdims": 1}),
            Node(node.name, node.op, [part], node.outputs, {"axes": axes, "keepdims": int(node.params.keepdims)}),
        ]
        modified = True
        if log:
            log(f"  reductions: {node!r} reduces axis {last} first")
    graph.nodes = nodes
    return modified
