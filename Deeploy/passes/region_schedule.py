"""Prepare regions to run as a loop over one body (``codegen/rolled.py``).

``schedule_regions``: each region's iterations become consecutive blocks of the execution order:
the nodes outside the region that it depends on run before it, the iterations (in body order)
next, everything else after, each part in its former order. A region whose outside dependencies
themselves depend on the region (work interleaved between iterations) keeps its order.
``stack_types``: the per-iteration constants of a body input get their common element type
(``BodyInput.dtype``), so every iteration binds the same kernel variant; values are unchanged and
the nodes are parsed again (parameters may follow a constant's type)."""

from __future__ import annotations

from Deeploy.frontend.type_inference import infer_graph
from Deeploy.ir.dtypes import widest
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ir.region import InputKind, Region, body_inputs

__all__ = ["schedule_regions", "stack_types"]


def _ancestors(nodes: list[Node], members: set[str]) -> set[str]:
    """Names of the nodes that some member reads from, directly or not."""
    producer = {o: n for n in nodes for o in n.outputs if o}
    seen: set[str] = set()
    stack = [n for n in nodes if n.name in members]
    while stack:
        for name in stack.pop().inputs:
            p = producer.get(name)
            if p is not None and p.name not in seen:
                seen.add(p.name)
                stack.append(p)
    return seen


def _order(nodes: list[Node], region: Region) -> list[Node] | None:
    members = region.node_names()
    by_name = {n.name: n for n in nodes}
    before = _ancestors(nodes, members) - members
    order = [n for n in nodes if n.name in before]
    order += [by_name[name] for inst in region.instances for name in inst]
    order += [n for n in nodes if n.name not in before and n.name not in members]
    done: set[str] = set()
    producer = {o: n.name for n in nodes for o in n.outputs if o}
    for n in order:   # still a valid execution order (iterations in body order)
        if any(i in producer and producer[i] not in done for i in n.inputs if i):
            return None
        done.add(n.name)
    return order


def schedule_regions(graph: Graph) -> Graph:
    """``graph`` itself when every region already runs as consecutive blocks (or cannot), else a
    copy with the nodes reordered."""
    nodes = list(graph.nodes)
    for region in graph.regions:
        at = {n.name: k for k, n in enumerate(nodes)}
        start = at[region.instances[0][0]]
        flat = [name for inst in region.instances for name in inst]
        if [at[name] for name in flat] == list(range(start, start + len(flat))):
            continue
        order = _order(nodes, region)
        if order is not None:
            nodes = order
    if [n.name for n in nodes] == [n.name for n in graph.nodes]:
        return graph
    out = graph.copy()
    by_name = {n.name: n for n in out.nodes}
    out.nodes = [by_name[n.name] for n in nodes]
    out.verify()
    return out


def stack_types(graph: Graph) -> Graph:
    """``graph`` itself when every per-iteration constant already has its body input's common
    type, else a copy where they do (a constant read by several body inputs takes the widest of
    their types, and the others widen with it until all agree)."""
    out = graph
    while True:
        retype: dict[str, object] = {}
        for region in out.regions:
            for b in body_inputs(out, region):
                if b.kind != InputKind.PER_ITERATION:
                    continue
                for t in b.tensors:
                    if out.tensors[t].is_constant:
                        retype[t] = widest(retype.get(t, b.dtype), b.dtype)
        retype = {t: d for t, d in retype.items() if out.tensors[t].dtype != d}
        if not retype:
            return out
        out = out.copy() if out is graph else out
        for name, dtype in retype.items():
            t = out.tensors[name]
            out.tensors[name] = Tensor(name, t.shape, dtype, t.value.astype(dtype.numpy))
        infer_graph(out)   # the nodes' parameters may follow their constants' types (an NPU's scale width)
        if any(t.dtype != graph.tensors[t.name].dtype for t in out.tensors.values() if not t.is_constant
               and t.name in graph.tensors):
            return graph   # the activations would change type: the iterations keep their own kernels
