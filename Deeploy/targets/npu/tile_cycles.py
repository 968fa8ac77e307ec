"""The tiler's price of an NPU job tile: the engine's own model of its job (``NpuSpec.job_cycles``),
so tiles in multiples of the engine's subtiles come out of the cost; a target gives it to the
tiler as ``TilingParams.kernel_cycles`` (``npu_tile_model(spec)``, or ``with_npu_tiles`` on the
cluster's tiling)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from Deeploy.targets.npu.spec import NpuSpec

__all__ = ["NpuTileCycles", "npu_tile_model", "with_npu_tiles"]


@dataclass(frozen=True)
class NpuTileCycles:
    """Compute cycles of one tile of an NPU job layer: the jobs of each plane of the tile."""

    job_cycles: Callable[..., int]
    mode: str
    cin: int
    cout: int
    out_bytes: int

    def __call__(self, ext: Mapping[str, int]) -> int:
        return ext["N"] * self.job_cycles(self.mode, ext["OH"], ext["OW"], ext.get("CO", self.cout), self.cin,
                                          self.out_bytes)


def npu_tile_model(spec: NpuSpec) -> Callable:
    """The tile cycles of a ``spec.op`` layer (``TilingParams.kernel_cycles``)."""
    def model(node, graph, cores: int) -> NpuTileCycles:
        p = node.params
        return NpuTileCycles(spec.job_cycles, p.mode, p.cin, p.cout, 1 if p.normquant else 4)
    return model


def with_npu_tiles(tiling, spec: NpuSpec):
    """A platform's ``PlatformTiling`` whose L1 tiles of ``spec.op`` layers are priced by the engine's
    job model."""
    tiles = tiling.tiles
    return replace(tiling, tiles=replace(tiles, kernel_cycles=(*tiles.kernel_cycles, (spec.op, npu_tile_model(spec)))))
