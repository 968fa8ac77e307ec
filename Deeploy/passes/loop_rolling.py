"""Loop rolling, discovery: find blocks of the graph that run N times and record them as
``Region``s (``Deeploy/ir/region.py``). The graph itself is not changed.

Automatic discovery (``--loop-rolling``) looks for maximal *tandem repeats* in the execution
order: every node gets the id of its structural signature (op, attributes, shapes, dtypes;
``node_signature``), and for every period p the positions where ``sig[i] == sig[i + p]`` form
runs; a run of length >= p is a block of p nodes repeated at least twice. Runs are taken
greedily by the nodes they cover (ties: the shorter body, i.e. more iterations), trimmed to the
nodes no earlier region took, placed at the phase that cuts the fewest tensors between
iterations (then the one taking fewest nodes other runs want), and kept only if
``Region.mismatch`` accepts the wiring (else with fewer iterations) and something is carried
from one iteration to the next. This is done on two depth-first orders and the execution order
(whose levels may interleave the layers); the best cover wins. ``--loop-body-hierarchy`` (``loop_hierarchy.py``) names bodies by module path instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from Deeploy.ir.graph import Graph
from Deeploy.ir.region import InputKind, Region, body_attributes, body_inputs, node_signature
from Deeploy.passes.loop_hierarchy import hierarchy_region
from Deeploy.passes.region_body import body_region, dfs_order, value_attrs
from Deeploy.passes.region_schedule import schedule_regions, stack_types

__all__ = ["LoopRolling", "find_repeats", "roll_loops", "describe_region"]


@dataclass(frozen=True)
class LoopRolling:
    """What the user asked for: automatic discovery and/or bodies named by module path
    (each ``(group, body)``, e.g. ``("encoder", "encoder.layer.0")``)."""

    auto: bool = False
    hierarchies: tuple[tuple[str, ...], ...] = ()

    @property
    def enabled(self) -> bool:
        return self.auto or bool(self.hierarchies)


def _runs(sig: np.ndarray, min_body: int) -> list[tuple[int, int, int]]:
    """(covered nodes, period, start, span) of every tandem repeat with at least 2 copies."""
    n, found = len(sig), []
    for p in range(min_body, n // 2 + 1):
        eq = np.concatenate(([0], (sig[:-p] == sig[p:]).view(np.int8), [0]))
        d = np.diff(eq)
        starts, ends = np.flatnonzero(d == 1), np.flatnonzero(d == -1)
        for a, length in zip(starts, ends - starts):
            if length >= p:
                span = int(length) + p
                found.append((span // p * p, p, int(a), span))
    found.sort(key=lambda c: (-c[0], c[1], c[2]))
    return found


def _free_span(start: int, span: int, taken: np.ndarray) -> tuple[int, int]:
    """The longest stretch of [start, start + span) no region has taken."""
    best, run_start = (start, 0), None
    for i in range(start, start + span + 1):
        free = i < start + span and not taken[i]
        if free and run_start is None:
            run_start = i
        elif not free and run_start is not None:
            if i - run_start > best[1]:
                best = (run_start, i - run_start)
            run_start = None
    return best


def _cut(order: list, start: int, p: int, producer_at: dict[str, int]) -> int:
    """Tensors iteration 1 (``order[start + p:start + 2p]``) reads from iteration 0."""
    read = {i for n in order[start + p:start + 2 * p] for i in n.inputs if i}
    return sum(1 for t in read if start <= producer_at.get(t, -1) < start + p)


def _verified(graph: Graph, order: list, start: int, p: int, copies: int) -> Region | None:
    """The region of ``copies`` iterations from ``start`` that ``Region.mismatch`` accepts and
    that carries something from one iteration to the next, trying fewer iterations when a later
    one is wired differently; None if not even 2 are alike."""
    for c in range(copies, 1, -1):
        region = body_region("", [order[start + k * p:start + (k + 1) * p] for k in range(c)])
        if region.mismatch(graph) is None:
            return region if any(b.kind == InputKind.CARRIED for b in body_inputs(graph, region)) else None
    return None


def _repeats_in(graph: Graph, order: list, exclude: set[str], min_body: int) -> list[tuple[int, Region]]:
    ids: dict[tuple, int] = {}
    sig = np.array([ids.setdefault(node_signature(graph, n, value_attrs(n)), len(ids)) for n in order], dtype=np.int64)
    taken = np.array([n.name in exclude for n in order], dtype=bool)
    producer_at = {o: i for i, n in enumerate(order) for o in n.outputs}
    runs = _runs(sig, min_body)
    others = np.array([(a, a + span, covered, p) for covered, p, a, span in runs], dtype=np.int64).reshape(-1, 4)

    def wanted(lo: int, hi: int, p: int) -> int:
        """How much runs of other periods want the nodes [lo, hi) (their cover x the overlap)."""
        mine = others[others[:, 3] != p]
        overlap = np.clip(np.minimum(mine[:, 1], hi) - np.maximum(mine[:, 0], lo), 0, None)
        return int(np.sum(overlap * mine[:, 2]))

    chosen: list[tuple[int, Region]] = []
    for covered, p, a, span in runs:
        if taken[a:a + span].all():
            continue
        start, length = _free_span(a, span, taken)
        copies = length // p
        if copies < 2:
            continue
        # the phase cutting the fewest tensors between iterations; then the one leaving free the
        # nodes other runs want most (a block's last node may match the one before the stack)
        phases = sorted(range(length - copies * p + 1), key=lambda f: (
            _cut(order, start + f, p, producer_at), wanted(start + f, start + f + copies * p, p), f))
        for f in phases[:4]:
            region = _verified(graph, order, start + f, p, copies)
            if region is not None:
                chosen.append((start + f, region))
                taken[start + f:start + f + region.iterations * p] = True
                break
    return chosen


def find_repeats(graph: Graph, *, exclude: set[str] = frozenset(), min_body: int = 1,
                 prefix: str = "loop") -> list[Region]:
    """Regions of maximal runs of structurally identical consecutive blocks (>= 2 iterations,
    something carried from one to the next) among the nodes not in ``exclude``, named
    ``<prefix><k>`` in the order they start. Looked for in the execution order and in two
    depth-first orders; the one covering most nodes wins."""
    if len(graph.nodes) < 2:
        return []
    best: list[tuple[int, Region]] = []
    for order in (dfs_order(graph, False), dfs_order(graph, True), list(graph.nodes)):
        found = _repeats_in(graph, order, exclude, min_body)
        score = lambda regions: (sum(r.iterations * r.body_size for _, r in regions), -len(regions))
        if score(found) > score(best):
            best = found
    best.sort(key=lambda c: c[0])
    return [replace(region, name=f"{prefix}{k}") for k, (_, region) in enumerate(best)]


def describe_region(graph: Graph, region: Region, detail: bool = False) -> list[str]:
    """One line: body size, iterations, and the body inputs by kind (per-iteration ones stacked
    ``[N, ...]``); with ``detail`` a further line per body input."""
    inputs, attrs = body_inputs(graph, region), body_attributes(graph, region)
    by_node = {n.name: n for n in graph.nodes}
    count = {kind: sum(1 for b in inputs if b.kind == kind) for kind in InputKind}
    constants = [b for b in inputs if b.kind == InputKind.PER_ITERATION and graph.tensors[b.tensors[0]].is_constant]
    stacked = sum(graph.tensors[t].nbytes for b in constants for t in b.tensors)
    others = count[InputKind.PER_ITERATION] - len(constants)
    first = region.instances[0]
    lines = [f"loop region '{region.name}': {region.iterations} iterations of a {region.body_size}-node body "
             f"('{first[0]}' .. '{first[-1]}'); body inputs: {count[InputKind.CARRIED]} carried, "
             f"{count[InputKind.INVARIANT]} invariant, {count[InputKind.PER_ITERATION]} per-iteration "
             f"({len(constants)} constants, {stacked} B over the iterations"
             + (f"; {others} graph inputs" if others else "") + ")"
             + (f", {len(attrs)} per-iteration attributes" if attrs else "")]
    if detail:
        for b in inputs:
            node = by_node[first[b.position]]
            t = graph.tensors[b.tensors[0]]
            shape = (region.iterations, *t.shape) if b.kind == InputKind.PER_ITERATION else t.shape
            lines.append(f"  {region.name} body {b.position} '{node.name}' ({node.op}) input {b.slot}: "
                         f"{b.kind.value} {list(shape)} {b.dtype} ('{b.tensors[0]}'"
                         f"{', ...' if len(set(b.tensors)) > 1 else ''})")
        for (k, attr), values in attrs.items():
            node = by_node[first[k]]
            lines.append(f"  {region.name} body {k} '{node.name}' ({node.op}) attribute {attr}: per_iteration "
                         f"{[v.tolist() if hasattr(v, 'tolist') else v for v in values]}")
    return lines


def roll_loops(graph: Graph, options: LoopRolling | None, log: Callable[[str], None] | None = None
               ) -> tuple[Graph, list[str]]:
    """A copy of ``graph`` with the regions ``options`` ask for (bodies named by module path
    first, then automatic discovery among the other nodes), scheduled and typed to run as loops
    (``region_schedule``), and one report line per region.
    ``graph`` itself comes back when nothing is asked for."""
    if options is None or not options.enabled:
        return graph, []
    work = graph.copy()
    regions = list(work.regions)
    for spec in options.hierarchies:
        claimed = {name for r in regions for name in r.node_names()}
        regions.append(hierarchy_region(work, spec, claimed))
    if options.auto:
        claimed = {name for r in regions for name in r.node_names()}
        regions += find_repeats(work, exclude=claimed, prefix="loop")
    work.regions = regions
    work.verify()
    work = stack_types(schedule_regions(work))   # each region can run as a loop over one body
    notes = []
    for region in regions:
        lines = describe_region(work, region, detail=log is not None)
        notes.append(lines[0])
        for line in lines[1:]:
            log(line)
    if options.auto and not regions:
        notes.append("--loop-rolling: no block repeats (no two consecutive structurally identical blocks)")
    return work, notes
