"""Binary ops with numpy broadcasting: Add, Sub, Mul (integer outputs int32, int64 when an operand
holds values beyond int32); Max, Min (outputs the narrowest type holding both inputs' values).
Max, Min, Sum (Add's types) and Mean (float) are variadic: one or more inputs, all broadcast onto
the output; ``passes/variadic.py`` lowers other counts than two (and every Sum and Mean) to
binary nodes.
Under ONNX integer semantics (``Graph.onnx_integers``) both operands have one integer type, which
the output keeps: Add, Sub and Mul wrap around in it. With a float operand they compute in
float32 and output the float type (``float_result``)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, INT64, DType, float_result, widest, wrapped
from Deeploy.ops._attrs import broadcast_shape, refuse_axis_broadcast, require_inputs
from Deeploy.ops.bounds import all_integer, value_bounds
from Deeploy.ops.examples import F32, I8, I32, Case, act, const, frand, rand
from Deeploy.ops.float_math import require_float
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["BinaryParams"]


@dataclass(frozen=True)
class BinaryParams:
    """Output shape of a broadcasting binary op; ``onnx_type``: the integer type of both operands
    and the output under ONNX integer semantics (None: the op widens)."""

    shape: tuple[int, ...]
    onnx_type: DType | None = None


def _binary_parse(node, graph, variadic: bool = False):
    if variadic:
        require_inputs(node, 1, len(node.inputs) or 1)
    else:
        require_inputs(node, 2)
        refuse_axis_broadcast(node, graph)
    ins = [graph.tensors[i] for i in node.inputs if i]
    shape = broadcast_shape(node, [t.shape for t in ins])
    if not graph.onnx_integers or not all(t.dtype.is_integer for t in ins):
        return BinaryParams(shape)
    other = next((t for t in ins if t.dtype != ins[0].dtype), None)
    if other is not None:
        raise OpError(node, f"operands '{ins[0].name}' ({ins[0].dtype}) and '{other.name}' ({other.dtype}) "
                      "differ in type; ONNX requires one type: Cast one of them")
    return BinaryParams(shape, ins[0].dtype)


def _variadic_parse(node, graph):
    if node.op == "Mean":
        require_float(node, graph)
    return _binary_parse(node, graph, variadic=True)


def _beyond_int32(t) -> bool:
    lo, hi = value_bounds(t)
    return lo < -2**31 or hi >= 2**31


def _binary_infer(p: BinaryParams, ins):
    """int32 (the operands' values are taken to keep the result within int32, as the spec's
    networks do); int64 when an operand itself holds values beyond int32."""
    floating = float_result(*(t.dtype for t in ins))
    if floating is not None:
        return [(p.shape, floating)]
    if p.onnx_type is not None:
        return [(p.shape, p.onnx_type)]
    wide = all_integer(ins) and any(_beyond_int32(t) for t in ins)
    return [(p.shape, INT64 if wide else INT32)]


def _binary_cost(p: BinaryParams, ins, outs):
    ops = max(1, len(ins) - 1) * int(np.prod(p.shape))
    return Cost(ops=ops, bytes=sum(t.nbytes for t in ins if t is not None) + outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def binary_cases(rng):
    return [
        Case("same_shape", (act(rand(rng, [2, 3, 4]), I32), act(rand(rng, [2, 3, 4]), I32))),
        Case("const_row_broadcast", (act(rand(rng, [2, 3, 4]), I32),
                                     const(rand(rng, [4], -1000, 1000), I32))),
        Case("both_broadcast", (act(rand(rng, [2, 1, 5]), I32), act(rand(rng, [3, 1]), I32))),
        Case("scalar_const", (act(rand(rng, [3, 5]), I32), const(np.array(-7), I32))),
        Case("int16_range", (act(rand(rng, [4, 6], -32768, 32767), I32),
                             act(rand(rng, [4, 6], -32768, 32767), I32))),
        Case("float32", (act(frand(rng, [2, 3, 4]), F32), act(frand(rng, [3, 1]), F32))),
        Case("float32_const", (act(frand(rng, [3, 5]), F32), const(np.array([0.625], F32)))),
    ]


_BINARY = frozenset({Trait.STANDARD, Trait.ELEMENTWISE, Trait.BROADCASTING})

_GROWTH = {"Add": lambda a, b: a + b, "Sub": lambda a, b: a + b, "Mul": lambda a, b: a * b}

def _arithmetic(fn):
    """The reference of Add, Sub, Mul or Sum: exact, or wrapped around in the ONNX integer type."""
    def reference(p: BinaryParams, xs):
        y = np.broadcast_to(functools.reduce(fn, [x for x in xs if x is not None]), p.shape)
        return [y if p.onnx_type is None else wrapped(y, p.onnx_type)]
    return reference


for _name, _fn in (("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply)):
    register(OpDef(_name, _binary_parse, _binary_infer, _arithmetic(_fn), _binary_cost,
                   traits=_BINARY, tiling="broadcast", fuse_slots=0 if _name in ("Add", "Mul") else None, examples=binary_cases,
                   magnitude=lambda p, b, ins, outs, grow=_GROWTH[_name]: [grow(b[0], b[1])]))


def _extremum_infer(p: BinaryParams, ins):
    floating = float_result(*(t.dtype for t in ins if t is not None))
    if floating is not None:
        return [(p.shape, floating)]
    return [(p.shape, p.onnx_type or widest(*(t.dtype for t in ins if t is not None)))]


def _mean_reference(p: BinaryParams, xs):
    xs = [x.astype(np.float64) for x in xs if x is not None]
    return [np.broadcast_to(functools.reduce(np.add, xs) / len(xs), p.shape).astype(np.float32)]


def variadic_cases(rng):
    return [
        Case("one_input", (act(rand(rng, [2, 3]), I32),)),
        Case("three_broadcast", (act(rand(rng, [2, 3, 4]), I32), const(rand(rng, [4]), I32),
                                 act(rand(rng, [3, 1]), I32))),
        Case("four_int8", (act(rand(rng, [3, 5]), I8), act(rand(rng, [3, 5]), I8), act(rand(rng, [1, 5]), I8),
                           const(rand(rng, [3, 1]), I8))),
        Case("three_float32", (act(frand(rng, [2, 3]), F32), act(frand(rng, [3]), F32), act(frand(rng, [2, 1]), F32))),
    ]


def _float_variadic_cases(rng):
    return [
        Case("one_input", (act(frand(rng, [2, 3]), F32),)),
        Case("two", (act(frand(rng, [2, 3]), F32), act(frand(rng, [3]), F32))),
        Case("three_broadcast", (act(frand(rng, [2, 3, 4]), F32), const(frand(rng, [4]), F32),
                                 act(frand(rng, [3, 1]), F32))),
    ]


_VARIADIC = frozenset({Trait.STANDARD, Trait.ELEMENTWISE, Trait.LOWERED})   # passes/variadic.py
for _name, _fn in (("Max", np.maximum), ("Min", np.minimum)):
    register(OpDef(_name, _variadic_parse, _extremum_infer,
                   lambda p, xs, fn=_fn: [np.broadcast_to(functools.reduce(fn, [x for x in xs if x is not None]),
                                                          p.shape)], _binary_cost,
                   traits=_BINARY, tiling="broadcast", examples=lambda rng: binary_cases(rng) + variadic_cases(rng),
                   magnitude=lambda p, b, ins, outs: [max(b)]))
register(OpDef("Sum", _variadic_parse, _binary_infer, _arithmetic(np.add), _binary_cost, traits=_VARIADIC,
               examples=_float_variadic_cases, magnitude=lambda p, b, ins, outs: [sum(b)]))
register(OpDef("Mean", _variadic_parse, _extremum_infer, _mean_reference, _binary_cost, traits=_VARIADIC,
               examples=_float_variadic_cases, magnitude=lambda p, b, ins, outs: [max(b)]))
