"""Shape and type inference: input types come from the file's integer types under ONNX integer
semantics, else from sample values (the declared FLOAT type of integer (fake-float) files says
nothing; a float network keeps its float inputs float), every node's output from its operator's
rule."""

from __future__ import annotations

import numpy as np

from Deeploy.errors import FrontendError, OpError
from Deeploy.frontend.onnx_loader import integer_valued, is_float_graph, promote_to_float
from Deeploy.ir.dtypes import INT8, DType, dtype_of_values
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import OpDef, Trait, get_op, registered_ops
from Deeploy.ops.bounds import memoized
from Deeploy.ops.folding import fold_node, folds

__all__ = ["assign_input_types", "infer_graph", "infer_node"]


def assign_input_types(graph: Graph, values: dict[str, np.ndarray] | None = None,
                       overrides: dict[str, DType] | None = None) -> None:
    """Give every graph input a type.

    A graph whose float-declared inputs receive non-integer sample values or a float type by
    override, or feed a QuantizeLinear (the model quantizes them itself) or are a quantization
    scale, or a graph with float-declared tensors holding an op that computes on floats only
    (``Trait.FLOAT_ONLY``: Sqrt, Div, Softmax...; a QuantLib file uses the integer ops) becomes a
    float network (``promote_to_float``). Priority: an explicit override, then a float network's float-declared
    type, then a type the file declares under ONNX integer semantics (never narrowed), then the
    smallest type holding the sample ``values``, then the integer type declared in the file (int8
    for an empty input). A float-declared input of an integer network with none of these is a
    FrontendError naming ``--input-type``.
    """
    values, overrides = values or {}, overrides or {}
    for unknown in set(overrides) - set(graph.inputs):
        names = ", ".join(graph.inputs[:4]) + (", ..." if len(graph.inputs) > 4 else "")
        raise FrontendError(f"--input-type {unknown}: not a graph input; name one of {names}")
    fractional = any(not integer_valued(v) for k, v in values.items() if k in graph.float_declared)
    quantized = {n.inputs[0] for n in graph.nodes if n.op == "QuantizeLinear"} | \
        {n.inputs[1] for n in graph.nodes if n.op in ("QuantizeLinear", "DequantizeLinear") and len(n.inputs) > 1}
    quantized &= graph.float_declared
    known = registered_ops()
    float_only = graph.float_declared and any(known[n.op].has(Trait.FLOAT_ONLY) for n in graph.nodes if n.op in known)
    if fractional or float_only or any(t.is_float for t in overrides.values()) or quantized & set(graph.inputs):
        promote_to_float(graph)
    as_float = is_float_graph(graph)
    for name in graph.inputs:
        t = graph.tensors[name]
        if name in overrides:
            t.dtype = overrides[name]
        elif as_float and name in graph.float_declared or graph.onnx_integers and name in graph.int_declared:
            continue
        elif name in values and values[name].size:
            t.dtype = dtype_of_values(values[name])
        elif name in graph.int_declared:
            t.dtype = graph.int_declared[name]
        elif t.dtype is None and not t.size:
            t.dtype = INT8   # an empty input holds no values
        elif t.dtype is None:
            error = FrontendError(f"input '{name}' has no integer type: give --input-type {name}=int8 (or uint8, "
                                  "int16, ..., float32) or sample inputs (--inputs)")
            error.details = (f"'{name}' is declared float in an integer network (integer constants) and no sample "
                             "values give its integer type; float32 declares a float network")
            raise error


def infer_node(graph: Graph, node: Node) -> OpDef:
    """Parse the node's attributes and set the shapes and types of its outputs; its op."""
    op = get_op(node)
    node.params = op.parse(node, graph)
    ins = [graph.tensors[i] if i else None for i in node.inputs]
    outs = op.infer(node.params, ins)
    if len(outs) < len([o for o in node.outputs if o]):
        raise OpError(node, f"produces {len(outs)} outputs, the node lists {len(node.outputs)}")
    for name, (shape, dtype) in zip(node.outputs, outs):
        if not name:
            continue
        t = graph.tensors[name]
        t.shape, t.dtype = tuple(int(d) for d in shape), dtype
        if any(d < 0 for d in t.shape):
            raise OpError(node, f"inferred a negative dimension for output '{name}': {list(t.shape)}")
    return op


def infer_graph(graph: Graph) -> None:
    """Parse every node's attributes and set shapes and types of all node outputs, in order.

    Constants fold on the way (``ops/folding.folds``, quantization joints excepted): a
    node whose inputs are all constants, or whose output depends on shapes only (``Shape``), becomes
    constants (the node leaves the graph) before the nodes after it are parsed, so that the ops
    reading it as a parameter (a Reshape's shape, a Clip's min) see a constant."""
    kept = []
    with memoized(graph):
        for node in graph.nodes:
            infer_node(graph, node)
            if folds(node, graph, joints=False):
                fold_node(graph, node)
            else:
                kept.append(node)
    graph.nodes = kept
