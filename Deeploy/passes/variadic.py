"""Variadic element-wise ops as binary nodes (the kernels take two operands):

- ``Max/Min(x)``, ``Sum(x)``, ``Mean(x)``  =>  ``Identity(x)``;
- ``Max/Min(x0, x1, ..., xn)``  =>  ``Max/Min(...Max/Min(x0, x1)..., xn)`` (n >= 2);
- ``Sum(x0, ..., xn)``  =>  ``Add(...Add(x0, x1)..., xn)``;
- ``Mean(x0, ..., xn)``  =>  ``Div(Sum(x0, ..., xn), n + 1)``, the Sum lowered as above.

Integer results are exact (the partial results' types follow from the binary ops' rules); a float
Sum or Mean rounds after each addition, within the float tolerance of the references."""

from __future__ import annotations

import numpy as np

from Deeploy.ir.graph import Graph, Node
from Deeploy.passes._engine import on_copy

__all__ = ["split_variadic"]

_BINARY = {"Max": "Max", "Min": "Min", "Sum": "Add", "Mean": "Add"}


def _splits(node: Node) -> bool:
    return node.op in _BINARY and (node.op in ("Sum", "Mean") or len([i for i in node.inputs if i]) != 2)


def _lowered(node: Node, graph: Graph) -> list[Node]:
    ins = [i for i in node.inputs if i]
    y = node.outputs[0]
    if len(ins) == 1:
        return [Node(node.name, "Identity", ins, [y])]
    nodes, acc = [], ins[0]
    for k, x in enumerate(ins[1:], start=1):
        last = k == len(ins) - 1 and node.op != "Mean"
        out = y if last else graph.add_tensor(f"{y}_part{k}")
        nodes.append(Node(node.name if last else graph.fresh(f"{node.name}_part{k}"), _BINARY[node.op], [acc, x], [out]))
        acc = out
    if node.op == "Mean":
        count = graph.add_constant(f"{node.name}_count", np.array(len(ins), dtype=graph.tensors[y].dtype.numpy))
        nodes.append(Node(node.name, "Div", [acc, count], [y]))
    return nodes


@on_copy
def split_variadic(graph: Graph, log=None) -> bool:
    nodes, modified = [], False
    for node in graph.nodes:
        if not _splits(node):
            nodes.append(node)
            continue
        lowered = _lowered(node, graph)
        nodes += lowered
        modified = True
        if log:
            log(f"  variadic: {node!r} => {', '.join(n.op for n in lowered)}")
    graph.nodes = nodes
    return modified
