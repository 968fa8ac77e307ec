"""Graph interpreter over the operators' numpy references: the oracle used to make golden
outputs and to check every compiler stage (bit-exact for integer tensors; float tensors are
computed in float32, bfloat16 ones rounded to bfloat16 after each op)."""

from __future__ import annotations

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import computed, stored
from Deeploy.ir.graph import Graph
from Deeploy.ops import get_op

__all__ = ["run_reference"]


def run_reference(graph: Graph, inputs: dict[str, np.ndarray], keep_all: bool = False
                  ) -> dict[str, np.ndarray]:
    """Evaluate an inferred graph on ``inputs``; returns the graph outputs (or every tensor with
    ``keep_all``): int64 arrays for integer tensors, float32 for float ones. Each integer value
    is checked against the type its tensor was given."""
    values = {t.name: computed(t.value, t.dtype) for t in graph.tensors.values() if t.is_constant}
    values.update({k: stored(computed(v, graph.tensors[k].dtype), graph.tensors[k].dtype) for k, v in inputs.items()})
    for node in graph.nodes:
        ins = [values[i] if i else None for i in node.inputs]
        outs = get_op(node).reference(node.params, ins)
        for name, value in zip(node.outputs, outs):
            if not name:
                continue
            t = graph.tensors[name]
            value = stored(value, t.dtype)
            if tuple(value.shape) != tuple(t.shape):
                raise OpError(node, f"reference produced shape {list(value.shape)} for '{name}', "
                              f"inferred {list(t.shape)}")
            if value.size and t.dtype.is_integer and (value.min() < t.dtype.min or value.max() > t.dtype.max):
                raise OpError(node, f"output '{name}' holds [{value.min()}, {value.max()}], beyond "
                              f"its type {t.dtype}")
            values[name] = value
    return values if keep_all else {o: values[o] for o in graph.outputs}
