"""Every graph output gets storage of its own that some layer writes: an output listed a second
time, an output that is a graph input and an output that is a constant are each produced by an
Identity copy into a fresh tensor (``x -> Identity -> x_out``, marked ``materialize``: never
folded, never zero-copy). Without it, the second listing
of a tensor, or an input or constant listed as output, names an output buffer nothing writes."""

from __future__ import annotations

from Deeploy.ir.graph import Graph, Node
from Deeploy.passes._engine import on_copy

__all__ = ["copy_shared_outputs"]


@on_copy
def copy_shared_outputs(graph: Graph, log=None) -> bool:
    seen: set[str] = set(graph.inputs)
    modified = False
    for k, name in enumerate(graph.outputs):
        if name not in seen and not graph.is_constant(name):
            seen.add(name)
            continue
        t = graph.tensors[name]
        copy = graph.add_tensor(f"{name}_out{k}", t.shape, t.dtype)
        graph.nodes.append(Node(graph.fresh(f"output_copy_{k}"), "Identity", [name], [copy], {"materialize": 1}))
        graph.outputs[k] = copy
        seen.add(copy)
        modified = True
        if log:
            log(f"  copy_shared_outputs: graph output {k} ('{name}') copied into '{copy}'")
    return modified
