"""ONNX file -> Graph. Handles the quirks of QuantLib-style exports: nodes out of topological
order, FLOAT-declared integer tensors, Constant nodes, TENSOR-typed attributes, initializers
listed as graph inputs, duplicate opset imports and missing node names.

Float networks: a file whose float-declared constants hold a non-integer value is a float
network and loads as one (float-declared tensors float32, bfloat16-declared ones bfloat16,
integer-declared ones keep their integer type); otherwise float-declared tensors are integers
(fake-float) unless the sample inputs hold non-integer values (``promote_to_float``).

Integer semantics (``integer_semantics``): a file that declares no tensor float, or a float
network, follows ONNX: every integer-declared input and constant keeps its declared type and
integer arithmetic wraps around in it. A QuantLib-style file (an integer network with
float-declared tensors) keeps the rules of specs/integer-ops.md: types come from values and
sums widen."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

from Deeploy.errors import FrontendError
from Deeploy.frontend.qoperator import expand_qoperators
from Deeploy.ir.dtypes import BFLOAT16, FLOAT32, FLOAT_ONNX_TYPES, DType, dtype_by_name, dtype_of_onnx
from Deeploy.ir.graph import NAME_SCOPES_KEY, Graph, Node, Tensor, fresh_name
from Deeploy.ops import registered_ops

__all__ = ["load_onnx", "integer_values", "integer_valued", "data_values", "promote_to_float", "is_float_graph",
           "use_onnx_integers", "integer_semantics", "ACCEPTED_DOMAINS"]

ACCEPTED_DOMAINS = ("", "ai.onnx", "PACTOps", "ai.onnx.contrib", "com.microsoft")


def _is_float_array(array: np.ndarray) -> bool:
    return array.dtype.kind == "f" or array.dtype == BFLOAT16.numpy


def integer_valued(array: np.ndarray) -> bool:
    array = np.asarray(array)
    if not _is_float_array(array):
        return True
    wide = array.astype(np.float64)
    return bool(np.all(np.isfinite(wide)) and np.all(wide == np.round(wide)))


def data_values(array: np.ndarray, what: str) -> np.ndarray:
    """Sample or golden data: int64 when every value is an integer, else float32 (a float
    network's data)."""
    array = np.asarray(array)
    if _is_float_array(array) and not integer_valued(array):
        return array.astype(np.float32)
    return integer_values(array, what)


def is_float_graph(graph: Graph) -> bool:
    """Whether the graph was loaded (or promoted) as a float network."""
    return any(graph.tensors[n].dtype is not None and graph.tensors[n].dtype.is_float
               for n in graph.float_declared if n in graph.tensors)


def promote_to_float(graph: Graph) -> None:
    """Make ``graph`` a float network: its float-declared inputs float32 (bfloat16 ones stay) and
    its float-declared constants float32 (their values are integers, so exactly)."""
    for name in graph.float_declared:
        t = graph.tensors.get(name)
        if t is None:
            continue
        if t.is_constant and not t.dtype.is_float:
            t.dtype = None
            t.set_value(np.asarray(t.value).astype(np.float32))
        elif not t.is_constant and t.dtype is None:
            t.dtype = FLOAT32
    use_onnx_integers(graph)


def use_onnx_integers(graph: Graph) -> None:
    """Give ``graph`` ONNX integer semantics: its integer-declared inputs and constants take
    their declared types (never narrowed from their values) and integer ops wrap in them."""
    graph.onnx_integers = True
    for name, dtype in graph.int_declared.items():
        t = graph.tensors.get(name)
        if t is not None and t.is_constant:
            t.set_value(t.value, dtype)
        elif t is not None:
            t.dtype = dtype


def integer_semantics(graph: Graph) -> str:
    """Which rules the graph's integers follow, in one line for the compile summary."""
    if graph.onnx_integers:
        return "ONNX (integer-declared tensors keep their types; arithmetic wraps in them)"
    return "QuantLib (float-declared tensors hold integers: types from values, sums widen)"


def integer_values(array: np.ndarray, what: str) -> np.ndarray:
    """``array`` as int64, or a FrontendError if it holds non-integer values."""
    array = np.asarray(array)
    if array.dtype.kind in "iub":
        return array.astype(np.int64)
    if array.dtype.kind != "f":
        raise FrontendError(f"{what} has unsupported element type {array.dtype}")
    if not np.all(np.isfinite(array)) or not np.all(array == np.round(array)):
        bad = array[~(np.isfinite(array) & (array == np.round(array)))].reshape(-1)[0]
        raise FrontendError(f"{what} holds non-integer value {bad} where integers are expected")
    if array.size and (array.max() > 2**62 or array.min() < -2**62):
        raise FrontendError(f"{what} holds values beyond 64-bit integers")
    return array.astype(np.int64)


def _tensor_array(proto: onnx.TensorProto, what: str) -> np.ndarray:
    """The values of a stored tensor, or a FrontendError naming ``what`` when its data do not
    match its declared shape and type (external data shorter than declared, say)."""
    try:
        return numpy_helper.to_array(proto)
    except (ValueError, TypeError, OSError) as exc:
        raise FrontendError(f"{what} of shape {list(proto.dims)} does not hold its declared data "
                            f"({type(exc).__name__}: {exc})") from None


def _initializer_array(init: onnx.TensorProto, path: Path) -> np.ndarray:
    array = _tensor_array(init, f"{path}: initializer '{init.name}'")
    if init.data_type == onnx.TensorProto.BFLOAT16 and array.dtype != BFLOAT16.numpy:
        array = np.asarray(array).astype(np.uint16).view(BFLOAT16.numpy)   # raw bit patterns
    return array


def _attribute_value(attr: onnx.AttributeProto):
    value = onnx.helper.get_attribute_value(attr)
    if attr.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(value)
    if attr.type == onnx.AttributeProto.TENSORS:
        return [numpy_helper.to_array(v) for v in value]
    if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
        raise FrontendError(f"attribute '{attr.name}' holds a subgraph: control flow is not supported")
    return value


def _name_scopes(node: onnx.NodeProto) -> tuple[str, ...]:
    """The module path the exporter recorded (``"['', 'encoder', 'encoder.layer.0', ...]"``);
    empty when absent or not a list of strings."""
    for prop in node.metadata_props:
        if prop.key == NAME_SCOPES_KEY:
            try:
                scopes = ast.literal_eval(prop.value)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                return ()
            if isinstance(scopes, (list, tuple)) and all(isinstance(s, str) for s in scopes):
                return tuple(scopes)
    return ()


def _declared_shape(value_info: onnx.ValueInfoProto, path: Path) -> tuple[int, ...] | None:
    if not value_info.type.HasField("tensor_type"):
        raise FrontendError(f"{path}: graph value '{value_info.name}' is not a tensor")
    tensor_type = value_info.type.tensor_type
    if not tensor_type.HasField("shape"):
        return None
    dims = []
    for d in tensor_type.shape.dim:
        if not d.HasField("dim_value"):
            raise FrontendError(f"{path}: graph input '{value_info.name}' has symbolic dimension "
                                f"'{d.dim_param or '?'}'; export the network with fixed shapes")
        dims.append(int(d.dim_value))
    return tuple(dims)


def _constant_node_value(node: onnx.NodeProto, name: str, path: Path) -> np.ndarray:
    for attr in node.attribute:
        if attr.name == "value":
            return _tensor_array(attr.t, f"{path}: Constant node '{name}'")
        if attr.name in ("value_int", "value_float"):
            return np.asarray(onnx.helper.get_attribute_value(attr))
        if attr.name in ("value_ints", "value_floats"):
            return np.asarray(list(onnx.helper.get_attribute_value(attr)))
    raise FrontendError(f"{path}: Constant node '{name}' has no supported value attribute")


def _variables(graph: Graph, path: Path) -> dict[str, str]:
    """The constants that optimizer steps update (``OpDef.updates``), each with the tensor holding
    its next value: the network's variables (``Graph.state``)."""
    state: dict[str, str] = {}
    by: dict[str, str] = {}
    for node in graph.nodes:
        op = registered_ops().get(node.op)
        if op is None or op.updates is None or op.updates >= len(node.inputs):
            continue
        weight = node.inputs[op.updates]
        if not graph.tensors[weight].is_constant:
            continue   # a graph input or a computed value: the step is a function of it
        if weight in state:
            raise FrontendError(f"{path}: '{weight}' is updated by two optimizer steps, nodes '{by[weight]}' "
                                f"and '{node.name}' ({node.op}); update each weight once per run")
        state[weight], by[weight] = node.outputs[0], node.name
    return state


def _default_opset(model: onnx.ModelProto) -> int | None:
    """The opset of the default domain the file imports (the newest, if imported twice): the
    meaning of its standard ops (``Graph.opset``)."""
    versions = [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")]
    return max(versions) if versions else None


def load_onnx(path: str | Path) -> Graph:
    """Read an ONNX file into a topologically sorted Graph with integer constants."""
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such ONNX file")
    try:
        model = onnx.load(str(path))
    except Exception as exc:  # onnx raises DecodeError and others for corrupt files
        raise FrontendError(f"{path}: not a readable ONNX model ({type(exc).__name__}: {exc})") from None
    g = model.graph
    if not g.node:
        raise FrontendError(f"{path}: the graph has no nodes")
    expand_qoperators(g)

    tensors: dict[str, Tensor] = {}
    raw: dict[str, tuple[np.ndarray, str]] = {}   # constants as stored, with what they are
    declared_float: set[str] = set()
    declared_int: dict[str, DType] = {}
    for init in g.initializer:
        if init.name in raw:
            raise FrontendError(f"{path}: initializer '{init.name}' is defined twice")
        raw[init.name] = (_initializer_array(init, path), f"{path}: initializer '{init.name}'")
        if init.data_type in FLOAT_ONNX_TYPES:
            declared_float.add(init.name)
        elif dtype_of_onnx(init.data_type) is not None:
            declared_int[init.name] = dtype_of_onnx(init.data_type)

    inputs = []
    for vi in g.input:
        if vi.name in raw:
            continue  # an initializer that is also listed as an input: a constant
        elem = vi.type.tensor_type.elem_type
        if elem in FLOAT_ONNX_TYPES:
            declared_float.add(vi.name)
        elif dtype_of_onnx(elem) is not None:
            declared_int[vi.name] = dtype_of_onnx(elem)
        declared = dtype_of_onnx(elem)
        inferred = elem in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE, onnx.TensorProto.INT64)
        declared = None if inferred else declared  # fake-float and int64 inputs: typed from values
        if declared is None and not inferred:
            raise FrontendError(f"{path}: graph input '{vi.name}' has unsupported element type "
                                f"{onnx.TensorProto.DataType.Name(elem)}")
        shape = _declared_shape(vi, path)
        if shape is None:
            raise FrontendError(f"{path}: graph input '{vi.name}' has no shape")
        tensors[vi.name] = Tensor(vi.name, shape, declared)
        inputs.append(vi.name)

    nodes: list[Node] = []
    taken = {proto.name for proto in g.node if proto.name}   # a missing or repeated name gets a fresh one
    named: set[str] = set()
    unsupported_domains = []
    # SSA, as onnx.checker requires: every tensor has one definition
    defined = {**{n: "an initializer" for n in raw}, **{n: "a graph input" for n in inputs}}
    for index, proto in enumerate(g.node):
        name = proto.name if proto.name and proto.name not in named else fresh_name(
            proto.name or f"{proto.op_type}_{index}", taken)
        taken.add(name)
        named.add(name)
        if not proto.output or not proto.output[0]:
            raise FrontendError(f"{path}: node '{name}' ({proto.op_type}) has no (named) output; "
                                "every node must write a tensor")
        for out in filter(None, proto.output):   # "" is an omitted optional output
            if out in defined:
                raise FrontendError(f"{path}: tensor '{out}' written by node '{name}' ({proto.op_type}) is "
                                    f"already {defined[out]}; give every tensor one definition (SSA)")
            defined[out] = f"the output of node '{name}'"
        if proto.op_type == "Constant" and proto.domain in ("", "ai.onnx"):
            value = _constant_node_value(proto, name, path)
            raw[proto.output[0]] = (value, f"{path}: Constant node '{name}'")
            if _is_float_array(value):
                declared_float.add(proto.output[0])
            elif value.dtype.kind in "iu":
                declared_int[proto.output[0]] = dtype_by_name(value.dtype.name)
            continue
        if proto.domain not in ACCEPTED_DOMAINS:
            unsupported_domains.append(f"{proto.op_type} ('{name}', domain '{proto.domain}')")
        attrs = {a.name: _attribute_value(a) for a in proto.attribute}
        node = Node(name, proto.op_type, list(proto.input), list(proto.output), attrs, proto.domain,
                    scopes=_name_scopes(proto))
        for out in filter(None, node.outputs):
            tensors[out] = Tensor(out)
        nodes.append(node)
    if unsupported_domains:
        raise FrontendError(f"{path}: nodes in unsupported operator domains: "
                            + ", ".join(unsupported_domains))

    as_float = any(not integer_valued(value) or value.dtype == BFLOAT16.numpy for value, _ in raw.values())
    for name, (value, what) in raw.items():
        if as_float and _is_float_array(value):
            value = value.astype(BFLOAT16.numpy if value.dtype == BFLOAT16.numpy else np.float32)
        else:
            value = integer_values(value, what)
        tensors[name] = Tensor(name, tuple(value.shape), None, value)

    for node in nodes:
        for i in node.inputs:
            if i and i not in tensors:
                raise FrontendError(f"{path}: node '{node.name}' ({node.op}) reads tensor '{i}' that "
                                    "is neither a graph input, an initializer nor a node output")
    outputs = [o.name for o in g.output]
    for o in outputs:
        if o not in tensors:
            raise FrontendError(f"{path}: graph output '{o}' is never produced")
    for vi in g.output:   # a fixed declared shape stands until inference sets the true one (ops may read it)
        dims = vi.type.tensor_type.shape.dim if vi.type.tensor_type.HasField("shape") else None
        if tensors[vi.name].shape is None and dims is not None and all(d.HasField("dim_value") for d in dims):
            tensors[vi.name].shape = tuple(int(d.dim_value) for d in dims)

    graph = Graph(g.name or path.stem, tensors, nodes, inputs, outputs, float_declared=frozenset(declared_float),
                  int_declared=declared_int, declared_inputs=tuple(vi.name for vi in g.input),
                  opset=_default_opset(model))
    graph.topological_sort()
    graph.state = _variables(graph, path)
    for t in graph.tensors.values():
        if t.is_constant:
            t.set_value(t.value)
    if as_float:
        promote_to_float(graph)
    elif not declared_float:
        use_onnx_integers(graph)
    return graph
