"""Frontend quirks of QuantLib-style exports (specs/integer-ops.md, 'Conventions')."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.errors import FrontendError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.dtypes import INT8, INT16, UINT8
from Deeploy.reference import run_reference


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _save(tmp_path: Path, nodes, inputs, outputs, inits=(), opsets=(("", 13),)) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
    path = tmp_path / "network.onnx"
    onnx.save(model, path)
    return path


def _rqs(name, x, y, div, tensor_attrs=True, domain=""):
    mul = numpy_helper.from_array(np.array([3.0], np.float32), f"{name}.mul")
    add = numpy_helper.from_array(np.array([1.0], np.float32), f"{name}.add")
    attrs = dict(div=div, n_levels_out=256, signed=1)
    if tensor_attrs:
        attrs = {k: numpy_helper.from_array(np.array([v], np.float32)) for k, v in attrs.items()}
    node = helper.make_node("RequantShift", [x, mul.name, add.name], [y], name=name, domain=domain, **attrs)
    return node, [mul, add]


def test_non_topological_order_and_tensor_attributes(tmp_path):
    n2, c2 = _rqs("second", "m", "y", 4, tensor_attrs=False)
    n1, c1 = _rqs("first", "x", "m", 2, tensor_attrs=True)
    path = _save(tmp_path, [n2, n1], [_vi("x", [1, 8])], [_vi("y", [1, 8])], c1 + c2)
    g = load_onnx(path)
    assert [n.name for n in g.nodes] == ["first", "second"]
    assign_input_types(g, {"x": np.arange(-4, 4).reshape(1, 8)})
    infer_graph(g)
    assert g.nodes[0].params.shift == 1 and g.nodes[1].params.shift == 2


@pytest.mark.parametrize("values, expected", [((-128, 127), INT8), ((0, 255), UINT8), ((-200, 5), INT16)])
def test_input_types_come_from_values(tmp_path, values, expected):
    path = _save(tmp_path, [helper.make_node("Identity", ["x"], ["y"])], [_vi("x", [2])], [_vi("y", [2])])
    g = load_onnx(path)
    assign_input_types(g, {"x": np.array(values)})
    assert g.tensors["x"].dtype == expected


def test_npz_maps_positionally_and_refuses_unknown_extra_arrays(tmp_path):
    nodes = [helper.make_node("Sub", ["a", "b"], ["y"])]
    path = _save(tmp_path, nodes, [_vi("a", [3]), _vi("b", [3])], [_vi("y", [3])])
    g = load_onnx(path)
    np.savez(tmp_path / "inputs.npz", zeta=np.array([5., 6., 7.]), alpha=np.array([1, 1, 1], np.int8),
             extra=np.ones((4, 4)))
    with pytest.raises(FrontendError, match="'extra'"):
        map_arrays(tmp_path / "inputs.npz", load_npz_arrays(tmp_path / "inputs.npz"), g.inputs, g, "input")
    np.savez(tmp_path / "inputs.npz", zeta=np.array([5., 6., 7.]), alpha=np.array([1, 1, 1], np.int8))
    values = map_arrays(tmp_path / "inputs.npz", load_npz_arrays(tmp_path / "inputs.npz"), g.inputs, g, "input")
    assert values["a"].tolist() == [5, 6, 7] and values["b"].tolist() == [1, 1, 1]
    assign_input_types(g, values)
    infer_graph(g)
    assert run_reference(g, values)["y"].tolist() == [4, 5, 6]


def test_constant_nodes_duplicate_opsets_and_custom_domains(tmp_path):
    const = helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(np.array([2.0], np.float32)))
    mul = helper.make_node("Mul", ["x", "k"], ["p"], name="mul")
    rqs, consts = _rqs("rq", "p", "y", 2, domain="ai.onnx.contrib")
    path = _save(tmp_path, [const, mul, rqs], [_vi("x", [4])], [_vi("y", [4])], consts,
                 opsets=(("", 13), ("", 13), ("ai.onnx.contrib", 1), ("PACTOps", 1)))
    g = load_onnx(path)
    assert g.tensors["k"].is_constant
    assign_input_types(g, {"x": np.array([1, 2, 3, 4])})
    infer_graph(g)
    # p = 2x; y = (3p + 1 + 1) >> 1
    assert run_reference(g, {"x": np.array([1, 2, 3, 4])})["y"].tolist() == [4, 7, 10, 13]


def test_unknown_domain_is_rejected(tmp_path):
    node = helper.make_node("Weird", ["x"], ["y"], name="w", domain="com.example")
    path = _save(tmp_path, [node], [_vi("x", [1])], [_vi("y", [1])], opsets=(("", 13), ("com.example", 1)))
    with pytest.raises(FrontendError, match="com.example"):
        load_onnx(path)


def test_rank3_gemm_and_pad_attribute(tmp_path):
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) - 6, "w")
    gemm = helper.make_node("Gemm", ["x", "w"], ["g"], name="gemm")
    pad = helper.make_node("Pad", ["g"], ["y"], name="pad", mode="constant", pads=[0, 1, 0, 0, 1, 0], value=0.0)
    path = _save(tmp_path, [gemm, pad], [_vi("x", [2, 5, 4])], [_vi("y", [2, 7, 3])], [w], opsets=(("", 10),))
    g = load_onnx(path)
    x = np.arange(40).reshape(2, 5, 4) % 7 - 3
    assign_input_types(g, {"x": x})
    infer_graph(g)
    y = run_reference(g, {"x": x})["y"]
    expected = np.pad(x @ (np.arange(12).reshape(4, 3) - 6), ((0, 0), (1, 1), (0, 0)))
    assert np.array_equal(y, expected)


def test_zero_sized_input_into_concat(tmp_path):
    node = helper.make_node("Concat", ["past", "new"], ["y"], axis=-2)
    path = _save(tmp_path, [node], [_vi("past", [1, 2, 0, 4]), _vi("new", [1, 2, 1, 4])], [_vi("y", [1, 2, 1, 4])])
    g = load_onnx(path)
    values = {"past": np.zeros((1, 2, 0, 4)), "new": np.arange(8).reshape(1, 2, 1, 4)}
    assign_input_types(g, values)
    infer_graph(g)
    assert np.array_equal(run_reference(g, values)["y"], values["new"])
