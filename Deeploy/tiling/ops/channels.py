"""Per-sample and per-channel float ops over x = [N, C, spatial...], seen as [N, C, S]:

* BatchNormalization, InstanceNormalization: N and C tiled (each (n, c) plane is normalised on
  its own; the per-channel constants follow C), the spatial extent whole.
* GroupNormalization: N tiled; C and the spatial extent whole (a group spans channels).
* GlobalAveragePool, GlobalMaxPool: N and C tiled, the pooled spatial extent whole.
* SoftmaxCrossEntropyLoss and its gradient: one tile (their sums run over the whole batch).
* ConvTranspose: images and (ungrouped) output channels tiled.
"""

from __future__ import annotations

import math

from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.ops._common import ABSENT, BCAST, FULL, RuleContext, axis_spec, layer_ops, operand
from Deeploy.tiling.spec import INPUT, OUTPUT, AxisMap, Dim, LayerSpec

__all__ = ["channel_rule", "whole_rule", "conv_transpose_rule"]

_NAMES = {0: "N", 1: "C", 2: "S"}


def channel_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    x, y = node.inputs[0], node.outputs[0]
    shape = tuple(graph.tensors[x].shape)
    space = (shape[0], shape[1], math.prod(shape[2:]))
    whole = {2: f"the normalised or pooled extent of {node.op}"}
    if node.op == "GroupNormalization":
        whole[1] = "the channels of a group"
    pooled = node.op.startswith("Global")
    ops = [(x, INPUT, [FULL] * 3)]
    ops += [(c, INPUT, [ABSENT, FULL, ABSENT]) for c in node.inputs[1:] if c]
    ops.append((y, OUTPUT, [FULL, FULL, BCAST if pooled else FULL]))
    return axis_spec(node, graph, ctx, space, ops, whole=whole, names=_NAMES, parallel="tileable")


def whole_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """One tile over a [N, C] iteration space: scores and gradients [N, C], labels and per-sample
    values [N], class weights [C], a reduced loss or upstream gradient a scalar."""
    p = node.params
    per_sample = [FULL, ABSENT] if p.reduction == "none" else [ABSENT, ABSENT]
    rows, labels, weights = [FULL, FULL], [FULL, ABSENT], [ABSENT, FULL]
    if node.op == "SoftmaxCrossEntropyLossGrad":
        ins = (rows, labels) if p.implicit_dy else (per_sample, rows, labels, weights)
        outs = (rows,)
    else:
        ins, outs = (rows, labels, weights), ((rows,) if p.log_prob_only else (per_sample, rows))
    why = f"{node.op} sums over the whole batch"
    ops = [(i, INPUT, pat) for i, pat in zip(node.inputs, ins) if i]
    ops += [(o, OUTPUT, pat) for o, pat in zip(node.outputs, outs) if o]
    return axis_spec(node, graph, ctx, (p.batch, p.classes), ops, whole={0: why, 1: why}, names={0: "N", 1: "C"})


def conv_transpose_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """ConvTranspose: images (N) and, without groups, output channels (M) tiled; the output's
    spatial extent, and the input channels and kernel taps it sums over, whole (no dims)."""
    p = node.params
    grouped = p.group > 1
    dims = (Dim("N", p.batch), Dim("M", p.ch_out, tileable=not grouped,
                                   why_whole="the output channels of a grouped ConvTranspose" if grouped else ""))
    m = None if grouped else "M"

    def whole(name, skip):
        return [AxisMap(d) for d in graph.tensors[name].shape[skip:]]
    x, w, y = node.inputs[0], node.inputs[1], node.outputs[0]
    ops = [operand(graph, x, INPUT, [AxisMap(p.batch, "N"), AxisMap(p.ch_in)] + whole(x, 2)),
           operand(graph, w, INPUT, [AxisMap(p.ch_in), AxisMap(p.ch_out // p.group, m)] + whole(w, 2))]
    if p.has_bias:
        ops.append(operand(graph, node.inputs[2], INPUT, [AxisMap(p.ch_out, m)]))
    ops.append(operand(graph, y, OUTPUT, [AxisMap(p.batch, "N"), AxisMap(p.ch_out, m)] + whole(y, 2)))
    return LayerSpec(node.name, node.op, dims, tuple(ops), layer_ops(node, graph), (("N", "M"),), (), ctx.scratch,
                     ("the input channels, kernel taps and output extent of ConvTranspose stay whole",)).validate()
