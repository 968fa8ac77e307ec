"""Where (select by a condition, the three operands broadcast onto the output) and Expand (the
input broadcast onto a constant shape). Both keep their data's type (Where: the wider of its two
data types, or their float type)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import float_result, widest
from Deeploy.ops._attrs import broadcast_shape, const_input, require_inputs
from Deeploy.ops.examples import F32, I8, I32, I64, U8, Case, act, const, frand, i64, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["BroadcastParams"]


@dataclass(frozen=True)
class BroadcastParams:
    """The output shape its operands broadcast onto."""

    shape: tuple[int, ...]


def _where_parse(node, graph):
    require_inputs(node, 3)
    ins = [graph.tensors[i] for i in node.inputs]
    if ins[0].dtype.is_float:
        raise OpError(node, f"condition '{ins[0].name}' is {ins[0].dtype}; it must be bool or an integer type")
    if (ins[1].dtype.is_float) != (ins[2].dtype.is_float):
        raise OpError(node, f"'{ins[1].name}' ({ins[1].dtype}) and '{ins[2].name}' ({ins[2].dtype}) must both "
                      "be float or both integer")
    return BroadcastParams(broadcast_shape(node, [t.shape for t in ins]))


def _where_infer(p: BroadcastParams, ins):
    data = (ins[1].dtype, ins[2].dtype)
    return [(p.shape, float_result(*data) or widest(*data))]


def _where_cases(rng):
    cond = lambda shape: act(rand(rng, shape, 0, 1).astype(bool))  # noqa: E731
    return [Case("int8_same_shape", (cond([3, 5]), act(rand(rng, [3, 5]), I8), act(rand(rng, [3, 5]), I8)), out_type="int8"),
            Case("float_broadcast", (cond([2, 1, 4]), act(frand(rng, [3, 1]), F32), act(frand(rng, [2, 3, 4]), F32)),
                 out_type="float32"),
            Case("int32_scalar_other", (cond([2, 3, 4]), act(rand(rng, [2, 3, 4], -2**31, 2**31 - 1), I32),
                                        const(np.array(-7, np.int32))), out_type="int32"),
            Case("int64_row_condition", (cond([5]), act(rand(rng, [4, 5], -2**40, 2**40), I64),
                                         act(rand(rng, [4, 1], -2**40, 2**40), I64)), out_type="int64")]


register(OpDef("Where", _where_parse, _where_infer, lambda p, xs: [np.where(xs[0] != 0, xs[1], xs[2])],
               lambda p, ins, outs: Cost(0, sum(t.nbytes for t in ins) + outs[0].nbytes),
               traits=frozenset({Trait.STANDARD, Trait.ELEMENTWISE}), tiling="broadcast",
               magnitude=lambda p, m, ins, outs: [max(m[1], m[2])], examples=_where_cases))


def _expand_parse(node, graph):
    require_inputs(node, 2)
    shape = tuple(int(d) for d in const_input(node, graph, 1, "shape").reshape(-1))
    if any(d < 0 for d in shape):
        raise OpError(node, f"shape {list(shape)} has a negative dim")
    return BroadcastParams(broadcast_shape(node, [graph.tensors[node.inputs[0]].shape, shape]))


def _expand_cases(rng):
    return [Case("row_to_matrix", (act(rand(rng, [1, 5]), I8), const(i64(3, 5)))),
            Case("rank_grows", (act(rand(rng, [3, 1], 0, 255), U8), const(i64(2, 1, 3, 4))), out_type="uint8"),
            Case("shape_of_ones_keeps_dims", (act(frand(rng, [2, 3]), F32), const(i64(1, 1))), out_type="float32"),
            Case("int64_middle_axis", (act(rand(rng, [2, 1, 3], -2**40, 2**40), I64), const(i64(2, 4, 1))))]


register(OpDef("Expand", _expand_parse, lambda p, ins: [(p.shape, ins[0].dtype)],
               lambda p, xs: [np.broadcast_to(xs[0], p.shape).copy()],
               lambda p, ins, outs: Cost(0, ins[0].nbytes + outs[0].nbytes),
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT}), tiling="expand", examples=_expand_cases))
