"""Kernel scratch as a function of the tile: a tiled layer's kernel runs on one tile at a time,
and its scratch (evaluated by the kernel's own scratch functions on the layer restricted to the
tile, ``tile_node``) may be smaller than the whole layer's, e.g. iSoftmax builds its e(d) table
only for tiles large enough to pay for it. The solver then sees the footprint of each candidate
tile with the scratch that tile really needs. A kernel whose scratch is optional (it runs
without, more slowly) gets none when no tiling fits with it. Layers computing the same function
(``node_content``) with the same kernel share one evaluation."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

from Deeploy.binding import Layer, kernel_scratch_bytes
from Deeploy.ir.graph import Graph
from Deeploy.ir.region import node_content
from Deeploy.tiling.params import TilingParams
from Deeploy.tiling.solver import min_footprint
from Deeploy.tiling.spec import LayerSpec, TileScratch, candidates
from Deeploy.tiling.tile_node import tile_node

__all__ = ["with_tile_scratch", "clear_cache", "MAX_SCRATCH_TILES"]

MAX_SCRATCH_TILES = 512  # candidate tiles evaluated; beyond, the whole layer's scratch is kept
_CACHE: dict[tuple, "int | TileScratch"] = {}


def clear_cache() -> None:
    _CACHE.clear()


def with_tile_scratch(spec: LayerSpec, layer: Layer, graph: Graph, cores: int,
                      params: TilingParams | None = None) -> LayerSpec:
    """``spec`` whose scratch is a ``TileScratch`` when the bound kernel's scratch differs
    between the whole layer and its smallest tile; with ``params``, no scratch at all when the
    kernel's scratch is optional and even the smallest tiling does not fit with it."""
    spec = _per_tile(spec, layer, graph, cores)
    if params is not None and spec.scratch and layer.kernel.scratch_optional \
            and min_footprint(spec, params).l1_bytes > params.capacity:
        return replace(spec, scratch=0)
    return spec


def _per_tile(spec: LayerSpec, layer: Layer, graph: Graph, cores: int) -> LayerSpec:
    kernel = layer.kernel
    if spec.zero_copy or not layer.scratch or not (kernel.scratch or kernel.shared_scratch):
        return spec
    free = [d for d in spec.dims if len(candidates(d, d.size)) > 1]
    if not free:
        return spec
    tiles = [candidates(d, d.size) for d in free]
    whole = {d.name: (0, d.size) for d in spec.dims}

    def scratch_of(extents: tuple[int, ...]) -> int:
        ranges = {**whole, **{d.name: (0, t) for d, t in zip(free, extents)}}
        node, tgraph = tile_node(layer.node, graph, spec, ranges)
        return kernel_scratch_bytes(kernel, node, tgraph, cores)[0]

    def scratch() -> "int | TileScratch":
        smallest = tuple(t[-1] for t in tiles)
        if scratch_of(smallest) == layer.scratch or math.prod(len(t) for t in tiles) > MAX_SCRATCH_TILES:
            return spec.scratch
        extents = tuple(itertools.product(*tiles))
        nbytes = tuple(scratch_of(e) for e in extents)
        return TileScratch(tuple(d.name for d in free), extents, nbytes, layer.scratch)

    key = (node_content(graph, layer.node), graph.onnx_integers, kernel.scratch, kernel.shared_scratch,
           layer.scratch, cores, spec.signature())
    if key not in _CACHE:
        _CACHE[key] = scratch()
    return replace(spec, scratch=_CACHE[key])
