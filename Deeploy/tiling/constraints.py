"""Per-op tiling rules: node -> LayerSpec (iteration space, operand tiles as functions of the tile
sizes, work, parallel split, loop orders, scratch). Exhaustive dispatch: an op without a rule
raises TilingError naming it. The rules live in ``Deeploy/tiling/ops/`` by family:

  pointwise  Add Sub Mul IntegerDiv RequantShift Relu Clip iGELU iHardswish TrueIntegerDiv
             RequantizedAdd RequantizediGELU RequantizediHardswish, the views
  rows       iSoftmax ITAMax ITAPartialMax iLayerNorm iRMSNorm iNoNorm ReduceSum ReduceMean
             IntegerMean
  conv       Conv RequantizedConv (NCHW and channels-last) MaxPool
  gemm       Gemm MatMul RequantizedGemm RequantizedMatMul
  data       Transpose Concat Slice Pad Gather
"""

from __future__ import annotations

from typing import Callable

from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph, Node
from Deeploy.tiling.ops._common import RuleContext, no_rule
from Deeploy.tiling.ops.conv import conv_rule, maxpool_rule
from Deeploy.tiling.ops.data import concat_rule, gather_rule, pad_rule, slice_rule, transpose_rule
from Deeploy.tiling.ops.gemm import gemm_rule
from Deeploy.tiling.ops.pointwise import binary_rule, fused_eltwise_rule, requant_rule, unary_rule, view_rule
from Deeploy.tiling.ops.rows import norm_rule, reduce_rule, softmax_rule
from Deeploy.tiling.spec import LayerSpec

__all__ = ["RULES", "RuleContext", "layer_spec", "siracusa_context"]

Rule = Callable[[Node, Graph, RuleContext], LayerSpec]

RULES: dict[str, Rule] = {
    **{op: binary_rule for op in ("Add", "Sub", "Mul", "IntegerDiv")},
    "RequantShift": requant_rule,
    **{op: unary_rule for op in ("Relu", "Clip", "iGELU", "iHardswish", "TrueIntegerDiv")},
    **{op: fused_eltwise_rule for op in ("RequantizedAdd", "RequantizediGELU", "RequantizediHardswish")},
    **{op: view_rule for op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity")},
    **{op: softmax_rule for op in ("iSoftmax", "ITAMax", "ITAPartialMax")},
    **{op: norm_rule for op in ("iLayerNorm", "iRMSNorm", "iNoNorm")},
    **{op: reduce_rule for op in ("ReduceSum", "ReduceMean", "IntegerMean")},
    "Conv": conv_rule,
    "RequantizedConv": conv_rule,
    "MaxPool": maxpool_rule,
    **{op: gemm_rule for op in ("Gemm", "MatMul", "RequantizedGemm", "RequantizedMatMul")},
    "Transpose": transpose_rule,
    "Concat": concat_rule,
    "Slice": slice_rule,
    "Pad": pad_rule,
    "Gather": gather_rule,
}


def siracusa_context(cores: int = 8) -> RuleContext:
    from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
    return RuleContext(SIRACUSA_BINDINGS, cores)


def layer_spec(node: Node, graph: Graph, ctx: RuleContext | None = None) -> LayerSpec:
    """The tiling problem of ``node`` (shapes and params inferred, e.g. after the platform's
    passes). ``ctx`` defaults to Siracusa's bindings on 8 cores."""
    rule = RULES.get(node.op)
    if rule is None:
        raise no_rule(node, RULES)
    if node.params is None:
        raise TilingError(f"layer '{node.name}' ({node.op}): no parameters; run shape inference first",
                          layer=node.name, op=node.op)
    return rule(node, graph, ctx if ctx is not None else siracusa_context())
