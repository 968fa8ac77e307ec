"""Reshape, Flatten, Squeeze, Unsqueeze, Identity: views of their input (zero copy, the
output aliases the input buffer); Transpose: a data movement."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from onnx import numpy_helper

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT64, UINT8, DType, dtype_by_name
from Deeploy.ops._attrs import attr_int, attr_ints, const_input, normalize_axis, require_inputs
from Deeploy.ops.examples import I8, U8, I32, Case, act, const, rand, i64
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["ViewParams", "TransposeParams"]


@dataclass(frozen=True)
class ViewParams:
    """The new shape of a view."""

    shape: tuple[int, ...]


def _reshape_parse(node, graph):
    x = graph.tensors[node.inputs[0]]
    if "shape" in node.attrs:   # opset < 5: an attribute
        require_inputs(node, 1)
        target = list(attr_ints(node, "shape"))
    else:
        require_inputs(node, 2)
        target = [int(v) for v in const_input(node, graph, 1, "shape").reshape(-1)]
    allow_zero = attr_int(node, "allowzero", 0)
    out = [x.shape[k] if v == 0 and not allow_zero and k < len(x.shape) else v
           for k, v in enumerate(target)]
    if out.count(-1) > 1:
        raise OpError(node, f"shape {target} has more than one -1")
    if -1 in out:
        known = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if known == 0 or x.size % known:
            raise OpError(node, f"cannot reshape {list(x.shape)} to {target}")
        out[out.index(-1)] = x.size // known
    if int(np.prod(out, dtype=np.int64)) != x.size:
        raise OpError(node, f"cannot reshape {list(x.shape)} ({x.size} elements) to {target}")
    return ViewParams(tuple(out))


def _flatten_parse(node, graph):
    require_inputs(node, 1)
    shape = graph.tensors[node.inputs[0]].shape
    axis = attr_int(node, "axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis <= len(shape):
        raise OpError(node, f"axis {axis} is out of range for a rank-{len(shape)} input")
    prod = lambda dims: int(np.prod(dims, dtype=np.int64))  # noqa: E731
    return ViewParams((prod(shape[:axis]), prod(shape[axis:])))


def _axes(node, graph, rank):
    if len(node.inputs) > 1 and node.inputs[1]:
        axes = [int(v) for v in const_input(node, graph, 1, "axes").reshape(-1)]
    else:
        axes = attr_ints(node, "axes", None)
    return None if axes is None else sorted(normalize_axis(node, a, rank, "axes") for a in axes)


def _squeeze_parse(node, graph):
    require_inputs(node, 1, 2)
    shape = graph.tensors[node.inputs[0]].shape
    axes = _axes(node, graph, len(shape))
    if axes is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    for a in axes:
        if shape[a] != 1:
            raise OpError(node, f"cannot squeeze axis {a} of size {shape[a]}")
    return ViewParams(tuple(d for k, d in enumerate(shape) if k not in axes))


def _unsqueeze_parse(node, graph):
    require_inputs(node, 1, 2)
    shape = list(graph.tensors[node.inputs[0]].shape)
    rank = len(shape) + len(_raw_axes(node, graph))
    for a in _axes(node, graph, rank):
        shape.insert(a, 1)
    return ViewParams(tuple(shape))


def _raw_axes(node, graph):
    if len(node.inputs) > 1 and node.inputs[1]:
        return const_input(node, graph, 1, "axes").reshape(-1)
    axes = attr_ints(node, "axes", None)
    if axes is None:
        raise OpError(node, "missing 'axes'")
    return axes


def _identity_parse(node, graph):
    require_inputs(node, 1)
    return ViewParams(tuple(graph.tensors[node.inputs[0]].shape))


def _view_infer(p: ViewParams, ins):
    return [(p.shape, ins[0].dtype)]


def _view_cost(p, ins, outs):
    return Cost(0, 0)


# ---- test records: a few one-node cases per op (DeeployTest/test_suite/test_op_references.py) ----
def _view_case(rng, label, shape, attrs=None, opset=13, axes=None, dtype=I8, lo=-128, hi=127):
    operands = (act(rand(rng, shape, lo, hi), dtype),)
    if axes is not None:
        operands += (const(i64(*axes)),)
    return Case(label, operands, attrs or {}, opset=opset)


def _reshape_cases(rng):
    return [_view_case(rng, "zero_and_minus_one", [2, 3, 4], axes=[0, -1]),
            _view_case(rng, "split_dims", [6, 4], axes=[2, 3, 2, 2]),
            _view_case(rng, "to_1d", [2, 3, 2], axes=[-1])]


def _flatten_cases(rng):
    return [_view_case(rng, "default_axis", [2, 3, 4]),
            _view_case(rng, "axis0", [2, 3, 4], dict(axis=0)),
            _view_case(rng, "negative_axis", [2, 3, 4, 2], dict(axis=-1)),
            _view_case(rng, "axis_is_rank", [2, 3, 4], dict(axis=3))]


def _squeeze_cases(rng):
    return [_view_case(rng, "axes_input", [1, 3, 1], axes=[0, -1]),
            _view_case(rng, "all_unit_axes", [1, 2, 1, 3]),
            _view_case(rng, "opset11_attribute", [2, 3, 1], dict(axes=[2]), opset=11)]


def _unsqueeze_cases(rng):
    return [_view_case(rng, "axes_input", [2, 3], axes=[0, 3]),
            _view_case(rng, "negative_axis", [2, 3], axes=[-1]),
            _view_case(rng, "opset11_attribute", [2, 3], dict(axes=[1]), opset=11)]


def _identity_cases(rng):
    return [_view_case(rng, "int8", [2, 5]),
            _view_case(rng, "uint8", [3, 4], dtype=U8, lo=0, hi=255)]


def _transpose_cases(rng):
    return [_view_case(rng, "nchw_to_nhwc", [1, 3, 4, 5], dict(perm=[0, 2, 3, 1])),
            _view_case(rng, "default_reverse", [2, 3, 4]),
            _view_case(rng, "wide_2d", [3, 7], dict(perm=[1, 0]), dtype=I32, lo=-2**31,
                       hi=2**31 - 1)]


_VIEW_EXAMPLES = {"Reshape": _reshape_cases, "Flatten": _flatten_cases, "Squeeze": _squeeze_cases,
                  "Unsqueeze": _unsqueeze_cases, "Identity": _identity_cases}

for _name, _parse in (("Reshape", _reshape_parse), ("Flatten", _flatten_parse),
                      ("Squeeze", _squeeze_parse), ("Unsqueeze", _unsqueeze_parse),
                      ("Identity", _identity_parse)):
    register(OpDef(_name, _parse, _view_infer, lambda p, xs: [xs[0].reshape(p.shape)], _view_cost,
                   traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT, Trait.VIEW, Trait.QUANT_TRANSPARENT}),
                   tiling=_name.lower(),
                   examples=_VIEW_EXAMPLES[_name]))


@dataclass(frozen=True)
class TransposeParams:
    """Permutation and input shape of a transpose."""

    perm: tuple[int, ...]
    in_shape: tuple[int, ...]

    @property
    def out_shape(self) -> tuple[int, ...]:
        return tuple(self.in_shape[a] for a in self.perm)


def _transpose_parse(node, graph):
    require_inputs(node, 1)
    shape = graph.tensors[node.inputs[0]].shape
    perm = attr_ints(node, "perm", tuple(reversed(range(len(shape)))))
    if sorted(perm) != list(range(len(shape))):
        raise OpError(node, f"perm {list(perm)} is not a permutation of {len(shape)} axes")
    return TransposeParams(tuple(perm), tuple(shape))
register(OpDef("Transpose", _transpose_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)],
               lambda p, xs: [np.transpose(xs[0], p.perm)],
               lambda p, ins, outs: Cost(0, ins[0].nbytes + outs[0].nbytes),
               traits=frozenset({Trait.STANDARD, Trait.DATA_MOVEMENT, Trait.QUANT_TRANSPARENT}), tiling="transpose",
               examples=_transpose_cases))


# ---- Shape: folds at compile time (a node when its output is a graph output) ---------------------------------------------------------------
@dataclass(frozen=True)
class ShapeParams:
    """The dims of the input from ``start`` to ``end`` (opset 15 attributes, negative from the end)."""

    dims: tuple[int, ...]


def _shape_parse(node, graph):
    require_inputs(node, 1)
    shape = tuple(graph.tensors[node.inputs[0]].shape)
    start, end = attr_int(node, "start", 0), attr_int(node, "end", len(shape))
    return ShapeParams(shape[slice(start, end)])


def _shape_cases(rng):
    return [Case("all_dims", (act(rand(rng, [2, 3, 4]), I8),), opset=15, out_type="int64"),
            Case("start_end", (act(rand(rng, [2, 3, 4, 5]), I8),), dict(start=1, end=-1), opset=15, out_type="int64")]


register(OpDef("Shape", _shape_parse, lambda p, ins: [((len(p.dims),), INT64)],
               lambda p, xs: [np.array(p.dims, dtype=np.int64)], _view_cost,
               traits=frozenset({Trait.STANDARD, Trait.SHAPE_ONLY}), tiling="shape", examples=_shape_cases))


# ---- ConstantOfShape: a constant shape filled with one value; folds at compile time ------------
@dataclass(frozen=True)
class FillParams:
    """The output shape and its one value, of ``dtype`` (the ``value`` attribute's; default float32 0)."""

    shape: tuple[int, ...]
    value: int | float
    dtype: DType


def _fill_parse(node, graph):
    require_inputs(node, 1)
    shape = tuple(int(d) for d in const_input(node, graph, 0, "shape").reshape(-1))
    if any(d < 0 for d in shape):
        raise OpError(node, f"shape {list(shape)} has a negative dim")
    value = np.asarray(node.attrs.get("value", np.zeros(1, np.float32)))
    if value.size != 1:
        raise OpError(node, f"value must hold one element, got {value.size}")
    try:
        dtype = UINT8 if value.dtype == np.bool_ else dtype_by_name(value.dtype.name)
    except ValueError:
        raise OpError(node, f"value of element type {value.dtype} is not supported") from None
    return FillParams(shape, value.reshape(-1)[0].item(), dtype)


def _fill_cases(rng):
    return [Case("float_default_zero", (const(i64(2, 3)),), out_type="float32"),
            Case("int32_value", (const(i64(4, 1, 2)),), dict(value=numpy_helper.from_array(np.array([-7], np.int32))), out_type="int32"),
            Case("float_value", (const(i64(3)),), dict(value=numpy_helper.from_array(np.array([0.25], np.float32))), out_type="float32")]


register(OpDef("ConstantOfShape", _fill_parse, lambda p, ins: [(p.shape, p.dtype)],
               lambda p, xs: [np.full(p.shape, p.value, np.float32 if p.dtype.is_float else np.int64)], _view_cost,
               traits=frozenset({Trait.STANDARD}), examples=_fill_cases))
