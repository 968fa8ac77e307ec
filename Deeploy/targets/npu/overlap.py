"""The execution order that lets the cluster work while the NPU runs: a list schedule of the
graph that runs what the next NPU job layer needs first and, once the job is started, the nodes
that do not read it, before its first reader. The tiler then leaves such a layer's jobs in flight
over those nodes (``tiling/overlap.py``). Nodes move only within their region iteration (or among nodes of no
region), so iterations keep one body order."""

from __future__ import annotations

import heapq

from Deeploy.ir.graph import Graph, Node
from Deeploy.ir.region import Region

__all__ = ["overlap_order", "reordered"]


def _groups(graph: Graph) -> dict[str, tuple[int, int]]:
    """Each region node's (region, iteration)."""
    return {name: (r, i) for r, region in enumerate(graph.regions)
            for i, instance in enumerate(region.instances) for name in instance}


def overlap_order(graph: Graph, job_op: str) -> list[Node]:
    """The nodes of ``graph`` (in a topological order) reordered by a list schedule. While a
    ``job_op`` node is in flight, the first ready node (by graph position) that is not a job and
    does not read the job in flight runs next; with none, the job is waited for. With no job in
    flight, the first ready node the next job needs (itself or an ancestor) runs, so that the work
    it does not need is left for its flight. Without jobs the order is the graph's."""
    nodes = graph.nodes
    writer = {o: k for k, n in enumerate(nodes) for o in n.outputs if o}
    preds = [{writer[i] for i in n.inputs if i in writer} for n in nodes]
    readers: dict[int, list[int]] = {}
    for k, ps in enumerate(preds):
        for p in ps:
            readers.setdefault(p, []).append(k)
    waiting = [len(ps) for ps in preds]
    jobs = [k for k, n in enumerate(nodes) if n.op == job_op]
    group = _groups(graph)
    ready = [k for k, w in enumerate(waiting) if w == 0]
    heapq.heapify(ready)
    order: list[Node] = []
    done: set[int] = set()
    in_flight: int | None = None
    blocked: set[int] = set()      # the readers of the job in flight

    cache: dict[int, set[int]] = {}

    def needed() -> set[int]:
        """The next job and its ancestors (those run included: ``ready`` holds none of them)."""
        job = next((j for j in jobs if j not in done), None)
        if job is None:
            return set()
        if job not in cache:
            found, todo = set(), [job]
            while todo:
                k = todo.pop()
                if k not in found and k not in done:
                    found.add(k)
                    todo.extend(preds[k])
            cache.clear()
            cache[job] = found
        return cache[job]

    def pick() -> int | None:
        if in_flight is None:
            need = needed()
            return min((k for k in ready if k in need), default=ready[0])
        key = group.get(nodes[in_flight].name)
        free = [k for k in ready if k not in blocked and nodes[k].op != job_op and group.get(nodes[k].name) == key]
        return min(free) if free else None

    while ready:
        k = pick()
        if k is None:
            in_flight, blocked = None, set()
            continue
        if k == ready[0]:
            heapq.heappop(ready)
        else:
            ready.remove(k)
            heapq.heapify(ready)
        order.append(nodes[k])
        done.add(k)
        if nodes[k].op == job_op:
            in_flight, blocked = k, set(readers.get(k, ()))
        for r in readers.get(k, ()):
            waiting[r] -= 1
            if waiting[r] == 0:
                heapq.heappush(ready, r)
    return order


def reordered(graph: Graph, job_op: str) -> Graph:
    """``graph`` (edited in place) in the overlap order, its regions' instances in the new order;
    unchanged when the new order would give iterations different body orders."""
    order = overlap_order(graph, job_op)
    if [id(n) for n in order] == [id(n) for n in graph.nodes]:
        return graph
    at = {n.name: k for k, n in enumerate(order)}
    regions = []
    for r in graph.regions:
        perm = sorted(range(r.body_size), key=lambda p: at[r.instances[0][p]])
        regions.append(Region(r.name, tuple(tuple(inst[p] for p in perm) for inst in r.instances),
                              tuple(r.values_at(p) for p in perm) if r.values else ()))
    old_nodes, old_regions = graph.nodes, graph.regions
    graph.nodes, graph.regions = order, regions
    if any(r.mismatch(graph) is not None for r in regions):
        graph.nodes, graph.regions = old_nodes, old_regions
    return graph
