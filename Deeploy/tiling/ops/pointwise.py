"""Elementwise ops: every operand tile is aligned with the output tile (broadcast operands keep
size 1 on their broadcast axes, per-channel requantisation constants are tiled along their
channel axes), and the zero-copy views.

Add/Sub/Mul/IntegerDiv/Where and Expand (broadcasting), RequantShift (scalar or per-channel mul/add),
Relu/Clip/iGELU/iHardswish/TrueIntegerDiv, RequantizedAdd/Mul/iGELU/iHardswish, and
Reshape/Flatten/Squeeze/Unsqueeze/Identity: zero copy unless their output is a graph output or
their input a constant (``memory.lifetimes.alias_roots``), then a flat copy.
"""

from __future__ import annotations

from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.ops._common import (FULL, RuleContext, axis_spec, broadcast_pattern, const_pattern,
                                        zero_copy_spec)
from Deeploy.tiling.spec import INPUT, OUTPUT, LayerSpec

__all__ = ["binary_rule", "expand_rule", "requant_rule", "unary_rule", "fused_eltwise_rule", "view_rule"]


def _out(graph: Graph, node: Node):
    return tuple(graph.tensors[node.outputs[0]].shape)


def _empty(graph: Graph, node: Node) -> bool:
    return graph.tensors[node.outputs[0]].size == 0


def _broadcast_spec(node: Node, graph: Graph, ctx: RuleContext, inputs) -> LayerSpec:
    if _empty(graph, node):
        return zero_copy_spec(node, "empty output")
    y = _out(graph, node)
    ops = [(i, INPUT, broadcast_pattern(graph.tensors[i].shape, y)) for i in inputs]
    return axis_spec(node, graph, ctx, y, ops + [(node.outputs[0], OUTPUT, [FULL] * len(y))])


def binary_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """Add, Sub, Mul, IntegerDiv, Where: every input broadcast onto the output."""
    return _broadcast_spec(node, graph, ctx, [i for i in node.inputs if i])


def expand_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """Expand: the data input broadcast onto the output (its shape input is restricted to the tile's)."""
    return _broadcast_spec(node, graph, ctx, node.inputs[:1])


def requant_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """RequantShift: x and y aligned; mul/add scalars or tiled along their channel axes."""
    if _empty(graph, node):
        return zero_copy_spec(node, "empty output")
    x, mul, add = node.inputs
    y = _out(graph, node)
    ops = [(x, INPUT, [FULL] * len(y))]
    ops += [(c, INPUT, const_pattern(graph.tensors[c].shape, y)) for c in (mul, add)]
    return axis_spec(node, graph, ctx, y, ops + [(node.outputs[0], OUTPUT, [FULL] * len(y))])


def unary_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """Relu, Clip (bounds are call literals), iGELU, iHardswish, TrueIntegerDiv."""
    if _empty(graph, node):
        return zero_copy_spec(node, "empty output")
    y = _out(graph, node)
    return axis_spec(node, graph, ctx, y, [(node.inputs[0], INPUT, [FULL] * len(y)),
                                           (node.outputs[0], OUTPUT, [FULL] * len(y))])


def quant_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """QuantizeLinear / DequantizeLinear with a scalar scale and zero point (call-time constants
    read whole); per-channel forms are refused."""
    if node.params.channels != 1:
        raise TilingError(f"layer '{node.name}' ({node.op}): only a scalar scale and zero point are tiled",
                          layer=node.name, op=node.op)
    return unary_rule(node, graph, ctx)


def fused_eltwise_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """RequantizedAdd / Mul / iGELU / iHardswish: the base op's inputs broadcast onto the output, the
    requantisation's mul/add (last two inputs) per channel of the output."""
    if _empty(graph, node):
        return zero_copy_spec(node, "empty output")
    y = _out(graph, node)
    base = node.inputs[:-2]
    ops = [(i, INPUT, broadcast_pattern(graph.tensors[i].shape, y)) for i in base if i]
    ops += [(c, INPUT, const_pattern(graph.tensors[c].shape, y)) for c in node.inputs[-2:]]
    return axis_spec(node, graph, ctx, y, ops + [(node.outputs[0], OUTPUT, [FULL] * len(y))])


def view_rule(node: Node, graph: Graph, ctx: RuleContext) -> LayerSpec:
    """Reshape & co.: zero copy (nothing to tile) unless the output is a graph output or the
    input a constant; then a copy, tiled as a flat array."""
    src, dst = node.inputs[0], node.outputs[0]
    if dst not in graph.outputs and not graph.is_constant(src):
        return zero_copy_spec(node, "a view of its input (zero copy)")
    if _empty(graph, node):
        return zero_copy_spec(node, "empty output")
    size = graph.tensors[dst].size
    return axis_spec(node, graph, ctx, (size,), [(src, INPUT, [FULL]), (dst, OUTPUT, [FULL])])
