"""Requantised operators made by the lowering passes: ``Op -> RequantShift`` fused into one
node ``Requantized<Op>`` whose inputs are Op's inputs followed by RequantShift's mul and add,
and whose attributes are Op's plus RequantShift's (div, n_levels_out, signed). Every op
registered with ``fuse_slots`` gets its fused form here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from Deeploy.ir.dtypes import smallest_int_type
from Deeploy.ir.graph import Node
from Deeploy.ops._registry import Cost, OpDef, Trait, op_named, register, registered_ops
from Deeploy.ops.requant import REQUANT_ATTRS, RequantParams, requant_params, requantize

__all__ = ["FusedParams", "FUSABLE", "fused_name", "is_fused"]

FUSABLE = tuple(name for name, op in registered_ops().items() if op.fuse_slots is not None)


@dataclass(frozen=True)
class FusedParams:
    """The base op's params and the requantisation applied to its output."""

    base: Any
    rq: RequantParams
    base_op: str


def fused_name(base_op: str) -> str:
    return "Requantized" + base_op


def is_fused(op: str) -> bool:
    """Whether ``op`` is a fused ``Requantized<Op>`` (its params are ``FusedParams``)."""
    return op in _FUSED


def _base_node(node: Node, base_op: str) -> Node:
    """The base op's node: without the requantisation's attributes. A fused node with
    ``n_levels_out`` (as the fusion pass writes it) keeps ``n_levels`` for its base op (iSoftmax's
    output levels); without, ``n_levels`` is the requantisation's."""
    own = {"n_levels"} if "n_levels_out" in node.attrs else set()
    attrs = {k: v for k, v in node.attrs.items() if k not in REQUANT_ATTRS or k in own}
    return Node(node.name, base_op, node.inputs[:-2], node.outputs, attrs, node.domain)


def _make(base_op: str) -> OpDef:
    def parse(node, graph):
        base = op_named(base_op)
        base_params = base.parse(_base_node(node, base_op), graph)
        ins = [graph.tensors[i] if i else None for i in node.inputs[:-2]]
        (shape, _), = base.infer(base_params, ins)[:1]
        mul, add = graph.tensors[node.inputs[-2]], graph.tensors[node.inputs[-1]]
        if getattr(base_params, "channels_last", False):
            # per-channel constants are validated against the NCHW view, applied along the last axis
            nchw = (shape[0], shape[-1]) + tuple(shape[1:-1])
            rq = requant_params(node, nchw, mul, add)
            if rq.channels > 1:
                rq = replace(rq, outer=rq.outer * rq.inner, inner=1)
            return FusedParams(base_params, rq, base_op)
        return FusedParams(base_params, requant_params(node, shape, mul, add), base_op)

    def infer(p: FusedParams, ins):
        (shape, _), = op_named(base_op).infer(p.base, ins[:-2])[:1]
        return [(shape, smallest_int_type(p.rq.lo, p.rq.hi))]

    def reference(p: FusedParams, xs):
        acc = op_named(base_op).reference(p.base, xs[:-2])[0]
        mul, add = xs[-2], xs[-1]
        view = acc.reshape(p.rq.outer, p.rq.channels, p.rq.inner)
        m = mul.reshape(1, -1, 1) if p.rq.mul_per_channel else mul.reshape(1, 1, 1)
        a = add.reshape(1, -1, 1) if p.rq.add_per_channel else add.reshape(1, 1, 1)
        return [requantize(view * m + a, p.rq.shift, p.rq.lo, p.rq.hi).reshape(acc.shape)]

    def cost(p: FusedParams, ins, outs):
        base = op_named(base_op).cost(p.base, ins[:-2], outs)
        return Cost(base.ops + 4 * outs[0].size, base.bytes)

    base = op_named(base_op)
    return OpDef(fused_name(base_op), parse, infer, reference, cost, traits=base.traits - {Trait.STANDARD},
                 tiling=f"requantized_{base.tiling}", value_attrs=base.value_attrs)


for _op in FUSABLE:
    register(_make(_op))
_FUSED = frozenset(fused_name(op) for op in FUSABLE)
