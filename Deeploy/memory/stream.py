"""Weight streaming of a region: the per-iteration constants of its body that live in a level
other than the arena's (L3) are stored as one block per iteration (``[N, slot]`` bytes) and
copied into one of two slots of a double buffer in the arena while the previous iteration runs:
iteration j reads its parameters from slot j % 2, so the arena holds two iterations' parameters,
not N. The body's layers see them as arena data (``BufferKind.STREAMED`` placements). A slot is
laid out in the order the body reads its parameters, in chunks per body position.

The copy engine's queue is shared with the tile loops' own transfers, which a streamed copy ahead
of them delays by its length, so copies are issued in pieces spread over the body positions:
- iteration j + 1's slot, while iteration j runs: about equal pieces, one per position;
- the first iteration's slot, which nothing runs before: at each position the bytes the next
  position reads first that are not yet on their way, and at least an even share of the slot so
  far; pieces are cut at the chunk ends, and each position waits for the piece that ends its
  chunk (a position waits only for its own parameters, not for the whole slot)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.ir.graph import Graph
from Deeploy.ir.region import InputKind, body_inputs
from Deeploy.memory.fold import Span

__all__ = ["Stream", "first_pieces", "spread", "stream_candidates"]

_ALIGN = 16


@dataclass(frozen=True)
class Stream:
    """Region ``span``'s streamed parameters: iteration j's ``members[j]`` (tensor, offset in the
    slot) stored at ``j * slot`` of one block in ``level``; the double buffer is ``2 * slot``
    bytes at ``offset`` of the arena, or of the stream buffer of level ``into``."""

    span: Span
    slot: int
    members: tuple[tuple[tuple[str, int], ...], ...]
    level: str
    offset: int = 0
    into: str = ""      # the level of the double buffer when not the arena's (an engine's weight memory)
    chunks: tuple[tuple[int, int, int], ...] = ()   # (body position, start, end): what it reads first
    pieces: tuple[tuple[int, int, int], ...] = ()   # (body position, start, end): the next iteration's copies
    first: tuple[tuple[int, int, int], ...] = ()    # (body position, start, end): the first iteration's copies

    def block(self, graph: Graph) -> np.ndarray:
        """The stored bytes: iteration after iteration, each member at its offset."""
        out = np.zeros(self.span.iterations * self.slot, dtype=np.uint8)
        for j, members in enumerate(self.members):
            for name, off in members:
                raw = np.ascontiguousarray(graph.tensors[name].value).view(np.uint8).reshape(-1)
                out[j * self.slot + off: j * self.slot + off + raw.size] = raw
        return out


def stream_candidates(graph: Graph, spans: list[Span], levels: dict[str, str], arena_level: str,
                      into: dict[str, tuple[str, int] | None] | None = None) -> list[Stream]:
    """The streams of the regions of ``spans``: their per-iteration constants of which some are
    stored outside the arena's level (``levels``: tensor -> level; then all of them are, in one
    block there) and that only the region reads. Constants ``into`` names (tensor -> (level,
    alignment)) are streamed into a double buffer of that level instead of the arena's, one
    stream per region and destination; those it maps to None are not streamed."""
    into = into or {}
    regions = {r.name: r for r in graph.regions}
    consumers = graph.consumers()
    streams = []
    for span in spans:
        region = regions[span.name]
        inside = region.node_names()
        families: dict[tuple[str, ...], int] = {}   # family -> first body position reading it
        for b in body_inputs(graph, region):
            if b.kind == InputKind.PER_ITERATION and all(graph.tensors[t].is_constant for t in b.tensors):
                families[b.tensors] = min(families.get(b.tensors, b.position), b.position)
        count: dict[str, int] = {}
        for family in families:
            for t in set(family):
                count[t] = count.get(t, 0) + 1
        chosen = [f for f in families
                  if len(set(f)) == len(f) and all(count[t] == 1 for t in f)
                  and any(levels[t] != arena_level for t in f)   # one moved out: all are streamed
                  and len({graph.tensors[t].nbytes for t in f}) == 1 and not set(f) & set(graph.outputs)
                  and all(n.name in inside for t in f for n in consumers.get(t, []))
                  and all(into.get(t, ()) is not None for t in f)]
        groups: dict[tuple[str, int], list] = {}
        for f in sorted(chosen, key=lambda f: families[f]):
            where = {into.get(t, ("", _ALIGN)) for t in f}
            groups.setdefault(where.pop() if len(where) == 1 else ("", _ALIGN), []).append(f)
        for (dest, alignment), group in groups.items():
            streams.append(_stream(graph, span, group, families, levels, arena_level, dest, alignment))
    return streams


def _stream(graph: Graph, span: Span, chosen: list, families: dict, levels: dict[str, str], arena_level: str,
            into: str, alignment: int) -> Stream:
    """The stream of ``chosen`` families (in the order the body reads them) into level ``into``
    ("": the arena), members aligned to ``alignment`` bytes."""
    offsets, slot, chunks = [], 0, []
    for family in chosen:
        offsets.append(slot)
        if not chunks or chunks[-1][0] != families[family]:
            chunks.append([families[family], slot, slot])
        slot += -(-graph.tensors[family[0]].nbytes // alignment) * alignment
        chunks[-1][2] = slot
    members = tuple(tuple((f[j], off) for f, off in zip(chosen, offsets)) for j in range(span.iterations))
    level = next(levels[t] for f in chosen for t in f if levels[t] != arena_level)
    chunks = tuple(map(tuple, chunks))
    return Stream(span, slot, members, level, into=into, chunks=chunks, pieces=spread(slot, span.body),
                  first=first_pieces(slot, span.body, chunks))


def spread(slot: int, positions: int) -> tuple[tuple[int, int, int], ...]:
    """``slot`` bytes cut into about equal pieces at ``_ALIGN`` boundaries, one per body position
    (positions left without bytes get none): (position, start, end)."""
    bounds = [min(slot, -(-k * slot // positions // _ALIGN) * _ALIGN) for k in range(positions)] + [slot]
    return tuple((k, a, b) for k, (a, b) in enumerate(zip(bounds, bounds[1:])) if b > a)


def first_pieces(slot: int, positions: int, chunks) -> tuple[tuple[int, int, int], ...]:
    """The first iteration's copies (position, start, end): by position p, ``(p + 1) * rate``
    bytes issued, where ``rate`` is the least per-position amount that has every position's
    parameters on their way one position before it reads them (position 0's at position 0), and
    never less than that; cut at every chunk end (see the module doc)."""
    ends = {0: 0}
    for pos, _, end in chunks:
        ends[pos] = end
    needed, upto = [], 0
    for p in range(positions):                   # needed[p]: the bytes positions 0..p read
        upto = max(upto, ends.get(p, 0))
        needed.append(upto)
    due = [max(needed[:2])] + needed[2:] + [slot]     # due[p]: issued by the end of position p
    rate = max(-(-d // (p + 1)) for p, d in enumerate(due))
    rate = -(-rate // _ALIGN) * _ALIGN
    cuts = {end for _, _, end in chunks}
    out, issued = [], 0
    for p in range(positions):
        target = min(slot, max(due[p], (p + 1) * rate))
        bounds = sorted({issued, target} | {c for c in cuts if issued < c < target})
        out += [(p, a, b) for a, b in zip(bounds, bounds[1:])]
        issued = target
    return tuple(out)
