"""Two-level tiling for layers whose tensors live in L3: L2 tiles (``--l2``) moved by the uDMA from
L3, each L2 tile then tiled into L1 (``--l1``) as a layer of its own.

Simplifications (documented, deliberate):
* Both levels use the same model (``solver.solve_spec``) with the parameters of their link
  (``params.l3_to_l2_params``: ~1 B/cycle, 100 cycles per transfer, half duplex, 1-D only). The
  L2 level is solved first, with the layer's compute as its compute; the L1 time of an L2 tile is
  not fed back into the L2 choice (one pass, no iteration).
* The L1 level is solved once, for the largest L2 tile seen as an interior tile (``restrict``):
  halos complete, offsets of padding / Concat parts / Slice starts taken as 0 within the tile,
  which bounds the footprint of every L2 tile (border tiles are smaller). The work of the L2
  tile is the layer's ops scaled by the tile's share of the iteration space.
* The kernel scratch lives in L1 only; the L2 level holds operand tiles only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping

from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.families import RuleContext, layer_spec
from Deeploy.tiling.params import TilingParams, l3_to_l2_params
from Deeploy.tiling.solver import TilingSolution, solve_spec
from Deeploy.tiling.spec import AxisMap, LayerSpec, axis_stats

__all__ = ["TwoLevelSolution", "restrict", "solve_two_level", "tile_two_level"]


@dataclass(frozen=True)
class TwoLevelSolution:
    """L2 tiles of the layer (data in L3) and L1 tiles of its largest L2 tile.

    ``total_cycles`` estimates the layer: the L2 level's fork/loop overhead and exposed L3 DMA,
    plus every L2 tile run at the L1 tiling's cycles (of the largest tile: an upper bound)."""

    l2: TilingSolution
    l1: TilingSolution

    @property
    def total_cycles(self) -> int:
        if self.l2.zero_copy:
            return 0
        return self.l2.dma_cycles + self.l2.overhead_cycles + self.l2.num_tiles * self.l1.total_cycles


def _restrict_axis(a: AxisMap, size: int, tile: int) -> AxisMap:
    if a.dim is None:
        return a
    extent = axis_stats(a, size, tile).max
    if a.identity and a.size == size:
        return AxisMap(tile, a.dim)
    if a.group is not None:
        return replace(a, size=extent)
    if a.reverse:
        return AxisMap(extent, a.dim, a.stride, extent - 1, a.span, True)
    return AxisMap(extent, a.dim, a.stride, 0, a.span)


def restrict(spec: LayerSpec, tiles: Mapping[str, int]) -> LayerSpec:
    """The layer restricted to its largest tile ``tiles`` (dim -> tile size), as an interior tile:
    dims of the tile's sizes, operands of the tile's extents (see the module docstring)."""
    sizes = {d.name: d.size for d in spec.dims}
    dims = tuple(replace(d, size=tiles.get(d.name, d.size)) for d in spec.dims)
    operands = []
    for o in spec.operands:
        axes = tuple(_restrict_axis(a, sizes[a.dim], tiles.get(a.dim, sizes[a.dim])) if a.dim else a for a in o.axes)
        operands.append(replace(o, axes=axes))
    volume = math.prod(sizes.values()) or 1
    share = math.prod(d.size for d in dims)
    return replace(spec, dims=dims, operands=tuple(operands), ops=-(-spec.ops * share // volume)).validate()


def solve_two_level(spec: LayerSpec, l2_bytes: int, l1: TilingParams, staging: TilingParams,
                    cache: bool = True) -> TwoLevelSolution:
    """L2 tiles of ``spec`` within ``l2_bytes`` (DMA as ``staging`` describes), then L1 tiles of its
    largest L2 tile (TilingError naming ``--l2`` or ``--l1`` if a level is too small)."""
    l2_params = l3_to_l2_params(l2_bytes, l1, staging)
    outer = solve_spec(replace(spec, scratch=0), l2_params, cache)
    if outer.zero_copy:
        return TwoLevelSolution(outer, outer)
    inner = solve_spec(restrict(spec, outer.tile_sizes), l1, cache)
    return TwoLevelSolution(outer, inner)


def tile_two_level(node: Node, graph: Graph, l2_bytes: int, l1: TilingParams, staging: TilingParams,
                   ctx: RuleContext | None = None, cache: bool = True) -> TwoLevelSolution:
    """Two-level tiling of one layer whose tensors live in L3."""
    return solve_two_level(layer_spec(node, graph, ctx), l2_bytes, l1, staging, cache=cache)
