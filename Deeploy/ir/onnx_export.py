"""Graph -> ONNX model, with the inferred integer types, for snapshots viewable in Netron.

Snapshots pass ``onnx.checker.check_model``: standard ops stay in the default domain at one
opset (the file's own, ``Graph.opset``, when the nodes fit it, so that they keep its meaning; else
the lowest from ``BASE_OPSET`` on that has every op), Deeploy's own ops (the ones the passes
create, e.g. RequantizedConv) go to the ``deeploy`` domain, ops of other custom domains keep theirs,
each with an opset import. What is not an ONNX attribute of the op (attributes Deeploy adds to a
standard op, the kernel and engine a node is bound to, its region) is node metadata
(``metadata_props``, keys ``deeploy.<name>``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from Deeploy.ir.dtypes import onnx_elem_type
from Deeploy.ir.graph import NAME_SCOPES_KEY, Graph

__all__ = ["to_onnx", "save_snapshot", "DEEPLOY_DOMAIN", "BASE_OPSET"]

DEEPLOY_DOMAIN = "deeploy"
BASE_OPSET = 13


def _standard(op: str) -> bool:
    return onnx.defs.has(op, "")


def _opset(ops: set[str]) -> int:
    """The lowest default-domain opset from BASE_OPSET on that defines every op of ``ops``."""
    latest = onnx.defs.onnx_opset_version()
    need = BASE_OPSET
    for op in ops:
        try:
            onnx.defs.get_schema(op, BASE_OPSET, "")
        except onnx.defs.SchemaError:
            need = max(need, onnx.defs.get_schema(op, latest, "").since_version)
    return need


def _metadata_value(value) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, threshold=64, separator=",")
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(list(value) if isinstance(value, tuple) else value)



def _attr(name, value):
    if isinstance(value, np.ndarray):
        return helper.make_attribute(name, numpy_helper.from_array(value))
    return helper.make_attribute(name, value)


def _nodes(graph: Graph, opset: int, standard: set[str], node_notes: dict, in_region: dict):
    nodes, domains = [], {""}
    for n in graph.nodes:
        if n.domain in ("", "ai.onnx"):
            domain = "" if n.op in standard else DEEPLOY_DOMAIN
        else:
            domain = n.domain
        known = set(onnx.defs.get_schema(n.op, opset, "").attributes) if domain == "" else None
        proto = helper.make_node(n.op, n.inputs, n.outputs, name=n.name, domain=domain)
        for k, v in sorted(n.attrs.items()):
            if known is None or k in known:
                proto.attribute.append(_attr(k, v))
            else:   # an attribute Deeploy added to a standard op
                proto.metadata_props.add(key=f"deeploy.{k}", value=_metadata_value(v))
        for k, v in sorted(node_notes.get(n.name, {}).items()):
            proto.metadata_props.add(key=f"deeploy.{k}", value=str(v))
        if n.scopes:   # the exporter's module path, kept as it was read
            proto.metadata_props.add(key=NAME_SCOPES_KEY, value=repr(list(n.scopes)))
        if n.name in in_region:   # region[iteration].body position, shown by Netron as metadata
            proto.metadata_props.add(key="deeploy.region", value=in_region[n.name])
        nodes.append(proto)
        domains.add(domain)
    return nodes, domains


def _has_attributes(graph: Graph, standard: set[str], opset: int) -> bool:
    """``opset`` defines every standard op of the graph and each ONNX attribute its nodes carry
    (a pass may write a newer form: a per-axis DequantizeLinear's ``axis``)."""
    latest = onnx.defs.onnx_opset_version()
    try:
        return not any(set(n.attrs) & (set(onnx.defs.get_schema(n.op, latest, "").attributes)
                                       - set(onnx.defs.get_schema(n.op, opset, "").attributes))
                       for n in graph.nodes if n.domain in ("", "ai.onnx") and n.op in standard)
    except onnx.defs.SchemaError:   # an op newer than ``opset``
        return False


def _fits(nodes, opset: int) -> bool:
    """Every default-domain node passes the checker at ``opset``."""
    ctx = onnx.checker.C.CheckerContext()
    ctx.ir_version = onnx.IR_VERSION
    ctx.opset_imports = {"": opset}
    try:
        for node in nodes:
            if node.domain == "":
                onnx.checker.check_node(node, ctx)
    except onnx.checker.ValidationError:
        return False
    return True


def to_onnx(graph: Graph, node_notes: dict[str, dict[str, str]] | None = None) -> onnx.ModelProto:
    node_notes = node_notes or {}

    def info(name):
        t = graph.tensors[name]
        elem = onnx_elem_type(t.dtype) if t.dtype else onnx.TensorProto.FLOAT
        return helper.make_tensor_value_info(name, elem, list(t.shape) if t.shape is not None else None)

    in_region = {name: f"{r.name}[{i}].{k}" for r in graph.regions
                 for i, instance in enumerate(r.instances) for k, name in enumerate(instance)}
    standard = {n.op for n in graph.nodes if n.domain in ("", "ai.onnx") and _standard(n.op)}
    own = [graph.opset] if graph.opset is not None and _has_attributes(graph, standard, graph.opset) else []
    for opset in own + list(range(_opset(standard), onnx.defs.onnx_opset_version() + 1)):   # the first the nodes fit
        nodes, domains = _nodes(graph, opset, standard, node_notes, in_region)
        if _fits(nodes, opset):
            break
    inits = [numpy_helper.from_array(t.value.astype(t.dtype.numpy), t.name) for t in graph.constants()]
    produced = {o for n in graph.nodes for o in n.outputs}
    value_info = [info(name) for name in sorted(produced - set(graph.outputs))
                  if graph.tensors[name].shape is not None]
    g = helper.make_graph(nodes, graph.name, [info(i) for i in graph.inputs],
                          [info(o) for o in graph.outputs], inits, value_info=value_info)
    opsets = [helper.make_opsetid(d, opset if d == "" else 1) for d in sorted(domains)]
    return helper.make_model(g, opset_imports=opsets, producer_name="deeploy")


def save_snapshot(graph: Graph, path: Path, node_notes: dict[str, dict[str, str]] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(to_onnx(graph, node_notes), str(path))
