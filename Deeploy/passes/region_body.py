"""What the passes that find regions share: a region of given iterations, with the value
attributes of its body's ops, and a body order that keeps a layer's nodes together."""

from __future__ import annotations

from Deeploy.ir.graph import Graph, Node
from Deeploy.ir.region import Region
from Deeploy.ops import registered_ops

__all__ = ["value_attrs", "body_region", "dfs_order"]


def value_attrs(node: Node) -> frozenset[str]:
    """The node's attributes that are numbers its kernel computes with (``OpDef.value_attrs``):
    they may differ between iterations."""
    op = registered_ops().get(node.op)
    return op.value_attrs if op is not None else frozenset()   # unknown op: every attribute is structure


def body_region(name: str, iterations: list[list[Node]]) -> Region:
    """The region of these iterations (nodes in body order), its body's value attributes given."""
    return Region(name, tuple(tuple(n.name for n in nodes) for nodes in iterations),
                  tuple(value_attrs(n) for n in iterations[0]) if iterations else ())


def dfs_order(graph: Graph, reverse_slots: bool) -> list:
    """A topological order that keeps a layer's nodes together whatever the schedule: post-order
    depth-first from the graph outputs, each node's producers visited in input-slot order (or
    reversed), so every layer of a stack is walked the same way. Values computed from the graph
    inputs alone that several nodes share (a mask every layer reads) come first, not inside the
    first layer that reads them."""
    producers, consumers = graph.producers(), graph.consumers()
    static: set[str] = set()   # tensors computed from graph inputs and constants alone
    for n in graph.nodes:
        if all(not i or i in static or i in graph.inputs or graph.is_constant(i) for i in n.inputs):
            static.update(n.outputs)
    shared = [n for n in graph.nodes if any(o in static and len(consumers.get(o, [])) > 1 for o in n.outputs)]
    roots = shared + [producers[o] for o in graph.outputs if o in producers] + list(graph.nodes)
    order, done = [], set()
    for root in roots:
        stack = [(root, False)]
        while stack:
            node, expanded = stack.pop()
            if id(node) in done:
                continue
            if expanded:
                done.add(id(node))
                order.append(node)
                continue
            stack.append((node, True))
            inputs = node.inputs if reverse_slots else node.inputs[::-1]   # the stack pops the last first
            stack.extend((producers[i], False) for i in inputs if i in producers and id(producers[i]) not in done)
    return order
