"""The roofs a layer runs under: its engine's peak ops per cycle and the bandwidth of the memory
level its data come from, each with how it follows from the platform's description. A target
that has a cycle model provides them in its package's ``roofs`` module (``ROOFS``, a ``Roofs``;
found by ``Deeploy.targets.roofs_of``); the report never names a platform, an engine or a level
itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from Deeploy.binding import Layer
    from Deeploy.ir.graph import Graph

__all__ = ["Roof", "Roofs"]


@dataclass(frozen=True)
class Roof:
    """A ceiling: ``value`` (ops per cycle, or bytes per cycle for a memory roof), its ``name``
    as plotted, and ``why``: how it follows from the platform's parameters."""

    name: str
    value: float
    why: str


@dataclass(frozen=True)
class Roofs:
    """``engine_peak(layer, graph, cores)``: the peak ops per cycle of the engine running the
    layer; ``bandwidth(level, tiled)``: bytes per cycle between ``level`` and where the layer
    computes (``tiled``: moved by the DMA into the tiles; else accessed directly by the layer's
    engine)."""

    engine_peak: Callable[["Layer", "Graph", int], Roof]
    bandwidth: Callable[[str, bool, "Layer"], Roof]
