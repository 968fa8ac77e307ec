"""Constant folding: a node whose inputs are all constants, or whose output depends on its inputs'
shapes only (``Trait.SHAPE_ONLY``: Shape), is evaluated at compile time with its operator's
reference.  ``op(const...) -> const``"""

from __future__ import annotations


from Deeploy.ir.dtypes import computed, stored
from Deeploy.ir.graph import Graph
from Deeploy.ops import Trait, get_op
from Deeploy.passes._engine import on_copy

__all__ = ["fold_constants"]


@on_copy
def fold_constants(graph: Graph, log=None) -> bool:
    kept, modified = [], False
    for node in graph.nodes:
        inputs = [i for i in node.inputs if i]
        shape_only = get_op(node).has(Trait.SHAPE_ONLY)
        if inputs and (shape_only or all(graph.is_constant(i) for i in inputs)) \
                and not set(node.outputs) & set(graph.outputs):
            values = get_op(node).reference(node.params, [computed(graph.tensors[i].value, graph.tensors[i].dtype)
                                                          if graph.is_constant(i) else None for i in node.inputs])
            for name, value in zip(node.outputs, values):
                t = graph.tensors[name]
                keep = t.dtype.is_float or graph.onnx_integers   # else typed by its values
                t.set_value(stored(value, t.dtype), t.dtype if keep else None)
            modified = True
            if log:
                log(f"  fold_constants: {node!r} evaluated at compile time")
        else:
            kept.append(node)
    graph.nodes = kept
    return modified
