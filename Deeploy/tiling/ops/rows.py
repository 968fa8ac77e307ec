"""Row-wise ops and reductions: the reduced or normalised axes stay whole, the other axes are
tiled (whole rows per tile).

* iSoftmax, ITAMax, ITAPartialMax: each output row needs the maximum and the sum of its whole
  row (ITAPartialMax streams column groups but still rescales the whole row at the end);
  RequantizediSoftmax as iSoftmax, its mul and add broadcast onto x and tiled with it.
* iLayerNorm, iRMSNorm: mean / root mean square over the last axis; weight and bias broadcast
  onto x and are tiled with it. iNoNorm is affine per element (no reduction), yet its last axis
  (the normalised axis of the op family) is kept whole too, as specified for the norms.
* ReduceSum, ReduceMean, IntegerMean: the reduced axes whole, the kept axes tiled.
* Float Softmax, LayerNormalization and RMSNorm as the integer ones, when they normalise the last
  axis only, or (Softmax) an axis followed by size-1 axes only (other forms are refused with a
  TilingError).
"""

from __future__ import annotations

import math
from typing import Sequence

from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.ops._common import (ABSENT, BCAST, FULL, RuleContext, axis_spec, broadcast_pattern,
                                        zero_copy_spec)
from Deeploy.tiling.spec import INPUT, OUTPUT, LayerSpec

__all__ = ["softmax_rule", "requantized_softmax_rule", "norm_rule", "reduce_rule", "row_start"]


def row_start(params, shape: Sequence[int]) -> int:
    """The first axis of the op's rows: the trailing axes holding its ``width`` (ops without
    one work along the last axis). A softmax along an axis followed by size-1 axes has its
    rows there, not in the last axis alone."""
    width = getattr(getattr(params, "base", params), "width", shape[-1] if shape else 1)
    return next((a for a in range(len(shape) - 1, -1, -1) if math.prod(shape[a:]) == width), 0)


def _row_spec(node: Node, graph: Graph, ctx: RuleContext, axis: str, consts: Sequence[str] = ()) -> LayerSpec:
    """x and y tiled by whole rows: the row (the ``axis`` of the op, from ``row_start`` on)
    stays whole; the constants ``consts`` broadcast onto x and are tiled with it; further outputs
    (LayerNormalization's Mean and InvStdDev) hold one value per row."""
    x, y = node.inputs[0], node.outputs[0]
    shape = tuple(graph.tensors[x].shape)
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    full = [FULL] * len(shape)
    ops = [(x, INPUT, full)]
    ops += [(c, INPUT, broadcast_pattern(graph.tensors[c].shape, shape)) for c in consts]
    start = row_start(node.params, shape)
    ops += [(y, OUTPUT, full)] + [(o, OUTPUT, full[:start] + [BCAST] * (len(shape) - start))
                                  for o in node.outputs[1:] if o]
    return axis_spec(node, graph, ctx, shape, ops,
                     whole={a: f"the {axis} of {node.op}" for a in range(start, len(shape))},
                     names={a: "rows" if a < start else "width" for a in range(len(shape))}, parallel="tileable")


def _last_axis_only(node: Node) -> None:
    """The row rules keep the trailing axes of a row whole: a softmax along an axis followed by
    more than size-1 axes (``inner`` > 1) or a norm over several trailing axes cannot be tiled
    by them."""
    p = node.params
    if getattr(p, "inner", 1) != 1 or (hasattr(p, "blocks") and p.width != p.shape[-1]):
        raise TilingError(f"layer '{node.name}' ({node.op}): only the form over the last axis alone is tiled",
                          layer=node.name, op=node.op)


def softmax_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    _last_axis_only(node)
    return _row_spec(node, graph, ctx, "reduced axis")


def requantized_softmax_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """iSoftmax fused with its RequantShift: mul and add broadcast onto the rows, tiled with x."""
    return _row_spec(node, graph, ctx, "reduced axis", node.inputs[-2:])


def norm_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    _last_axis_only(node)
    return _row_spec(node, graph, ctx, "normalised axis", [c for c in node.inputs[1:] if c])


def reduce_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    x, y = node.inputs[0], node.outputs[0]
    if graph.tensors[y].size == 0 or graph.tensors[x].size == 0:
        return zero_copy_spec(node, "empty input or output")
    shape = tuple(p.in_shape)
    reduced = set(p.axes)
    y_pattern = [(BCAST if p.keepdims else ABSENT) if a in reduced else FULL for a in range(len(shape))]
    whole = {a: f"the reduced axes of {node.op}" for a in reduced}
    names = {a: ("reduced" if a in reduced else "kept") for a in range(len(shape))}
    return axis_spec(node, graph, ctx, shape, [(x, INPUT, [FULL] * len(shape)), (y, OUTPUT, y_pattern)],
                     whole=whole, names=names, parallel="tileable")
