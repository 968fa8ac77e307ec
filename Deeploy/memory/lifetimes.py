"""Buffer lifetimes: which tensors share storage (zero-copy views) and the span of steps
during which each storage must hold its value."""

from __future__ import annotations

from dataclasses import dataclass

from Deeploy.ir.graph import Graph
from Deeploy.ops import get_op

__all__ = ["Interval", "alias_roots", "lifetimes"]


@dataclass(frozen=True)
class Interval:
    """A buffer of ``size`` bytes live from step ``first`` to step ``last`` (inclusive)."""

    name: str
    size: int
    first: int
    last: int

    def overlaps(self, other: "Interval") -> bool:
        return self.first <= other.last and other.first <= self.last


def alias_roots(graph: Graph) -> dict[str, str]:
    """Tensor -> tensor whose storage it reuses. A view becomes zero-copy unless its output is
    a graph output (which owns a dedicated buffer), its input is stored in the program (a constant
    or a variable), or the node is marked
    ``materialize`` (a copy into the arena, e.g. a region's entry: ``passes/region_entry.py``)."""
    root: dict[str, str] = {}
    outputs = set(graph.outputs)
    for node in graph.nodes:
        src, dst = node.inputs[0] if node.inputs else "", node.outputs[0]
        if get_op(node).alias and dst not in outputs and src and not graph.tensors[src].is_constant \
                and not node.attrs.get("materialize"):
            root[dst] = root.get(src, src)
    return root


def lifetimes(graph: Graph, sizes: dict[str, int], roots: dict[str, str]) -> list[Interval]:
    """Live intervals of the storages named in ``sizes`` (root tensors), in node steps; a
    variable's next value lives to the end of the run, where the variable takes it."""
    first: dict[str, int] = {}
    last: dict[str, int] = {roots.get(n, n): len(graph.nodes) - 1 for n in graph.state.values()}
    for step, node in enumerate(graph.nodes):
        for name in node.outputs:
            r = roots.get(name, name)
            if r in sizes:
                first.setdefault(r, step)
                last[r] = max(last.get(r, step), step)
        for name in node.inputs:
            r = roots.get(name, name)
            if r in sizes:
                last[r] = max(last.get(r, step), step)
    return [Interval(name, sizes[name], first.get(name, 0), last.get(name, first.get(name, 0)))
            for name in sizes]
