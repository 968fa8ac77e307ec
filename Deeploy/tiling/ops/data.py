"""Data movement: the output is tiled, every input tile is the part of the input the output
tile is made of.

* Transpose: output axes that stay adjacent (and in order) in the input merge; the input tile is
  the same box with permuted axes (a strided DMA brings it in, the cores permute it in L1).
* Concat: dims (outer, concat axis, inner); part ``i`` covers ``[off_i, off_i + len_i)`` of the
  concat axis, so an output tile reads the intersection with every part it overlaps (empty parts
  and empty intersections move nothing).
* Slice: output index ``o`` of an axis reads ``start + o*step`` (reversed for negative steps); an
  input tile spans its first to last element.
* Pad: output index ``o`` reads ``o - pad_begin`` when inside the input; tiles in the padding read
  nothing (negative pads crop).
* Gather: the gathered axis of the data (constant, arbitrary indices) and the index dims of the
  output stay whole; the dims before and after are tiled.
"""

from __future__ import annotations

import math
from typing import Callable

from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.ops._common import RuleContext, layer_ops, operand, zero_copy_spec
from Deeploy.tiling.spec import INPUT, OUTPUT, AxisMap, Dim, LayerSpec

__all__ = ["transpose_rule", "concat_rule", "slice_rule", "pad_rule", "gather_rule"]


def _spec(node, graph, ctx, dims, ops) -> LayerSpec:
    names = tuple(d.name for d in dims)
    return LayerSpec(node.name, node.op, tuple(dims), tuple(ops), layer_ops(node, graph), parallel=(names,),
                     scratch=ctx.scratch).validate()


def transpose_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    x, y = node.inputs[0], node.outputs[0]
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    rank = len(p.in_shape)
    kept_in = [a for a in range(rank) if p.in_shape[a] != 1]
    pos = {a: i for i, a in enumerate(kept_in)}
    groups: list[list[int]] = []            # input axes, grouped in output order
    for a in (p.perm[k] for k in range(rank)):
        if p.in_shape[a] == 1:
            continue
        if groups and pos[a] == pos[groups[-1][-1]] + 1:
            groups[-1].append(a)
        else:
            groups.append([a])
    if not groups:
        dims = [Dim("t0", 1)]
        return _spec(node, graph, ctx, dims, [operand(graph, x, INPUT, [AxisMap(1, "t0")]),
                                               operand(graph, y, OUTPUT, [AxisMap(1, "t0")])])
    dims = [Dim(f"t{k}", math.prod(p.in_shape[a] for a in g)) for k, g in enumerate(groups)]
    y_axes = [AxisMap(d.size, d.name) for d in dims]
    in_order = sorted(range(len(groups)), key=lambda k: pos[groups[k][0]])
    x_axes = [AxisMap(dims[k].size, dims[k].name) for k in in_order]
    return _spec(node, graph, ctx, dims, [operand(graph, x, INPUT, x_axes), operand(graph, y, OUTPUT, y_axes)])


def concat_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    y = node.outputs[0]
    out = tuple(graph.tensors[y].shape)
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    outer, length, inner = math.prod(out[:p.axis]), out[p.axis], math.prod(out[p.axis + 1:])
    parts = [name for name, shape in zip(node.inputs, p.in_shapes) if shape[p.axis] and math.prod(shape)]
    # a tile meets a repeated input at several places: one box cannot serve them, so C stays whole
    whole = "an input concatenated more than once" if len(set(parts)) < len(parts) else ""
    concat_dim = Dim("C", length, tileable=not whole, why_whole=whole)
    dims = ([Dim("outer", outer)] if outer > 1 else []) + [concat_dim] + ([Dim("inner", inner)] if inner > 1 else [])
    head = [AxisMap(outer, "outer")] if outer > 1 else []
    tail = [AxisMap(inner, "inner")] if inner > 1 else []
    ops, offset, seen = [], 0, set()
    for name, shape in zip(node.inputs, p.in_shapes):
        part = shape[p.axis]
        if part and math.prod(shape) and name not in seen:
            seen.add(name)
            ops.append(operand(graph, name, INPUT, head + [AxisMap(part, "C", offset=-offset)] + tail))
        offset += part
    ops.append(operand(graph, y, OUTPUT, head + [AxisMap(length, "C")] + tail))
    return _spec(node, graph, ctx, dims, ops)


