"""Runs a platform's pass list. A pass is a function ``(graph, log) -> (graph, modified)`` that
never edits the graph it is given: it returns a new graph, or the same object when nothing
changed (``_engine.apply_rules`` for declarative rules, ``_engine.on_copy`` for hand-written
edits). After each pass that changed something, shapes and types are re-inferred and the new
graph verified."""

from __future__ import annotations

from typing import Callable, Sequence

from Deeploy.frontend.type_inference import infer_graph
from Deeploy.ir.graph import Graph

__all__ = ["Pass", "run_passes"]

Pass = Callable[..., tuple[Graph, bool]]  # (graph, log=None) -> (graph, modified)


def run_passes(graph: Graph, passes: Sequence[Pass], log: Callable[[str], None] | None = None) -> Graph:
    for fn in passes:
        graph, modified = fn(graph, log)
        if modified:
            graph.remove_unused()
            graph.verify()
            infer_graph(graph)
        if log:
            log(f"pass {fn.__name__}: {'modified' if modified else 'no change'}")
    return graph
