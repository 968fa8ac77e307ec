"""Memory planning of rolled regions: one arena layout for every iteration of a region's body.

A region whose iterations run as consecutive blocks of layers (``Span``) is planned on a folded
timeline where the N iterations collapse onto the steps of one: a buffer produced at the same body
position in every iteration is one *family*, and the members of a family whose lifetimes do not
overlap share one placement (body-internal tensors: one buffer; a carried activation whose
previous value is dead before the new one is written: one buffer; otherwise two alternating
ones). Two buffers live at the same real step are live at the same folded step, so placements
that do not overlap on the folded timeline never overlap in real time."""

from __future__ import annotations

from dataclasses import dataclass

from Deeploy.ir.graph import Graph
from Deeploy.memory.lifetimes import Interval

__all__ = ["Span", "region_spans", "place_folded"]


@dataclass(frozen=True)
class Span:
    """Region ``name`` runs ``iterations`` consecutive blocks of ``body`` layers from step ``start``."""

    name: str
    start: int
    body: int
    iterations: int

    @property
    def end(self) -> int:
        return self.start + self.body * self.iterations

    def locate(self, step: int) -> tuple[int, int] | None:
        """(iteration, body position) of a step inside the span, else None."""
        if not self.start <= step < self.end:
            return None
        return divmod(step - self.start, self.body)


def region_spans(graph: Graph) -> tuple[list[Span], list[str]]:
    """The spans of the graph's regions whose iterations are consecutive blocks of the schedule,
    and, for the others, why they are not rolled."""
    at = {n.name: k for k, n in enumerate(graph.nodes)}
    spans, notes = [], []
    for region in graph.regions:
        if region.iterations < 2 or region.body_size < 1:
            notes.append(f"region '{region.name}' is not rolled: it has fewer than 2 iterations")
            continue
        start, body = at[region.instances[0][0]], region.body_size
        if any(at[name] != start + i * body + pos for i, inst in enumerate(region.instances)
               for pos, name in enumerate(inst)):
            notes.append(f"region '{region.name}' is not rolled: its iterations are not consecutive blocks "
                         f"of the schedule")
            continue
        spans.append(Span(region.name, start, body, region.iterations))
    return sorted(spans, key=lambda s: s.start), notes


def _fold(step: int, spans: list[Span]) -> int:
    for s in reversed(spans):   # later spans first: folding one shifts only the steps after it
        if s.start <= step < s.end:
            step = s.start + (step - s.start) % s.body
        elif step >= s.end:
            step -= s.body * (s.iterations - 1)
    return step


def _hull(ivs: list[Interval], spans: list[Span]) -> tuple[int, int]:
    folded = [_fold(step, spans) for iv in ivs for step in range(iv.first, iv.last + 1)]
    return min(folded), max(folded)


def place_folded(intervals: list[Interval], keys: list[tuple | None], spans: list[Span], place
                 ) -> tuple[list[int], int]:
    """Offsets of ``intervals`` (real steps) placed by ``place(intervals) -> (offsets, total)`` on
    the folded timeline: intervals with the same key (a family) share a placement where their
    lifetimes allow, every other interval is placed alone."""
    groups: list[list[int]] = []
    open_groups: dict[tuple, list[list[int]]] = {}
    for k in sorted(range(len(intervals)), key=lambda k: intervals[k].first):
        key = keys[k]
        if key is None:
            groups.append([k])
            continue
        family = open_groups.setdefault(key, [])
        for members in family:   # the first buffer of the family free again
            if intervals[members[-1]].last < intervals[k].first:
                members.append(k)
                break
        else:
            family.append([k])
            groups.append(family[-1])
    folded = []
    for members in groups:
        first, last = _hull([intervals[k] for k in members], spans)
        size = max(intervals[k].size for k in members)
        folded.append(Interval(intervals[members[0]].name, size, first, last))
    group_offsets, total = place(folded)
    offsets = [0] * len(intervals)
    for members, offset in zip(groups, group_offsets):
        for k in members:
            offsets[k] = offset
    return offsets, total
