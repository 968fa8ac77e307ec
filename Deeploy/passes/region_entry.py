"""A region's entry copied into an activation: when the graph inputs live in another memory level
than the activations (data in L3), a region whose first iteration reads a graph input where later
iterations read the previous iteration's activation would need code of its own for that
iteration (tiles staged from L3). The input is first copied by an Identity just before the
region, and the first iteration reads the copy, so every iteration reads the arena alike and
the whole region runs as one loop."""

from __future__ import annotations

from Deeploy.frontend.type_inference import infer_graph
from Deeploy.ir.graph import Graph, Node
from Deeploy.ir.region import InputKind, body_inputs

__all__ = ["copy_region_entries"]


def copy_region_entries(graph: Graph, log=None) -> list[str]:
    """Inserts the copies (changes ``graph``); returns the graph inputs copied."""
    inputs, copied = set(graph.inputs), []
    for region in graph.regions:
        entries = sorted({b.tensors[0] for b in body_inputs(graph, region)
                          if b.kind == InputKind.CARRIED and b.tensors[0] in inputs})
        first = set(region.instances[0])
        at = next(k for k, n in enumerate(graph.nodes) if n.name in first)
        for name in entries:
            t = graph.tensors[name]
            copy = graph.add_tensor(f"{name}_entry", t.shape, t.dtype)
            node_name = graph.fresh(f"{region.name}_entry_copy")
            for node in graph.nodes:
                if node.name in first:
                    node.inputs = [copy if x == name else x for x in node.inputs]
            graph.nodes.insert(at, Node(node_name, "Identity", [name], [copy], {"materialize": 1}))
            copied.append(name)
            if log:
                log(f"  region '{region.name}': its entry, graph input '{name}', copied into the arena first")
    if copied:
        infer_graph(graph)
    return copied
