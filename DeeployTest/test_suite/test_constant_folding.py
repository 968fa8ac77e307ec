"""Constant subgraphs fold before ops check their parameter inputs: a Clip's min and max made by a
Cast of constants (a quantization-aware export), a Reshape's shape computed from constants."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.reference import run_reference

RNG = np.random.default_rng(3)


def _compile(tmp_path, nodes, inits, x, y_shape, y_type=TensorProto.FLOAT):
    """Compile for Generic; the compiled graph's ops and its reference output beside onnxruntime's."""
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                          [helper.make_tensor_value_info("y", y_type, y_shape)],
                          [numpy_helper.from_array(np.asarray(v), k) for k, v in inits.items()])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "m.onnx")
    expected = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})[0]
    graph = load_onnx(tmp_path / "m.onnx")
    assign_input_types(graph, {"x": x})
    result = compile_graph(graph, "Generic", tmp_path / "out")
    got = run_reference(result.graph, {"x": x})["y"]
    return [n.op for n in result.graph.nodes], got, expected


def test_clip_bounds_cast_from_constants_fold(tmp_path):
    x = RNG.normal(size=(2, 8)).astype(np.float32)
    nodes = [helper.make_node("Cast", ["lo16"], ["lo"], to=TensorProto.FLOAT),
             helper.make_node("Cast", ["hi16"], ["hi"], to=TensorProto.FLOAT),
             helper.make_node("Clip", ["x", "lo", "hi"], ["y"])]
    ops, got, expected = _compile(tmp_path, nodes, {"lo16": np.array(-0.5, np.float64),
                                                     "hi16": np.array(0.75, np.float64)}, x, [2, 8])
    assert ops == ["Clip"]
    np.testing.assert_allclose(got, expected, rtol=0, atol=0)


def test_reshape_shape_from_constant_arithmetic_folds(tmp_path):
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    nodes = [helper.make_node("Constant", [], ["half"], value=numpy_helper.from_array(np.array([3, 4], np.int64))),
             helper.make_node("Mul", ["half", "two"], ["shape"]),   # [6, 8] -> not a constant initializer
             helper.make_node("Sub", ["shape", "half"], ["shape2"]),
             helper.make_node("Concat", ["two", "shape2"], ["full"], axis=0),
             helper.make_node("Reshape", ["x", "full"], ["y"])]
    ops, got, expected = _compile(tmp_path, nodes, {"two": np.array([2], np.int64)}, x, [2, 3, 4])
    assert ops == ["Reshape"]
    np.testing.assert_array_equal(got, expected)


def test_integer_division_of_shapes_folds(tmp_path):
    """Shape arithmetic with an integer Div (a center crop's offsets): truncated toward zero."""
    x = RNG.normal(size=(2, 7)).astype(np.float32)
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Sub", ["keep", "s"], ["extra"]),        # [0, -3]
             helper.make_node("Div", ["extra", "two"], ["half"]),       # [0, -1], not floor's -2
             helper.make_node("Add", ["half", "shift"], ["start"]),     # [0, 1]
             helper.make_node("Add", ["start", "keep"], ["end"]),
             helper.make_node("Slice", ["x", "start", "end"], ["y"])]
    ops, got, expected = _compile(tmp_path, nodes, {"keep": np.array([2, 4], np.int64), "two": np.array([2], np.int64),
                                                     "shift": np.array([0, 2], np.int64)}, x, [2, 4])
    assert ops == ["Slice"]
    np.testing.assert_array_equal(got, expected)


def test_output_computed_from_shapes_alone_runs(tmp_path, capsys):
    """Graph outputs that fold (a Shape; a Mul of constants) are constants copied into the outputs
    by a layer, not refused for want of a Shape kernel nor left unwritten."""
    from Deeploy.cli import main
    x = RNG.normal(size=(2, 3, 5)).astype(np.float32)
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1), helper.make_node("Mul", ["s", "two"], ["y"])]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 5])],
                          [helper.make_tensor_value_info(n, TensorProto.INT64, [2]) for n in "sy"],
                          [numpy_helper.from_array(np.array([2], np.int64), "two")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "network.onnx")
    np.savez(tmp_path / "inputs.npz", x=x)
    s, y = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.savez(tmp_path / "outputs.npz", s=s, y=y)
    assert main(["compile", str(tmp_path / "network.onnx"), "--platform", "Generic", "-o", str(tmp_path / "out"),
                 "--emit-testbench"]) == 0
    assert main(["run", str(tmp_path / "out")]) == 0
    assert "Errors: 0 out of 4" in capsys.readouterr().out
