"""Tiling families: how an op's output tile maps to its operands' tiles (the ``LayerSpec`` rule,
``Deeploy/tiling/ops/`` by family) and how its node is restricted to one tile
(``restrict.py``). Each op names its family in its ``OpDef.tiling``; a requantised op's family
is ``requantized_<base family>``. Exhaustive dispatch: an op without a family raises
TilingError naming it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import registered_ops
from Deeploy.tiling import restrict as r
from Deeploy.tiling.ops._common import RuleContext
from Deeploy.tiling.ops.channels import channel_rule, conv_transpose_rule, whole_rule
from Deeploy.tiling.ops.conv import conv_rule, maxpool_rule
from Deeploy.tiling.ops.data import concat_rule, gather_rule, pad_rule, resize_rule, shape_rule, slice_rule, split_rule, transpose_rule
from Deeploy.tiling.ops.gemm import gemm_rule
from Deeploy.tiling.ops.npu import npu_restrict, npu_rule
from Deeploy.tiling.ops.pointwise import binary_rule, expand_rule, fused_eltwise_rule, quant_rule, requant_rule, unary_rule, view_rule
from Deeploy.tiling.ops.rows import norm_rule, reduce_rule, requantized_softmax_rule, softmax_rule
from Deeploy.tiling.spec import LayerSpec

__all__ = ["TileFamily", "FAMILIES", "family_of", "layer_spec", "RuleContext"]

SpecRule = Callable[[Node, Graph, RuleContext], LayerSpec]


@dataclass(frozen=True)
class TileFamily:
    """The tiling problem of a node (``spec``) and the restriction of the node to one tile."""

    spec: SpecRule
    restrict: r.Restrict


FAMILIES: dict[str, TileFamily] = {
    "broadcast": TileFamily(binary_rule, r.same),            # every input broadcast onto the output
    "expand": TileFamily(expand_rule, r.expand),
    "pointwise": TileFamily(unary_rule, r.same),             # one tensor input; others are call literals
    "requant": TileFamily(requant_rule, r.same),
    "quant": TileFamily(quant_rule, r.same),                 # Quantize/DequantizeLinear, scalar scale
    "requantized_broadcast": TileFamily(fused_eltwise_rule, r.same),
    "requantized_pointwise": TileFamily(fused_eltwise_rule, r.same),
    "softmax": TileFamily(softmax_rule, r.rows),
    "requantized_softmax": TileFamily(requantized_softmax_rule, r.rows),
    "norm": TileFamily(norm_rule, r.rows),
    "channels": TileFamily(channel_rule, r.channels),        # per-sample / per-channel float norms and pools
    "whole": TileFamily(whole_rule, r.same),                 # one tile (losses over the whole batch)
    "conv_transpose": TileFamily(conv_transpose_rule, r.conv_transpose),
    "reduce": TileFamily(reduce_rule, r.reduce),
    "arg_reduce": TileFamily(reduce_rule, r.arg_reduce),    # ArgMax/ArgMin: the reduced axis whole
    "conv": TileFamily(conv_rule, r.conv),
    "requantized_conv": TileFamily(conv_rule, r.conv),
    "maxpool": TileFamily(maxpool_rule, r.maxpool),
    "gemm": TileFamily(gemm_rule, r.same),
    "requantized_gemm": TileFamily(gemm_rule, r.gemm_requant),
    "transpose": TileFamily(transpose_rule, r.transpose),
    "concat": TileFamily(concat_rule, r.concat),
    "slice": TileFamily(slice_rule, r.slice_),
    "pad": TileFamily(pad_rule, r.pad),
    "gather": TileFamily(gather_rule, r.gather),
    "split": TileFamily(split_rule, r.same),                 # the split axis whole
    "resize": TileFamily(resize_rule, r.resize),             # the resized axes whole
    "shape": TileFamily(shape_rule, r.same),
    "reshape": TileFamily(view_rule, r.reshape),
    "flatten": TileFamily(view_rule, r.flatten),
    "squeeze": TileFamily(view_rule, r.squeeze),
    "unsqueeze": TileFamily(view_rule, r.unsqueeze),
    "identity": TileFamily(view_rule, r.same),
    "npu": TileFamily(npu_rule, npu_restrict),               # NeurekaConv jobs (Deeploy/tiling/ops/npu.py)
}


def family_of(node: Node) -> TileFamily:
    op = registered_ops().get(node.op)
    name = op.tiling if op is not None else None
    if name not in FAMILIES:
        raise TilingError(f"layer '{node.name}': operator {node.op} has no tiling rule (its tiling family is "
                          f"{name!r}; families: {', '.join(sorted(FAMILIES))})", layer=node.name, op=node.op)
    return FAMILIES[name]


def layer_spec(node: Node, graph: Graph, ctx: RuleContext | None = None) -> LayerSpec:
    """The tiling problem of ``node`` (shapes and params inferred, e.g. after the platform's
    passes). ``ctx`` carries the bound kernel's scratch (none by default)."""
    family = family_of(node)
    if node.params is None:
        raise TilingError(f"layer '{node.name}' ({node.op}): no parameters; run shape inference first",
                          layer=node.name, op=node.op)
    return family.spec(node, graph, ctx if ctx is not None else RuleContext())
