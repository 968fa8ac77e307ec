"""The roofs a layer runs under: its engine's peak ops per cycle and the bandwidth of the memory
level its data come from, each with how it follows from the platform's description. A target
that has a cycle model provides them in its package's ``roofs`` module (``ROOFS``, a ``Roofs``);
the report never names a platform, an engine or a level itself."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from Deeploy.errors import DeeployError

if TYPE_CHECKING:
    from Deeploy.binding import Layer
    from Deeploy.ir.graph import Graph

__all__ = ["Roof", "Roofs", "roofs_of"]


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


def roofs_of(platform: str) -> Roofs:
    """The roofs of the target whose platform is called ``platform``; one error if it has none."""
    import Deeploy.targets as targets
    for info in pkgutil.iter_modules(targets.__path__):
        if not info.ispkg:
            continue
        try:
            module = importlib.import_module(f"{targets.__name__}.{info.name}.platform")
        except ModuleNotFoundError:
            continue
        if getattr(getattr(module, "PLATFORM", None), "name", None) != platform:
            continue
        try:
            return importlib.import_module(f"{targets.__name__}.{info.name}.roofs").ROOFS
        except ModuleNotFoundError:
            break
    raise DeeployError(f"platform {platform} has no cycle model, so no roofline (--roofline): use a platform with "
                       f"one, e.g. Siracusa")
