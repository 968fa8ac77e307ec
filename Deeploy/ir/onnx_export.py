"""Graph -> ONNX model, with the inferred integer types, for snapshots viewable in Netron."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from Deeploy.ir.dtypes import onnx_elem_type
from Deeploy.ir.graph import Graph

__all__ = ["to_onnx", "save_snapshot"]



def _attr(name, value):
    if isinstance(value, np.ndarray):
        return helper.make_attribute(name, numpy_helper.from_array(value))
    return helper.make_attribute(name, value)


def to_onnx(graph: Graph, node_notes: dict[str, dict[str, str]] | None = None) -> onnx.ModelProto:
    node_notes = node_notes or {}

    def info(name):
        t = graph.tensors[name]
        elem = onnx_elem_type(t.dtype) if t.dtype else onnx.TensorProto.FLOAT
        return helper.make_tensor_value_info(name, elem, list(t.shape) if t.shape is not None else None)

    in_region = {name: f"{r.name}[{i}].{k}" for r in graph.regions
                 for i, instance in enumerate(r.instances) for k, name in enumerate(instance)}
    nodes, domains = [], {""}
    for n in graph.nodes:
        attrs = [_attr(k, v) for k, v in sorted(n.attrs.items())]
        attrs += [helper.make_attribute(k, v) for k, v in sorted(node_notes.get(n.name, {}).items())]
        proto = helper.make_node(n.op, n.inputs, n.outputs, name=n.name, domain=n.domain)
        proto.attribute.extend(attrs)
        if n.name in in_region:   # region[iteration].body position, shown by Netron as metadata
            proto.metadata_props.add(key="deeploy.region", value=in_region[n.name])
        nodes.append(proto)
        domains.add(n.domain)
    inits = [numpy_helper.from_array(t.value.astype(t.dtype.numpy), t.name) for t in graph.constants()]
    produced = {o for n in graph.nodes for o in n.outputs}
    value_info = [info(name) for name in sorted(produced - set(graph.outputs))
                  if graph.tensors[name].shape is not None]
    g = helper.make_graph(nodes, graph.name, [info(i) for i in graph.inputs],
                          [info(o) for o in graph.outputs], inits, value_info=value_info)
    opsets = [helper.make_opsetid(d, 13 if d == "" else 1) for d in sorted(domains)]
    return helper.make_model(g, opset_imports=opsets, producer_name="deeploy")


def save_snapshot(graph: Graph, path: Path, node_notes: dict[str, dict[str, str]] | None = None) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(to_onnx(graph, node_notes), str(path))
