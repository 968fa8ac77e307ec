"""The layer restricted to one tile: ``tile_node(node, graph, spec, ranges)`` gives a Node of the
same op type whose operands are the tiles of the original operands, and a Graph holding them.

The code generator copies every operand's box (``operand_ranges``) densely into a buffer and
calls the kernel bound to the full node with the tile node's params, so:

* tensor names are the original names; an operand tensor's shape is its box extents along the
  operand's logical view (merged axes, size-1 axes dropped or inserted), its dtype the original
  one, a constant's value the original value sliced to the box. A few ops need size-1 axes
  inserted for their shape-based broadcasting to stay unambiguous (per-row/per-column
  requantisation constants of a GEMM, per-channel ones of an NCHW convolution, width-1 rows of
  the softmaxes and norms): same elements, same dense layout, only the shape differs;
* attributes that refer to absolute positions or axes are rewritten for the tile (convolution
  and pooling pads clipped at the tile's borders, groups, permutations, axes, slice starts, pad
  amounts); inputs that are no operands stay as they are unless the op needs them rewritten
  (then new constants with unique names);
* the tile node is parsed (``op.parse``) and its outputs inferred: every output must hold as
  many elements as its box.

The op's tiling family (``families.py``) names the restriction; an op without one raises TilingError.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from Deeploy.errors import OpError, TilingError
from Deeploy.ir.dtypes import computed, dtype_of_values
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ops import get_op
from Deeploy.tiling.families import family_of
from Deeploy.tiling.restrict import Tile
from Deeploy.tiling.ops._common import layer_ops
from Deeploy.tiling.spec import LayerSpec

__all__ = ["tile_node", "TileClass", "tile_classes"]


# ---- building the tile ------------------------------------------------------------------------
def _check_ranges(node: Node, spec: LayerSpec, ranges: Mapping[str, tuple[int, int]]) -> None:
    if spec.zero_copy:
        raise TilingError(f"layer '{node.name}' ({node.op}) is zero copy: it has no tiles",
                          layer=node.name, op=node.op)
    for d in spec.dims:
        if d.name not in ranges:
            raise TilingError(f"layer '{node.name}' ({node.op}): the tile gives no range for dim {d.name}",
                              layer=node.name, op=node.op)
        lo, hi = ranges[d.name]
        if not 0 <= lo < hi <= d.size:
            raise TilingError(f"layer '{node.name}' ({node.op}): range [{lo}, {hi}) of dim {d.name} is not "
                              f"a non-empty part of [0, {d.size})", layer=node.name, op=node.op)
        if (d.reduction or not d.tileable) and (lo, hi) != (0, d.size):
            raise TilingError(f"layer '{node.name}' ({node.op}): dim {d.name} stays whole, got [{lo}, {hi})",
                              layer=node.name, op=node.op)


def _tile_tensor(t: Tile, name: str) -> Tensor:
    """The tensor ``name`` of the tile graph: an operand's box, a new constant, or the original."""
    if name in t.constants:
        value = t.constants[name]
        return Tensor(name, tuple(value.shape), dtype_of_values(value), value)
    orig = t.graph.tensors[name]
    if name in t.operands:
        op = t.operands[name]
        shape = t.shapes.get(name, t.extents(name))
        value = None
        if orig.is_constant:
            box = tuple(slice(a, b) for a, b in t.boxes[name])
            value = computed(orig.value.reshape(op.shape)[box], orig.dtype).reshape(shape)
        return Tensor(name, tuple(shape), orig.dtype, value)
    shape = t.shapes.get(name, tuple(orig.shape))
    value = None if orig.value is None else np.asarray(orig.value).reshape(shape)
    return Tensor(name, tuple(shape), orig.dtype, value)


def tile_node(node: Node, graph: Graph, spec: LayerSpec, ranges: Mapping[str, tuple[int, int]]
              ) -> tuple[Node, Graph]:
    """The layer restricted to one tile: a Node of the same op type whose inputs and outputs are
    the operand tiles, attributes adjusted to the tile, params parsed (op.parse) and shapes
    inferred; and a Graph holding its tensors."""
    restrict = family_of(node).restrict
    _check_ranges(node, spec, ranges)
    t = Tile(node, graph, spec, ranges)
    restrict(t)
    names = list(dict.fromkeys(n for n in t.inputs + list(node.outputs) if n))
    tensors = {n: _tile_tensor(t, n) for n in names}
    inputs = [n for n in dict.fromkeys(t.inputs) if n and not tensors[n].is_constant]
    tile_graph = Graph(f"{graph.name}:{node.name}", tensors, [], inputs, list(node.outputs),
                       onnx_integers=graph.onnx_integers, opset=graph.opset)
    tile = Node(node.name, node.op, list(t.inputs), list(node.outputs), t.attrs, node.domain)
    op = get_op(tile)
    try:
        tile.params = op.parse(tile, tile_graph)
        outs = op.infer(tile.params, [tensors[i] if i else None for i in tile.inputs])
    except OpError as err:
        raise t.error(f"the tile node does not parse: {err}") from err
    for name, (shape, _) in zip(node.outputs, outs):
        if name and math.prod(shape) != tensors[name].size:
            raise t.error(f"the tile node computes {list(shape)} for '{name}', its box holds "
                          f"{list(tensors[name].shape)}")
    tile_graph.nodes = [tile]
    return tile, tile_graph


@dataclass(frozen=True)
class TileClass:
    """One class of alike tiles of a layer: the layer restricted to a representative tile (its
    node and tensors, parsed and inferred once, here) and the work of one such tile."""

    index: int
    node: Node
    graph: Graph
    ops: int


def tile_classes(node: Node, graph: Graph, sched) -> tuple[TileClass, ...]:
    """Every tile class of ``sched`` (a TileSchedule of ``node``)."""
    out = []
    for cls, ranges in sched.class_tiles():
        tile, tile_graph = tile_node(node, graph, sched.spec, ranges)
        out.append(TileClass(cls, tile, tile_graph, layer_ops(tile, tile_graph)))
    return tuple(out)
