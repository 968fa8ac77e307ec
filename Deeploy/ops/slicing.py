"""Slice (starts/ends/axes/steps as constant inputs, or attributes in opsets < 10; negative
indices, clamping and negative steps as in ONNX), Split (consecutive parts along one axis) and
Gather (constant indices along one axis). All keep the data's type."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ops._attrs import attr_int, attr_ints, const_input, in_tensor, normalize_axis, require_inputs
from Deeploy.ops.examples import I8, I32, I64, F32, Case, act, const, frand, rand, i64
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["SliceParams", "SplitParams", "GatherParams"]


@dataclass(frozen=True)
class SliceParams:
    """For every axis of the input: the first index, the exclusive stop and the step, already
    normalised and clamped (a negative step stops at ``stop`` = -1 to include index 0)."""

    in_shape: tuple[int, ...]
    starts: tuple[int, ...]
    stops: tuple[int, ...]
    steps: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(max(0, -(-(e - s) // t)) for s, e, t in zip(self.starts, self.stops, self.steps))

    def slices(self) -> tuple[slice, ...]:
        return tuple(slice(s, None if e < 0 else e, t)
                     for s, e, t in zip(self.starts, self.stops, self.steps))


def _slice_values(node, graph):
    if "starts" in node.attrs or "ends" in node.attrs:  # opset < 10
        require_inputs(node, 1)
        starts, ends = attr_ints(node, "starts"), attr_ints(node, "ends")
        axes = attr_ints(node, "axes", None)
        return list(starts), list(ends), None if axes is None else list(axes), None
    require_inputs(node, 3, 5)
    return (_const_list(node, graph, 1, "starts"), _const_list(node, graph, 2, "ends"),
            _const_list(node, graph, 3, "axes", True), _const_list(node, graph, 4, "steps", True))


def _const_list(node, graph, index, what, optional=False):
    value = const_input(node, graph, index, what, optional)
    return None if value is None else [int(v) for v in value.reshape(-1)]


def _slice_parse(node, graph):
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    rank = len(shape)
    starts, ends, axes, steps = _slice_values(node, graph)
    if len(starts) != len(ends):
        raise OpError(node, f"starts {starts} and ends {ends} differ in length")
    axes = list(range(len(starts))) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    if not len(axes) == len(steps) == len(starts):
        raise OpError(node, f"starts {starts}, ends {ends}, axes {axes} and steps {steps} must "
                      "have the same length")
    axes = [normalize_axis(node, a, rank, "axes") for a in axes]
    if len(set(axes)) != len(axes):
        raise OpError(node, f"axes {axes} repeat an axis")
    first, stop, step = [0] * rank, list(shape), [1] * rank
    for a, s, e, t in zip(axes, starts, ends, steps):
        dim = shape[a]
        if t == 0:
            raise OpError(node, f"step along axis {a} is 0")
        s = s + dim if s < 0 else s
        e = e + dim if e < 0 else e
        if t > 0:
            s, e = min(max(s, 0), dim), min(max(e, 0), dim)
        else:
            s, e = min(max(s, 0), dim - 1), min(max(e, -1), dim - 1)
        first[a], stop[a], step[a] = s, e, t
    return SliceParams(shape, tuple(first), tuple(stop), tuple(step))


def _slice_reference(p: SliceParams, xs):
    return [xs[0][p.slices()]]


def _move_cost(p, ins, outs):
    return Cost(ops=0, bytes=2 * outs[0].nbytes)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _slice_cases(rng):
    big = np.iinfo(np.int64)
    def sl(label, shape, *params):
        return Case(label, (act(rand(rng, shape), I8),) + tuple(const(i64(*p)) for p in params))
    return [
        sl("starts_ends", [4, 6], [1, 2], [3, 5]),
        sl("steps_negative_axes", [3, 8, 5], [0, -1], [8, -9], [-2, 2], [3, -2]),
        sl("clamped_ends", [4, 5], [-100, 2], [big.max, big.min], [0, 1], [1, -1]),
        sl("empty_result", [4, 5], [3], [1], [0]),
        Case("opset9_attributes", (act(rand(rng, [3, 4, 5]), F32),),
             dict(starts=[1, -3], ends=[1000, -1], axes=[0, 2]), opset=9),
    ]


def _gather_cases(rng):
    return [
        Case("axis0_vector", (act(rand(rng, [5, 3]), I8), const(i64(3, 0, 4, 3))), dict(axis=0)),
        Case("last_axis_negative_matrix", (act(rand(rng, [2, 3, 6], -30000, 30000), I32),
                                           const(np.array([[-1, 0], [2, -6]]), I32)),
             dict(axis=-1)),
        Case("scalar_index", (act(rand(rng, [4, 5]), I8), const(np.array(2), I64)), dict(axis=1)),
    ]


register(OpDef("Slice", _slice_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
               _slice_reference, _move_cost,
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT, Trait.QUANT_TRANSPARENT}),
               tiling="slice",
               examples=_slice_cases))


@dataclass(frozen=True)
class GatherParams:
    """Constant indices (normalised to non-negative, flattened) taken along ``axis``."""

    axis: int
    data_shape: tuple[int, ...]
    indices: tuple[int, ...]
    indices_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return self.data_shape[:self.axis] + self.indices_shape + self.data_shape[self.axis + 1:]


def _gather_parse(node, graph):
    require_inputs(node, 2)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if not shape:
        raise OpError(node, "cannot gather from a scalar")
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(shape))
    if not in_tensor(node, graph, 1).is_constant:
        raise OpError(node, f"indices ('{node.inputs[1]}') must be a constant initializer")
    indices = const_input(node, graph, 1, "indices")
    dim = shape[axis]
    bad = indices[(indices < -dim) | (indices >= dim)]
    if bad.size:
        raise OpError(node, f"index {int(bad[0])} is out of range for axis {axis} of size {dim}")
    flat = tuple(int(i) % dim for i in indices.reshape(-1))
    return GatherParams(axis, shape, flat, tuple(indices.shape))


def _gather_reference(p: GatherParams, xs):
    idx = np.asarray(p.indices, dtype=np.int64).reshape(p.indices_shape)
    return [np.take(xs[0], idx, axis=p.axis)]


register(OpDef("Gather", _gather_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
               _gather_reference, _move_cost,
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT, Trait.QUANT_TRANSPARENT}),
               tiling="gather",
               examples=_gather_cases))


@dataclass(frozen=True)
class SplitParams:
    """The input's shape and the length of each output along ``axis``."""

    axis: int
    in_shape: tuple[int, ...]
    sizes: tuple[int, ...]

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(int(s) for s in np.cumsum((0,) + self.sizes[:-1]))

    def out_shape(self, k: int) -> tuple[int, ...]:
        return self.in_shape[:self.axis] + (self.sizes[k],) + self.in_shape[self.axis + 1:]


