"""The tiler's price of a NeurekaConv tile: the NPU's own model of its job
(``NeurekaParams.job_cycles``: spatial subtiles of 6x6 pixels, 32 output channels), so tiles in
multiples of 6 and 32 come out of the cost; given to the tiler as ``TilingParams.kernel_cycles``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from Deeploy.targets.siracusa_w_neureka.params import NEUREKA

__all__ = ["NpuTileCycles", "npu_tile_model"]


@dataclass(frozen=True)
class NpuTileCycles:
    """Compute cycles of one tile of a NeurekaConv layer: one job per plane of the tile."""

    mode: str
    cin: int
    cout: int
    out_bytes: int

    def __call__(self, ext: Mapping[str, int]) -> int:
        return ext["N"] * NEUREKA.job_cycles(self.mode, ext["OH"], ext["OW"], ext.get("CO", self.cout), self.cin,
                                             self.out_bytes)


def npu_tile_model(node, graph, cores: int) -> NpuTileCycles:
    """The tile cycles of a NeurekaConv layer (``TilingParams.kernel_cycles``)."""
    p = node.params
    return NpuTileCycles(p.mode, p.cin, p.cout, 1 if p.normquant else 4)
