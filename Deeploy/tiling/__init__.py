"""Tiling model of cluster targets: per layer, the tile sizes (and loop order, and buffering)
that minimise modelled cycles while every tile, double-buffered where it changes, fits the L1.
See README.md in this folder.

Layout:
  spec.py          the problem of one layer: Dims, AxisMaps, Operands, LayerSpec, candidate tile
                   sizes, tile ranges, DMA layout of a tile
  families.py      tiling family of each op (named by its OpDef) -> LayerSpec rule (ops/ by family)
                   and the restriction of a node to one tile (restrict.py, used by tile_node.py)
  params.py        cost-model parameters with their sources (TilingParams)
  costs.py         cost terms precomputed per candidate tile size
  solution.py      TilingSolution, BufferTiling
  solver.py        the CP-SAT model, evaluation, smallest footprint,
                   TilingError for layers that do not fit
  two_level.py     L2 tiles of data in L3 (the same model one level up), then L1 tiles
"""

from __future__ import annotations

from typing import Iterable

from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.families import FAMILIES, RuleContext, family_of, layer_spec
from Deeploy.tiling.params import PlatformTiling, TilingParams, l3_to_l2_params
from Deeploy.tiling.solver import (BufferTiling, TilingSolution, cache_info, clear_cache, evaluate, min_footprint,
                                   solve_spec)
from Deeploy.tiling.spec import AxisMap, Dim, LayerSpec, Operand, candidates, operand_ranges, tile_ranges
from Deeploy.tiling.two_level import TwoLevelSolution, restrict, solve_two_level, tile_two_level

__all__ = ["FAMILIES", "RuleContext", "family_of", "layer_spec", "TilingParams", "PlatformTiling",
           "l3_to_l2_params", "TilingSolution", "BufferTiling", "solve_spec", "evaluate",
           "min_footprint", "clear_cache", "cache_info", "tile_layer", "tile_graph", "LayerSpec", "Dim", "AxisMap",
           "Operand", "candidates", "tile_ranges", "operand_ranges", "TwoLevelSolution", "restrict",
           "solve_two_level", "tile_two_level"]


def tile_layer(node: Node, graph: Graph, params: TilingParams, ctx: RuleContext | None = None,
               cache: bool = True) -> TilingSolution:
    """The tiling of one layer (data in ``params.source``, tiles in ``params.level``)."""
    return solve_spec(layer_spec(node, graph, ctx), params, cache)


def tile_graph(graph: Graph, params: TilingParams, ctx: RuleContext | None = None,
               cache: bool = True, nodes: Iterable[Node] | None = None) -> dict[str, TilingSolution]:
    """Tilings of every layer, by node name; the first layer that does not fit raises."""
    return {n.name: tile_layer(n, graph, params, ctx, cache) for n in (nodes if nodes is not None else graph.nodes)}