def _axis_window_spec(node: Node, graph: Graph, ctx: RuleContext, prefix: str,
                      x_axis: Callable[[int, str], AxisMap]) -> LayerSpec:
    """One dim per output axis (named ``prefix`` + axis); axis ``a`` of the input is
    ``x_axis(a, dim name)``. An empty input (a Pad of nothing) is no operand."""
    x, y = node.inputs[0], node.outputs[0]
    out = node.params.out_shape
    if math.prod(out) == 0:
        return zero_copy_spec(node, "empty output")
    names = [f"{prefix}{a}" for a in range(len(out))]
    dims = [Dim(name, size) for name, size in zip(names, out)]
    ops = [operand(graph, y, OUTPUT, [AxisMap(size, name) for name, size in zip(names, out)])]
    if graph.tensors[x].size:
        ops.insert(0, operand(graph, x, INPUT, [x_axis(a, name) for a, name in enumerate(names)]))
    return _spec(node, graph, ctx, dims, ops)


def slice_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    return _axis_window_spec(node, graph, ctx, "s", lambda a, dim: AxisMap(
        p.in_shape[a], dim, stride=abs(p.steps[a]), offset=p.starts[a], reverse=p.steps[a] < 0))


def pad_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    if p.mode != "constant":   # an output tile would read input rows beyond its own box
        raise TilingError(f"layer '{node.name}' (Pad): mode '{p.mode}' is not tiled, only mode 'constant'; "
                          "compile without tiling", layer=node.name, op=node.op)
    return _axis_window_spec(node, graph, ctx, "p", lambda a, dim: AxisMap(p.in_shape[a], dim, offset=-p.begin[a]))


def gather_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    x, y = node.inputs[0], node.outputs[0]
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    shape = p.data_shape
    outer, gathered, inner = math.prod(shape[:p.axis]), shape[p.axis], math.prod(shape[p.axis + 1:])
    count = math.prod(p.indices_shape)
    dims = (([Dim("outer", outer)] if outer > 1 else [])
            + [Dim("idx", count, tileable=False, why_whole="the gathered axis of Gather (constant indices)")]
            + ([Dim("inner", inner)] if inner > 1 else []))
    head = [AxisMap(outer, "outer")] if outer > 1 else []
    tail = [AxisMap(inner, "inner")] if inner > 1 else []
    ops = [operand(graph, x, INPUT, head + [AxisMap(gathered)] + tail),
           operand(graph, y, OUTPUT, head + [AxisMap(count, "idx")] + tail)]
    return _spec(node, graph, ctx, dims, ops)


def kept_axes_spec(node: Node, graph: Graph, ctx: RuleContext, kept, why: str) -> LayerSpec:
    """Operands of the output's rank whose axes in ``kept`` follow the output tile and whose other
    axes stay whole, each at its own size (Split's axis, Resize's resized axes)."""
    shape = graph.tensors[node.outputs[0]].shape
    dims = [Dim(f"a{k}", shape[k]) for k in kept if shape[k] > 1]
    named = {f"a{k}" for k in kept}

    def axes(name):
        return [AxisMap(d, f"a{k}" if f"a{k}" in named and d > 1 else None)
                for k, d in enumerate(graph.tensors[name].shape)]
    ops = [operand(graph, node.inputs[0], INPUT, axes(node.inputs[0]))]
    ops += [operand(graph, o, OUTPUT, axes(o)) for o in node.outputs if graph.tensors[o].size]
    if not dims:
        dims = [Dim("a", 1)]
    return LayerSpec(node.name, node.op, tuple(dims), tuple(ops), layer_ops(node, graph),
                     parallel=(tuple(d.name for d in dims),), scratch=ctx.scratch, whole=(why,)).validate()


def split_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p = node.params
    if graph.tensors[node.inputs[0]].size == 0:
        return zero_copy_spec(node, "empty input")
    kept = [k for k in range(len(p.in_shape)) if k != p.axis]
    return kept_axes_spec(node, graph, ctx, kept, "the split axis of Split")


def resize_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """The axes Resize leaves alone are tiled, the resized ones stay whole (all of them under a
    keep_aspect_ratio_policy, whose common scale a tile's sizes would not reproduce)."""
    p = node.params
    if graph.tensors[node.outputs[0]].size == 0 or graph.tensors[node.inputs[0]].size == 0:
        return zero_copy_spec(node, "empty output")
    return kept_axes_spec(node, graph, ctx, p.kept if p.stretch else (), "the resized axes of Resize")


def shape_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """Shape: its few dims written in one tile (the input is not read)."""
    y = node.outputs[0]
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    n = graph.tensors[y].size
    dims = (Dim("dims", n, tileable=False, why_whole="the dims Shape writes"),)
    return _spec(node, graph, ctx, dims, [operand(graph, y, OUTPUT, [AxisMap(n, "dims")])])
