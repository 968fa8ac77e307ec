"""Helpers shared by the tiling rules: operands as logical views, the op's work, and the builder of layers whose operands follow the iteration space axis by axis
(elementwise, row-wise and reduction ops), which merges adjacent axes that every operand
treats alike (as the kernels' ``broadcast_operands`` does) so that tiles are as contiguous as
possible and the solver sees few dims."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import get_op
from Deeploy.ops.fused import FusedParams
from Deeploy.tiling.spec import AxisMap, Dim, LayerSpec, Operand

__all__ = ["RuleContext", "operand", "layer_ops", "broadcast_pattern", "varying_axes",
           "axis_spec", "zero_copy_spec", "base_operands", "whole_reduction", "FULL", "BCAST", "ABSENT"]

FULL, BCAST, ABSENT = "full", "bcast", None


@dataclass(frozen=True)
class RuleContext:
    """What a rule needs beyond the node, read from the bound layer: the L1 scratch bytes of
    its kernel (all cores' slices and the shared part)."""

    scratch: int = 0


def operand(graph: Graph, name: str, role: str, axes: Sequence[AxisMap]) -> Operand:
    """An operand over a logical view of tensor ``name``; the view must hold all its elements."""
    t = graph.tensors[name]
    axes = tuple(axes) or (AxisMap(1),)
    size = math.prod(a.size for a in axes)
    if size != t.size:
        raise ValueError(f"logical view {[a.size for a in axes]} of '{name}' does not hold its "
                         f"shape {list(t.shape)}")
    return Operand(name, role, t.dtype.nbytes, axes, t.is_constant)


def layer_ops(node: Node, graph: Graph) -> int:
    """The node's work (Cost.ops); data movement (no ops) counts one op per output element."""
    ins = [graph.tensors[i] if i else None for i in node.inputs]
    outs = [graph.tensors[o] for o in node.outputs]
    cost = get_op(node).cost(node.params, ins, outs)
    return int(cost.ops) if cost.ops > 0 else sum(t.size for t in outs)


def broadcast_pattern(shape: Sequence[int], out_shape: Sequence[int]) -> list:
    """Per output axis: FULL where the (right-aligned) operand spans it, BCAST where it is 1."""
    shape = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    return [FULL if s == o else BCAST for s, o in zip(shape, out_shape)]


def varying_axes(const_shape: Sequence[int], x_shape: Sequence[int]) -> set[int]:
    """Axes of x along which a requantisation constant varies (``ops.requant.channel_layout``):
    numpy broadcasting if it keeps x's shape, else a flat vector along axis 1."""
    size, rank = math.prod(const_shape), len(x_shape)
    if size == 1:
        return set()
    if len(const_shape) <= rank:
        try:
            if tuple(np.broadcast_shapes(tuple(const_shape), tuple(x_shape))) == tuple(x_shape):
                offset = rank - len(const_shape)
                return {offset + k for k, d in enumerate(const_shape) if d != 1}
        except ValueError:
            pass
    if rank >= 2 and size == x_shape[1]:
        return {1}
    raise ValueError(f"constant of shape {list(const_shape)} does not apply to {list(x_shape)}")


def const_pattern(const_shape, x_shape) -> list:
    axes = varying_axes(const_shape, x_shape)
    return [FULL if a in axes else BCAST for a in range(len(x_shape))]


def base_operands(node: Node) -> tuple[Any, tuple[str, str, str | None], tuple[str, ...]]:
    """A plain or requantised node seen as its base op: the base op's params, its two inputs and
    optional third (None when absent), and the requantisation constants (mul, add; none when plain)."""
    fused = isinstance(node.params, FusedParams)
    p = node.params.base if fused else node.params
    base, rq = (node.inputs[:-2], tuple(node.inputs[-2:])) if fused else (node.inputs, ())
    third = base[2] if len(base) > 2 and base[2] else None
    return p, (base[0], base[1], third), rq


def whole_reduction(node: Node, extent: str) -> tuple[str]:
    """Why the reduction over ``extent`` of a (requantised) sum stays whole, as a spec's ``whole``."""
    why = ("requantisation needs the complete sum" if isinstance(node.params, FusedParams)
           else "the kernels do not accumulate partial sums")
    return (f"the reduction of {node.op} over {extent} stays whole ({why})",)


def zero_copy_spec(node: Node, why: str = "") -> LayerSpec:
    return LayerSpec(node.name, node.op, (), (), 0, zero_copy=True, whole=(why,) if why else ())


def axis_spec(node: Node, graph: Graph, ctx: RuleContext, shape: Sequence[int],
              operands: Sequence[tuple[str, str, Sequence]], whole: Mapping[int, str] | None = None,
              names: Mapping[int, str] | None = None, parallel: str = "all") -> LayerSpec:
    """A layer whose operands follow the iteration space ``shape`` axis by axis.

    ``operands``: (tensor, role, pattern) with one FULL / BCAST / ABSENT entry per axis.
    ``whole``: axes kept whole, with the reason. Size-1 axes are dropped and neighbouring axes
    merged when every operand has the same pattern on both and both are tiled (or both whole
    for the same reason). ``parallel``: "all" dims or only the "tileable" ones (rows) split
    over the cores.
    """
    whole = dict(whole or {})
    rank = len(shape)
    groups: list[list[int]] = []
    for a in range(rank):
        if shape[a] == 1:
            continue
        if groups:
            prev = groups[-1][-1]
            if whole.get(prev) == whole.get(a) and all(p[prev] == p[a] for _, _, p in operands):
                groups[-1].append(a)
                continue
        groups.append([a])
    dims: list[Dim] = []
    group_names: list[str] = []
    for g in groups:
        size = math.prod(shape[a] for a in g)
        if names and all(a in names for a in g) and len({names[a] for a in g}) == 1:
            name = names[g[0]]
        else:
            name = f"a{g[0]}" if len(g) == 1 else f"a{g[0]}_{g[-1]}"
        if name in group_names:
            name = f"{name}{len(group_names)}"
        reason = whole.get(g[0])
        dims.append(Dim(name, size, tileable=reason is None, why_whole=reason or ""))
        group_names.append(name)
    if not dims:
        dims, groups, group_names = [Dim("a0", 1)], [[rank - 1] if rank else []], ["a0"]
    ops = []
    seen = set()
    for tensor, role, pattern in operands:
        if not tensor or (tensor, role) in seen:
            continue
        seen.add((tensor, role))
        if graph.tensors[tensor].size == 0:
            continue
        axes = []
        for g, name, d in zip(groups, group_names, dims):
            kind = pattern[g[0]] if g else FULL
            if kind == FULL:
                axes.append(AxisMap(d.size, name))
            elif kind == BCAST:
                axes.append(AxisMap(1))
        ops.append(operand(graph, tensor, role, axes))
    if parallel == "tileable":
        par = tuple(d.name for d in dims if d.tileable) or tuple(d.name for d in dims)
    else:
        par = tuple(d.name for d in dims)
    return LayerSpec(node.name, node.op, tuple(dims), tuple(ops), layer_ops(node, graph), (par,),
                     (), ctx.scratch).validate()
