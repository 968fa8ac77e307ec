"""Reductions: ReduceSum (int32 output, int64 when count * max|x| needs it), and the integer means ReduceMean and IntegerMean, which
round half up, ``floor(sum/n + 1/2)``, and keep the input's type (see specs/integer-ops.md);
ReduceMax and ReduceMin keep the input's type; ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum,
ReduceLogSumExp and ReduceProd compute on floats; ArgMax and ArgMin give the int64 index of the
first (``select_last_index``: last) extremum along one axis, on any data type.

Axes come from the ``axes`` attribute or (ReduceSum >= 13, ReduceMean >= 18) a constant input;
no axes reduce everything unless ``noop_with_empty_axes`` is set."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT32, INT64
from Deeploy.ops._attrs import attr_int, attr_ints, const_input, in_tensor, normalize_axis, require_inputs
from Deeploy.ops.bounds import all_integer, check_int64, magnitude, sum_type
from Deeploy.ops.examples import I8, I32, F32, F64, Case, act, const, frand, rand, i64
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["ReduceParams", "ArgParams", "mean_round_half_up"]


@dataclass(frozen=True)
class ReduceParams:
    """Sorted, non-negative reduced axes (empty: the identity) and whether they are kept."""

    in_shape: tuple[int, ...]
    axes: tuple[int, ...]
    keepdims: bool

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.keepdims:
            return tuple(1 if k in self.axes else d for k, d in enumerate(self.in_shape))
        return tuple(d for k, d in enumerate(self.in_shape) if k not in self.axes)

    @property
    def count(self) -> int:
        """Number of input values summed into each output value."""
        return int(np.prod([self.in_shape[a] for a in self.axes], dtype=np.int64))


def _reduce_parse(node, graph, allow_input_axes=True):
    if allow_input_axes:
        require_inputs(node, 1, 2)
    else:
        require_inputs(node, 1)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    rank = len(shape)
    if in_tensor(node, graph, 1) is not None:
        if "axes" in node.attrs:
            raise OpError(node, "axes given both as attribute and as input")
        axes = [int(a) for a in const_input(node, graph, 1, "axes").reshape(-1)]
    else:
        axes = attr_ints(node, "axes", None)
        axes = None if axes is None else list(axes)
    keepdims = bool(attr_int(node, "keepdims", 1))
    if not axes:
        axes = [] if attr_int(node, "noop_with_empty_axes", 0) else list(range(rank))
    norm = sorted(normalize_axis(node, a, rank, "axes") for a in axes)
    if len(set(norm)) != len(norm):
        raise OpError(node, f"axes {axes} repeat an axis")
    return ReduceParams(shape, tuple(norm), keepdims)


def _mean_parse(node, graph, allow_input_axes=True):
    p = _reduce_parse(node, graph, allow_input_axes)
    if p.count == 0:
        raise OpError(node, f"the mean over the empty axes {list(p.axes)} of {list(p.in_shape)} "
                      "is undefined")
    return p


def _sum(p: ReduceParams, x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "f":   # float: summed in double, rounded once to float32
        return np.sum(x, axis=p.axes, keepdims=p.keepdims, dtype=np.float64).astype(np.float32).reshape(p.out_shape)
    return np.sum(x, axis=p.axes, keepdims=p.keepdims, dtype=np.int64).reshape(p.out_shape)


def mean_round_half_up(total: np.ndarray, count: int) -> np.ndarray:
    """``floor(total/count + 1/2)`` exactly, on int64."""
    return np.floor_divide(2 * total + count, 2 * count)


def _mean_reference(p: ReduceParams, xs):
    if xs[0].dtype.kind == "f":
        total = np.sum(xs[0], axis=p.axes, keepdims=p.keepdims, dtype=np.float64)
        return [(total / p.count).astype(np.float32).reshape(p.out_shape)]
    return [mean_round_half_up(_sum(p, xs[0]), p.count)]


def _reduce_cost(p: ReduceParams, ins, outs):
    return Cost(ops=ins[0].size + 2 * outs[0].size, bytes=ins[0].nbytes + outs[0].nbytes)


def _sum_parse(node, graph):
    p = _reduce_parse(node, graph)
    x = graph.tensors[node.inputs[0]]
    if all_integer([x]):
        check_int64(node, p.count * magnitude(x), "the sums", [x])
    return p


def _sum_infer(p: ReduceParams, ins):
    """int32, or int64 when count * max|x| exceeds int32."""
    if ins[0].dtype.is_float:
        return [(p.out_shape, ins[0].dtype)]
    return [(p.out_shape, sum_type(p.count * magnitude(ins[0])) if all_integer(ins[:1]) else INT32)]


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _reducesum_cases(rng):
    def red(label, shape, axes=None, opset=13, **attrs):
        operands = (act(rand(rng, shape, -30000, 30000), I32),)
        if axes is not None and opset >= 13:
            operands += (const(i64(*axes)),)
        elif axes is not None:
            attrs["axes"] = axes
        return Case(label, operands, attrs, opset=opset)
    return [red("axes_input_keepdims", [2, 3, 4], [1]),
            red("negative_axes_dropped", [2, 3, 4], [-1, 0], keepdims=0),
            red("all_axes", [2, 3, 4]),
            red("noop_empty_axes", [2, 3], noop_with_empty_axes=1),
            red("opset11_attribute", [2, 3, 4], [2], opset=11, keepdims=0),
            Case("float32", (act(frand(rng, [3, 4, 5]), F32), const(i64(1))))]


def _reducemean_cases(rng):
    return [
        Case("axis_attr_ties", (act(rand(rng, [2, 4, 3], -3, 3), F64),), dict(axes=[1])),
        Case("float32_two_axes", (act(frand(rng, [2, 6, 5]), F32),), dict(axes=[0, 2], keepdims=0)),
        Case("global_average_pool", (act(rand(rng, [1, 3, 4, 4]), F64),), dict(axes=[2, 3])),
        Case("opset18_axes_input_ties", (act(rand(rng, [3, 5, 2], -4, 4), F64), const(i64(-1))),
             dict(keepdims=0), opset=18),
        Case("all_axes", (act(rand(rng, [2, 3, 2]), F64),), dict(keepdims=0)),
    ]


def _integer_mean_cases(rng):
    def mean(label, x, **attrs):
        return Case(label, (act(x, F32),), attrs)
    return [
        mean("axis1_dropped", rand(rng, [2, 5, 6]), axes=[1], keepdims=0),
        mean("spatial_keepdims", rand(rng, [1, 4, 3, 3]), axes=[2, 3], keepdims=1),
        mean("ties_default_keepdims", rand(rng, [6, 2], -3, 3), axes=[-1]),
        mean("two_axes_of_three", rand(rng, [4, 3, 2]), axes=[0, 2], keepdims=0),
    ]


register(OpDef("ReduceSum", _sum_parse, _sum_infer,
               lambda p, xs: [_sum(p, xs[0])], _reduce_cost,
               traits=frozenset({Trait.STANDARD, Trait.REDUCTION, Trait.TWO_STAGE}), tiling="reduce",
               magnitude=lambda p, b, ins, outs: [b[0] * max(p.count, 1)],
               examples=_reducesum_cases))
register(OpDef("ReduceMean", _mean_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
               _mean_reference, _reduce_cost,
               traits=frozenset({Trait.STANDARD, Trait.REDUCTION, Trait.TWO_STAGE}), tiling="reduce",
               examples=_reducemean_cases))
register(OpDef("IntegerMean", lambda node, graph: _mean_parse(node, graph, False),
               lambda p, ins: [(p.out_shape, ins[0].dtype)], _mean_reference, _reduce_cost,
               traits=frozenset({Trait.REDUCTION}), tiling="reduce",
               examples=_integer_mean_cases))


# ---- ReduceMax, ReduceMin -----------------------------------------------------------------------
def _nonempty_parse(node, graph):
    p = _reduce_parse(node, graph)
    if p.count == 0:
        raise OpError(node, f"a reduction over the empty axes {list(p.axes)} of {list(p.in_shape)} is not supported")
    return p


def _extremum_cases(rng):
    return [Case("axes_attr", (act(frand(rng, [2, 3, 4]), F32),), dict(axes=[1])),
            Case("two_axes_dropped", (act(frand(rng, [3, 4, 5]), F32),), dict(axes=[0, -1], keepdims=0)),
            Case("axes_input", (act(frand(rng, [2, 5, 3]), F32), const(i64(2))), opset=18),
            Case("all_axes", (act(frand(rng, [4, 3]), F32),), dict(keepdims=0))]


for _name, _fn in (("ReduceMax", np.max), ("ReduceMin", np.min)):
    register(OpDef(_name, _nonempty_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
                   lambda p, xs, fn=_fn: [fn(xs[0], axis=p.axes, keepdims=p.keepdims).reshape(p.out_shape)],
                   _reduce_cost, traits=frozenset({Trait.STANDARD, Trait.REDUCTION}), tiling="reduce",
                   examples=_extremum_cases))


# ---- ReduceL1, ReduceL2, ReduceSumSquare, ReduceLogSum, ReduceLogSumExp, ReduceProd: float ----
def _float_fold_parse(node, graph):
    from Deeploy.ops.float_math import require_float
    require_float(node, graph)
    return _nonempty_parse(node, graph)


def _float_fold(fn):
    """The reference of a float reduction ``fn(x, axes)``: in double, rounded once to float32."""
    def reference(p: ReduceParams, xs):
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            y = fn(xs[0].astype(np.float64), p.axes)
        return [np.asarray(y).astype(np.float32).reshape(p.out_shape)]
    return reference


def _float_fold_cases(rng):
    return [Case("axes_attr", (act(frand(rng, [2, 3, 4], 0.1, 2.0), F32),), dict(axes=[1])),
            Case("axes_input_dropped", (act(frand(rng, [3, 2, 4], 0.1, 2.0), F32), const(i64(0, -1))),
                 dict(keepdims=0), opset=18)]


_FLOAT_FOLDS = {
    "ReduceL1": lambda x, a: np.sum(np.abs(x), axis=a),
    "ReduceL2": lambda x, a: np.sqrt(np.sum(x * x, axis=a)),
    "ReduceSumSquare": lambda x, a: np.sum(x * x, axis=a),
    "ReduceLogSum": lambda x, a: np.log(np.sum(x, axis=a)),
    "ReduceLogSumExp": lambda x, a: np.log(np.sum(np.exp(x), axis=a)),
    "ReduceProd": lambda x, a: np.prod(x, axis=a),
}
for _name, _fn in _FLOAT_FOLDS.items():
    register(OpDef(_name, _float_fold_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)], _float_fold(_fn),
                   _reduce_cost, traits=frozenset({Trait.STANDARD, Trait.REDUCTION, Trait.FLOAT_ONLY}),
                   tiling="reduce", examples=_float_fold_cases))


# ---- GlobalAveragePool, GlobalMaxPool: reductions over the spatial axes ----------------------
def _global_parse(node, graph):
    require_inputs(node, 1)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if len(shape) < 3:
        raise OpError(node, f"expects an input [N, C, spatial...], got {list(shape)}")
    if node.op == "GlobalAveragePool":
        from Deeploy.ops.float_math import require_float
        require_float(node, graph, "; integer networks use ReduceMean or IntegerMean")
    return ReduceParams(shape, tuple(range(2, len(shape))), True)


def _global_max(p: ReduceParams, xs):
    return [np.max(xs[0], axis=p.axes, keepdims=True)]


def _global_cases(rng):
    return [Case("float32_2d", (act(frand(rng, [2, 3, 4, 5]), F32),)),
            Case("float32_1d", (act(frand(rng, [1, 4, 7]), F32),))]


register(OpDef("GlobalAveragePool", _global_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
               _mean_reference, _reduce_cost, traits=frozenset({Trait.STANDARD, Trait.REDUCTION, Trait.FLOAT_ONLY}),
               tiling="channels",
               examples=_global_cases))
register(OpDef("GlobalMaxPool", _global_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
               _global_max, _reduce_cost, traits=frozenset({Trait.STANDARD, Trait.REDUCTION}), tiling="channels",
               examples=_global_cases))


# ---- ArgMax, ArgMin: the index of the extremum along one axis -----------------------------------
@dataclass(frozen=True)
class ArgParams(ReduceParams):
    """A reduction over one axis (``axes``) giving the index of its first or last extremum."""

    select_last: bool = False


def _arg_parse(node, graph):
    require_inputs(node, 1)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(shape))
    if shape[axis] == 0:
        raise OpError(node, f"the {node.op} over the empty axis {axis} of {list(shape)} is undefined")
    return ArgParams(shape, (axis,), bool(attr_int(node, "keepdims", 1)),
                     bool(attr_int(node, "select_last_index", 0)))


def _arg_reference(fn):
    def reference(p: ArgParams, xs):
        x, axis = xs[0], p.axes[0]
        if p.select_last:   # the last extremum is the first of the reversed axis
            index = x.shape[axis] - 1 - fn(np.flip(x, axis), axis=axis)
        else:
            index = fn(x, axis=axis)
        return [index.astype(np.int64).reshape(p.out_shape)]
    return reference


def _arg_cases(rng):
    ties = lambda shape: act(rand(rng, shape, -3, 3), I8)   # noqa: E731: few values, many ties
    return [Case("int8_ties_axis1", (ties([3, 6, 2]),), dict(axis=1), out_type="int64"),
            Case("int8_ties_last_index", (ties([4, 5]),), dict(axis=-1, select_last_index=1), out_type="int64"),
            Case("float32_dropped", (act(frand(rng, [2, 3, 4]), F32),), dict(axis=0, keepdims=0), out_type="int64"),
            Case("int32_default_axis", (act(rand(rng, [5, 3], -2**31, 2**31 - 1), I32),), out_type="int64"),
            Case("int8_middle_axis_12kb", (ties([32, 24, 16]),), dict(axis=1), out_type="int64")]


for _name, _fn in (("ArgMax", np.argmax), ("ArgMin", np.argmin)):
    register(OpDef(_name, _arg_parse, lambda p, ins: [(p.out_shape, INT64)], _arg_reference(_fn), _reduce_cost,
                   traits=frozenset({Trait.STANDARD, Trait.REDUCTION}), tiling="arg_reduce", examples=_arg_cases,
                   magnitude=lambda p, m, ins, outs: [p.in_shape[p.axes[0]] - 1]))
