"""Reading ONNX attributes and constant inputs the way QuantLib-style files write them:
plain INT/FLOAT/INTS, or 1-element TENSOR attributes of rank 0 or 1."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.graph import Graph, Node, Tensor

__all__ = ["attr_int", "attr_ints", "attr_str", "attr_float", "const_input", "const_float", "is_float_input",
           "require_inputs", "old_form", "refuse_axis_broadcast",
           "is_pow2", "log2_exact", "broadcast_shape", "normalize_axis", "in_tensor"]

_MISSING = object()


def _raw(node: Node, name: str, default: Any) -> Any:
    value = node.attrs.get(name, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise OpError(node, f"missing required attribute '{name}'")
        return default
    return value


def _as_number(node: Node, name: str, value: Any) -> float:
    if type(value) in (int, float):   # the common case, without an array
        return float(value)
    arr = np.asarray(value)
    if arr.size != 1:
        raise OpError(node, f"attribute '{name}' must hold one value, got {arr.size}")
    try:
        return float(arr.reshape(-1)[0])
    except (TypeError, ValueError):
        shown = value.decode(errors="replace") if isinstance(value, bytes) else value
        raise OpError(node, f"attribute '{name}' must be a number, got {shown!r}") from None


def attr_int(node: Node, name: str, default: Any = _MISSING) -> int:
    """An integer attribute; float-typed or tensor-typed values must hold an integer."""
    value = _raw(node, name, default)
    if value is None:
        return value
    number = _as_number(node, name, value)
    if number != int(number):
        raise OpError(node, f"attribute '{name}' must be an integer, got {number}")
    return int(number)


def attr_float(node: Node, name: str, default: Any = _MISSING) -> float:
    value = _raw(node, name, default)
    return value if value is None else _as_number(node, name, value)


def attr_ints(node: Node, name: str, default: Any = _MISSING) -> tuple[int, ...]:
    value = _raw(node, name, default)
    if value is None:
        return value
    arr = np.asarray(value).reshape(-1)
    if not np.all(arr == np.round(arr)):
        raise OpError(node, f"attribute '{name}' must hold integers, got {arr.tolist()}")
    return tuple(int(v) for v in arr)


def attr_str(node: Node, name: str, default: Any = _MISSING) -> str:
    value = _raw(node, name, default)
    return value.decode() if isinstance(value, bytes) else value


def in_tensor(node: Node, graph: Graph, index: int) -> Tensor | None:
    if index >= len(node.inputs) or not node.inputs[index]:
        return None
    return graph.tensors[node.inputs[index]]


def const_input(node: Node, graph: Graph, index: int, what: str, optional: bool = False):
    """The value of constant input ``index`` (int64 array), or None if absent and optional."""
    t = in_tensor(node, graph, index)
    if t is None:
        if optional:
            return None
        raise OpError(node, f"missing input {index} ({what})")
    if not t.is_constant:
        raise OpError(node, f"input {index} ({what}, '{t.name}') must be a constant initializer")
    return np.asarray(t.value, dtype=np.int64)


def const_float(node: Node, graph: Graph, index: int, what: str) -> np.ndarray:
    """The value of constant input ``index`` as float64 (a float network's constant)."""
    const_input(node, graph, index, what)   # present and constant
    return np.asarray(graph.tensors[node.inputs[index]].value, dtype=np.float64)


def is_float_input(node: Node, graph: Graph, index: int = 0) -> bool:
    t = in_tensor(node, graph, index)
    return t is not None and t.dtype is not None and t.dtype.is_float


def require_inputs(node: Node, low: int, high: int | None = None) -> None:
    high = low if high is None else high
    count = len(node.inputs)
    while count and not node.inputs[count - 1]:
        count -= 1
    if not low <= count <= high:
        want = f"{low}" if low == high else f"{low} to {high}"
        raise OpError(node, f"expected {want} inputs, got {count}")


def old_form(node: Node, graph: Graph, what: str, since: int) -> OpError:
    """The error refusing ``what``, a form of the op whose meaning changed at opset ``since``."""
    return OpError(node, f"{what} at opset {graph.opset} is not supported: re-export the model at opset >= {since} "
                   f"or upgrade it with onnx.version_converter")


def refuse_axis_broadcast(node: Node, graph: Graph) -> None:
    """Before opset 7 a binary op with ``broadcast=1`` and an ``axis`` aligns its second operand
    at that axis, not at the end as numpy (and opset >= 7) does."""
    if graph.opset_below(7) and "axis" in node.attrs and attr_int(node, "broadcast", 0):
        raise old_form(node, graph, "broadcasting the second operand along 'axis'", 7)


def is_pow2(value: int) -> bool:
    return value > 0 and value & (value - 1) == 0


def log2_exact(node: Node, name: str, value: int) -> int:
    if not is_pow2(value):
        raise OpError(node, f"attribute '{name}' must be a power of two, got {value}")
    return value.bit_length() - 1


def broadcast_shape(node: Node, shapes: Sequence[tuple[int, ...]]) -> tuple[int, ...]:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        raise OpError(node, f"input shapes {' and '.join(str(list(s)) for s in shapes)} "
                      "do not broadcast") from None


def normalize_axis(node: Node, axis: int, rank: int, name: str = "axis") -> int:
    if not -rank <= axis < rank:
        raise OpError(node, f"{name} {axis} is out of range for a rank-{rank} input")
    return axis % rank
