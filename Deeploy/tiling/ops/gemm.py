"""GEMM / MatMul and their requantised forms: ``Y[b] = A[b] @ B[b] (+ C)``.

Dims: batch B, rows M, columns N. K stays whole: the requantised kernels requantise each output
in their epilogue, which needs the complete sum, and no GEMM kernel accumulates partial sums into
a resident output tile (a K dim with ``reduction=True`` is what such a kernel would need).

A tile reads A[b, m-tile, k-tile] and B[b, k-tile, n-tile] (transposed views as stored), the
bias C along the axes it spans, per-channel requantisation constants along the (batch, row,
column) axes they vary on. Loop orders: (B, N, M) keeps the B tile (weights) while the M tiles
pass, (B, M, N) keeps the A tile; the solver picks. The kernels split batch*rows over the cores
(columns when a tile has fewer rows than cores).
"""

from __future__ import annotations

import math

from Deeploy.ir.graph import Graph, Node
from Deeploy.ops.requant import channel_strides
from Deeploy.tiling.ops._common import (RuleContext, base_operands, layer_ops, operand, whole_reduction,
                                        zero_copy_spec)
from Deeploy.tiling.spec import INPUT, OUTPUT, AxisMap, Dim, LayerSpec

__all__ = ["gemm_rule"]


def _rq_axes(node: Node, graph: Graph, const: str, per_channel: bool) -> tuple[AxisMap, ...]:
    size = graph.tensors[const].size
    if not per_channel or size == 1:
        return (AxisMap(size),)
    p = node.params.base
    strides = channel_strides(node.params.rq, (p.batch, p.m, p.n), True)
    if strides is None:                 # no kernel takes this layout; keep the constant whole
        return (AxisMap(size),)
    sizes, names = (p.batch, p.m, p.n), ("B", "M", "N")
    axes = tuple(AxisMap(sizes[i], names[i]) for i in range(3) if strides[i] != 0)
    return axes if math.prod(a.size for a in axes) == size else (AxisMap(size),)


def gemm_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    p, (a, b, c), rq = base_operands(node)
    y = node.outputs[0]
    if graph.tensors[y].size == 0:
        return zero_copy_spec(node, "empty output")
    dims = [Dim("B", p.batch), Dim("M", p.m), Dim("N", p.n)]
    whole = whole_reduction(node, f"K={p.k}")
    kax = AxisMap(p.k)
    bat, m, n = AxisMap(p.batch, "B"), AxisMap(p.m, "M"), AxisMap(p.n, "N")
    a_axes = ((bat,) if p.a_batched else ()) + ((kax, m) if p.trans_a else (m, kax))
    b_axes = ((bat,) if p.b_batched else ()) + ((n, kax) if p.trans_b else (kax, n))
    ops = [operand(graph, a, INPUT, a_axes), operand(graph, b, INPUT, b_axes)]
    if c is not None:
        ct = graph.tensors[c]
        c_batch = ct.size // max(1, p.c_rows * p.c_cols)
        c_axes = ((bat,) if p.c_batched and c_batch == p.batch else (AxisMap(c_batch),) if c_batch > 1 else ())
        c_axes += (m if p.c_rows == p.m else AxisMap(p.c_rows), n if p.c_cols == p.n else AxisMap(p.c_cols))
        ops.append(operand(graph, c, INPUT, c_axes))
    if rq:
        per_channel = (node.params.rq.mul_per_channel, node.params.rq.add_per_channel)
        ops += [operand(graph, const, INPUT, _rq_axes(node, graph, const, pc)) for const, pc in zip(rq, per_channel)]
    ops.append(operand(graph, y, OUTPUT, (bat, m, n)))
    return LayerSpec(node.name, node.op, tuple(dims), tuple(ops), layer_ops(node, graph),
                     parallel=(("B", "M"), ("N",)),
                     loop_orders=(("B", "N", "M"), ("B", "M", "N")),
                     scratch=ctx.scratch, whole=whole).validate()
