"""Float networks in the frontend: when a graph is float, which tensors are float, and the types
on both sides of quantize/dequantize (docs/GUIDE.md, "Float networks")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.errors import OpError
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import BFLOAT16, FLOAT32, INT8, UINT8
from Deeploy.reference import run_reference


def _save(tmp_path: Path, nodes, inputs, outputs, inits=()) -> Path:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    path = tmp_path / "network.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)]), path)
    return path


def _vi(name, shape, elem=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, elem, shape)


def _scaled(tmp_path, scale):
    """y = x * scale, scale an initializer."""
    init = numpy_helper.from_array(np.array([scale], np.float32), "s")
    return _save(tmp_path, [helper.make_node("Mul", ["x", "s"], ["y"])], [_vi("x", [4])], [_vi("y", [4])], [init])


def test_non_integer_constant_makes_a_float_network(tmp_path):
    g = load_onnx(_scaled(tmp_path, 0.5))
    assert g.tensors["s"].dtype == FLOAT32
    assign_input_types(g, {"x": np.array([1, 2, 3, 4])})     # integer samples do not change that
    infer_graph(g)
    assert g.tensors["x"].dtype == FLOAT32 and g.tensors["y"].dtype == FLOAT32
    out = run_reference(g, {"x": np.array([1, 2, 3, 4])})["y"]
    assert out.dtype == np.float32 and np.array_equal(out, [0.5, 1.0, 1.5, 2.0])


def test_integer_constants_and_samples_stay_integer(tmp_path):
    g = load_onnx(_scaled(tmp_path, 3.0))
    assign_input_types(g, {"x": np.array([-128, 127, 0, 1])})
    infer_graph(g)
    assert g.tensors["x"].dtype == INT8 and g.tensors["s"].dtype.is_integer
    assert not g.tensors["y"].dtype.is_float


def test_non_integer_samples_promote_integer_valued_constants(tmp_path):
    g = load_onnx(_scaled(tmp_path, 3.0))
    assign_input_types(g, {"x": np.array([0.25, -1.5, 2.0, 7.0], np.float32)})
    infer_graph(g)
    assert g.tensors["s"].dtype == FLOAT32 and g.tensors["y"].dtype == FLOAT32
    out = run_reference(g, {"x": np.array([0.25, -1.5, 2.0, 7.0], np.float32)})["y"]
    assert np.array_equal(out, np.array([0.75, -4.5, 6.0, 21.0], np.float32))


def test_input_type_override_makes_a_float_network(tmp_path):
    g = load_onnx(_scaled(tmp_path, 3.0))
    assign_input_types(g, {}, {"x": FLOAT32})
    infer_graph(g)
    assert g.tensors["s"].dtype == FLOAT32 and g.tensors["y"].dtype == FLOAT32


def test_quantize_dequantize_keep_the_integer_type_between_them(tmp_path):
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "scale"),
             numpy_helper.from_array(np.array(128, np.uint8), "zp")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["q"]),
             helper.make_node("Relu", ["q"], ["r"]),
             helper.make_node("DequantizeLinear", ["r", "scale", "zp"], ["y"])]
    g = load_onnx(_save(tmp_path, nodes, [_vi("x", [6])], [_vi("y", [6])], inits))
    x = np.array([-20.0, -0.04, 0.05, 0.15, 3.3, 40.0], np.float32)
    assign_input_types(g, {"x": x})
    infer_graph(g)
    assert (g.tensors["x"].dtype, g.tensors["q"].dtype, g.tensors["r"].dtype, g.tensors["y"].dtype) == \
        (FLOAT32, UINT8, UINT8, FLOAT32)
    values = run_reference(g, {"x": x}, keep_all=True)
    assert values["q"].tolist() == [0, 128, 128, 130, 161, 255]      # half to even, saturated
    assert np.allclose(values["y"], np.array([-12.8, 0.0, 0.0, 0.2, 3.3, 12.7], np.float32))


def test_bfloat16_inputs_round_to_bfloat16(tmp_path):
    elem = TensorProto.BFLOAT16
    path = _save(tmp_path, [helper.make_node("Add", ["a", "b"], ["y"])], [_vi("a", [2], elem), _vi("b", [2], elem)],
                 [_vi("y", [2], elem)])
    g = load_onnx(path)
    a, b = np.array([1.0, 0.3], np.float32), np.array([2 ** -9, 0.1], np.float32)
    assign_input_types(g, {"a": a, "b": b})
    infer_graph(g)
    assert g.tensors["y"].dtype == BFLOAT16
    out = run_reference(g, {"a": a, "b": b})["y"]
    want = (a.astype(BFLOAT16.numpy).astype(np.float32) + b.astype(BFLOAT16.numpy).astype(np.float32))
    assert np.array_equal(out, want.astype(BFLOAT16.numpy).astype(np.float32))
    assert out[0] == 1.0          # 1 + 2^-9 rounds to even in bfloat16


def test_float_only_op_on_integers_names_the_op(tmp_path):
    path = _save(tmp_path, [helper.make_node("Sqrt", ["x"], ["y"], name="root")],
                 [_vi("x", [3], TensorProto.INT8)], [_vi("y", [3], TensorProto.INT8)])
    g = load_onnx(path)
    assign_input_types(g, {"x": np.array([1, 4, 9])})
    with pytest.raises(OpError, match="node 'root' \\(Sqrt\\): computes on float tensors only"):
        infer_graph(g)


@pytest.mark.parametrize("op", ["Sqrt", "Softmax"])
def test_float_only_op_makes_a_float_network_of_whole_numbers(tmp_path, op):
    """A float-declared graph holding an op that computes on floats only is a float network even
    when its samples are whole numbers (a QuantLib file uses the integer ops)."""
    path = _save(tmp_path, [helper.make_node(op, ["x"], ["y"])], [_vi("x", [1, 3])], [_vi("y", [1, 3])])
    g = load_onnx(path)
    x = np.array([[1, 4, 9]])
    assign_input_types(g, {"x": x})
    infer_graph(g)
    assert g.tensors["x"].dtype == FLOAT32 and g.tensors["y"].dtype == FLOAT32
    expected = np.sqrt(x) if op == "Sqrt" else np.exp(x - 9) / np.exp(x - 9).sum()
    np.testing.assert_allclose(run_reference(g, {"x": x.astype(np.float32)})["y"], expected, rtol=1e-6)


def test_float_nodes_never_reach_integer_kernels(tmp_path):
    """A bfloat16 Conv (the float convolution kernels take float32 only) is refused naming every
    kernel's reason, rather than bound to an integer kernel."""
    from Deeploy.compiler import compile_graph
    from Deeploy.errors import BindingError
    elem = TensorProto.BFLOAT16
    w = helper.make_tensor("w", elem, [2, 1, 1, 1], [16256, 16256], raw=False)   # bfloat16 bits of 1.0
    path = _save(tmp_path, [helper.make_node("Conv", ["x", "w"], ["y"], name="conv")],
                 [_vi("x", [1, 1, 2, 2], elem)], [_vi("y", [1, 2, 2, 2], elem)], [w])
    g = load_onnx(path)
    assign_input_types(g)
    with pytest.raises(BindingError, match="Conv \\('conv'.*FConv2d: no bfloat16 operands.*Conv2d: computes on "
                                           "integers only"):
        compile_graph(g, "Generic", tmp_path / "out")


def test_whole_number_scale_input_makes_a_float_network(tmp_path):
    """A quantization scale is float by definition, even when its sample is a whole number."""
    path = _save(tmp_path, [helper.make_node("DequantizeLinear", ["x", "s", "z"], ["y"])],
                 [_vi("x", [4], TensorProto.UINT8), _vi("s", []), _vi("z", [], TensorProto.UINT8)], [_vi("y", [4])])
    g = load_onnx(path)
    x, s, z = np.array([0, 3, 128, 255]), np.array(2), np.array(128)   # as sample files load: whole numbers
    assign_input_types(g, {"x": x, "s": s, "z": z})
    infer_graph(g)
    assert g.tensors["s"].dtype == FLOAT32 and g.tensors["y"].dtype == FLOAT32
    out = run_reference(g, {"x": x, "s": s, "z": z})["y"]
    assert np.array_equal(out, np.array([-256, -250, 0, 254], np.float32))