def _split_parse(node, graph):
    require_inputs(node, 1, 2)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    if not shape:
        raise OpError(node, "cannot split a scalar")
    axis = normalize_axis(node, attr_int(node, "axis", 0), len(shape))
    dim, parts = shape[axis], len(node.outputs)
    sizes = _const_list(node, graph, 1, "split", True) if len(node.inputs) > 1 else None
    sizes = sizes if sizes is not None else attr_ints(node, "split", None)   # opset < 13: an attribute
    count = attr_int(node, "num_outputs", None)
    if sizes is None and count is not None:                                 # opset 18: the last part smaller
        if count != parts:
            raise OpError(node, f"num_outputs {count} differs from the node's {parts} outputs")
        chunk = -(-dim // count)
        sizes = [min(chunk, dim - k * chunk) for k in range(count)]
    elif sizes is None:
        if dim % parts:
            raise OpError(node, f"axis {axis} of size {dim} does not split into {parts} equal parts; "
                          "give 'split' sizes")
        sizes = [dim // parts] * parts
    sizes = tuple(int(s) for s in sizes)
    if len(sizes) != parts or any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise OpError(node, f"split sizes {list(sizes)} must be {parts} non-negative lengths summing to {dim} "
                      f"(axis {axis})")
    return SplitParams(axis, shape, sizes)


def _split_reference(p: SplitParams, xs):
    return [np.take(xs[0], range(s, s + n), axis=p.axis) for s, n in zip(p.starts, p.sizes)]


def _split_cases(rng):
    return [
        Case("equal_parts_axis1", (act(rand(rng, [2, 6, 3]), I8),), dict(axis=1), more_outputs=("int8", "int8")),
        Case("sizes_input_negative_axis", (act(rand(rng, [3, 7], -30000, 30000), I32), const(i64(2, 0, 5))),
             dict(axis=-1), more_outputs=("int32", "int32")),
        Case("num_outputs_uneven", (act(frand(rng, [7, 2]), F32),), dict(axis=0, num_outputs=3), opset=18,
             more_outputs=("float32", "float32")),
        Case("opset11_attribute", (act(rand(rng, [4, 5]), I8),), dict(axis=0, split=[1, 3]), opset=11,
             more_outputs=("int8",)),
    ]


register(OpDef("Split", _split_parse, lambda p, ins: [(p.out_shape(k), ins[0].dtype) for k in range(len(p.sizes))],
               _split_reference, lambda p, ins, outs: Cost(0, 2 * ins[0].nbytes),
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT}), tiling="split", examples=_split_cases))
