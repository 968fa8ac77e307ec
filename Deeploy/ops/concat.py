"""Concat along one axis (negative axes count from the end). Zero-sized inputs (an empty KV
cache) are allowed; the output type holds the values of every non-empty input."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import widest, float_result
from Deeploy.ops._attrs import attr_int, normalize_axis, old_form
from Deeploy.ops.examples import I8, I32, Case, act, const, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["ConcatParams"]


@dataclass(frozen=True)
class ConcatParams:
    """The (non-negative) axis and the input shapes, in input order."""

    axis: int
    in_shapes: tuple[tuple[int, ...], ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        first = self.in_shapes[0]
        return first[:self.axis] + (sum(s[self.axis] for s in self.in_shapes),) + first[self.axis + 1:]


def _concat_parse(node, graph):
    names = [i for i in node.inputs if i]
    if not names or len(names) != len(node.inputs):
        raise OpError(node, "expected one or more inputs, none of them omitted")
    shapes = [tuple(graph.tensors[i].shape) for i in names]
    rank = len(shapes[0])
    if rank == 0:
        raise OpError(node, "cannot concatenate scalars")
    if "axis" not in node.attrs and graph.opset_below(4):
        raise old_form(node, graph, "the default axis", 4)
    axis = normalize_axis(node, attr_int(node, "axis"), rank)
    for name, shape in zip(names, shapes):
        if len(shape) != rank or any(d != e for k, (d, e) in enumerate(zip(shape, shapes[0]))
                                     if k != axis):
            raise OpError(node, f"input '{name}' of shape {list(shape)} does not match "
                          f"{list(shapes[0])} outside axis {axis}")
    return ConcatParams(axis, tuple(shapes))


def _concat_infer(p: ConcatParams, ins):
    filled = [t.dtype for t in ins if t.size > 0] or [t.dtype for t in ins]
    return [(p.out_shape, float_result(*filled) or widest(*filled))]


def _concat_cost(p: ConcatParams, ins, outs):
    return Cost(ops=0, bytes=sum(t.nbytes for t in ins) + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _concat_cases(rng):
    return [
        Case("axis1_three_inputs", (act(rand(rng, [2, 1, 3]), I8), act(rand(rng, [2, 4, 3]), I8),
                                    act(rand(rng, [2, 2, 3]), I8)), dict(axis=1)),
        Case("negative_axis", (act(rand(rng, [3, 2]), I8), act(rand(rng, [3, 5]), I8)),
             dict(axis=-1)),
        Case("empty_kv_cache", (act(np.zeros([1, 2, 0, 4]), I8), act(rand(rng, [1, 2, 3, 4]), I8)),
             dict(axis=2)),
        Case("wide_constant", (act(rand(rng, [2, 3]), I32),
                               const(rand(rng, [1, 3], -30000, 30000), I32)), dict(axis=0)),
    ]


register(OpDef("Concat", _concat_parse, _concat_infer,
               lambda p, xs: [np.concatenate(xs, axis=p.axis)], _concat_cost,
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT}), tiling="concat",
               magnitude=lambda p, b, ins, outs: [max(b)],
               examples=_concat_cases))
