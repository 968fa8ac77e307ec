"""Requantisation fusion, so the wide intermediate never goes to memory:
``Op(x...) -> RequantShift(mul, add)  =>  RequantizedOp(x..., mul, add)`` for every op
registered with ``fuse_slots`` (Conv, Gemm, MatMul, Add, Mul, iGELU, iHardswish, iSoftmax); and, first,
``MatMul(x, W) -> Add(const bias)  =>  Gemm(x, W, bias)`` when the bias broadcasts per column."""

from __future__ import annotations

import math

import numpy as np

from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import Trait, op_named
from Deeploy.ops.fused import FUSABLE, fused_name
from Deeploy.ops.requant import channel_strides
from Deeploy.passes._engine import Rule, RuleSet, apply_rules, chain

__all__ = ["fuse_requant", "REQUANT_FUSION"]


def _trailing(shape, out) -> bool:
    """The operand is a scalar, or the output's trailing dims broadcast over its leading ones
    (so the fused kernel reads it with a period)."""
    if int(math.prod(shape)) == 1:
        return True
    dims = [1] * (len(out) - len(shape)) + list(shape)
    k = next((i for i, d in enumerate(dims) if d != 1), len(dims))
    return dims[k:] == list(out[k:])


def _row_constants(graph: Graph, out, consts) -> str | None:
    """The fused softmax reads mul and add per row (and along it) as numpy broadcasts onto its
    output, over at most three row dims."""
    for name in consts:
        shape = tuple(graph.tensors[name].shape)
        if int(math.prod(shape)) == 1:
            continue
        try:
            fits = len(shape) <= len(out) and tuple(np.broadcast_shapes(shape, tuple(out))) == tuple(out)
        except ValueError:
            fits = False
        if not fits:
            return "the requantisation constants do not broadcast onto the softmax output"
        if len(out) > 4:
            return "per-channel requantisation of a softmax with more than three row dims stays unfused"
    return None


def _wide_output_feeds_x(graph: Graph, chain: list[Node]) -> str | None:
    op, rqs = chain
    if rqs.inputs[0] != op.outputs[0]:
        return "the op's output is RequantShift's mul or add, not its x"
    if len(op.outputs) != 1:
        return "the op has several outputs"
    if getattr(op.params, "onnx_type", None) is not None:
        return f"the {op.op} wraps around in {op.params.onnx_type} (ONNX integer semantics)"
    if Trait.BROADCASTING in op_named(op.op).traits:
        out = graph.tensors[op.outputs[0]].shape
        if not all(_trailing(graph.tensors[i].shape, out) for i in op.inputs):
            return f"an {op.op} broadcasting other than over leading axes stays unfused"
    if op.op == "iSoftmax":
        reason = _row_constants(graph, graph.tensors[op.outputs[0]].shape, rqs.inputs[1:])
        if reason:
            return reason
    if Trait.GEMM in op_named(op.op).traits:
        # the fused GEMM indexes mul/add over its flattened (batch, rows, columns) product
        gemm = op.params or op_named(op.op).parse(op, graph)   # made by this pass: not yet inferred
        dims, rq = (gemm.batch, gemm.m, gemm.n), rqs.params
        if None in (channel_strides(rq, dims, rq.mul_per_channel), channel_strides(rq, dims, rq.add_per_channel)):
            return "the requantisation constants vary along part of the batch dims, which the fused GEMM cannot index"
    return None


def _fuse(graph: Graph, chain: list[Node]) -> list[Node]:
    op, rqs = chain
    attrs = dict(op.attrs)
    rq_attrs = dict(rqs.attrs)
    levels = rq_attrs.pop("n_levels", None)    # as n_levels_out: the op's own n_levels stays its own
    if levels is not None:
        rq_attrs.setdefault("n_levels_out", levels)
    attrs.update(rq_attrs)
    inputs = op.inputs + [""] * (op_named(op.op).fuse_slots - len(op.inputs))
    return [Node(op.name, fused_name(op.op), inputs + rqs.inputs[1:], rqs.outputs, attrs, rqs.domain)]


def _bias_add(graph: Graph, chain: list[Node]) -> str | None:
    mm, add = chain
    bias = [i for i in add.inputs if i != mm.outputs[0]]
    if len(bias) != 1 or not graph.is_constant(bias[0]):
        return "the Add's other input is not a constant"
    b, out = graph.tensors[bias[0]], graph.tensors[add.outputs[0]]
    a = graph.tensors[mm.inputs[0]]
    if len(a.shape) > 3 or len(graph.tensors[mm.inputs[1]].shape) != 2:
        return "Gemm takes a rank-2 or rank-3 A and a rank-2 B"
    if b.size != out.shape[-1] or (b.shape and b.shape[-1] != out.shape[-1]):
        return "the bias is not a per-column vector"
    return None


def _to_gemm(graph: Graph, chain: list[Node]) -> list[Node]:
    mm, add = chain
    bias = next(i for i in add.inputs if i != mm.outputs[0])
    return [Node(mm.name, "Gemm", mm.inputs + [bias], add.outputs, {}, "")]


REQUANT_FUSION = RuleSet("requant_fusion", (
    Rule("matmul_bias_to_gemm", chain("MatMul", "Add"), _bias_add, _to_gemm),
    *(Rule(f"{op.lower()}_requant", chain(op, "RequantShift"), _wide_output_feeds_x, _fuse) for op in FUSABLE),
))


def fuse_requant(graph: Graph, log=None) -> tuple[Graph, bool]:
    return apply_rules(graph, REQUANT_FUSION, log)
