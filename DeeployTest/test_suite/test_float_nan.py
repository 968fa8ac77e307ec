"""NaN in float kernels: Relu, Clip, Max, Min and HardSigmoid give NaN for a NaN operand and
QuantizeLinear gives the output type's lowest value, as onnxruntime does (goldens from it), on
Generic and on Siracusa under QEMU."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.reference import run_reference
from DeeployTest.test_suite.test_compiler_defects import needs_qemu, run_generic, run_siracusa

NAN = np.float32(np.nan)


def _nan_case(folder):
    x = np.array([[NAN, -3.25, 0.5, NAN, 2.75, -0.125, 9.5, -7.5]], np.float32)
    x2 = np.array([[1.5, NAN, NAN, -2.25, 0.75, 4.5, NAN, -8.5]], np.float32)
    consts = [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in
              (("lo", -1.5), ("hi", 2.5), ("scale", 0.25))]
    consts += [numpy_helper.from_array(np.array(3, np.int8), "zp8"), numpy_helper.from_array(np.array(128, np.uint8), "zpu8")]
    nodes = [helper.make_node("Relu", ["x"], ["relu"], name="relu"),
             helper.make_node("Clip", ["x", "lo", "hi"], ["clip"], name="clip"),
             helper.make_node("Max", ["x", "x2"], ["max"], name="max"),
             helper.make_node("Min", ["x", "x2"], ["min"], name="min"),
             helper.make_node("HardSigmoid", ["x"], ["hsig"], name="hsig", alpha=0.25, beta=0.5),
             helper.make_node("QuantizeLinear", ["x", "scale", "zp8"], ["q8"], name="q8"),
             helper.make_node("QuantizeLinear", ["x", "scale", "zpu8"], ["qu8"], name="qu8")]
    outs = [(n, TensorProto.FLOAT) for n in ("relu", "clip", "max", "min", "hsig")]
    outs += [("q8", TensorProto.INT8), ("qu8", TensorProto.UINT8)]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 8]) for n in ("x", "x2")]
    graph = helper.make_graph(nodes, "nan", ins, [helper.make_tensor_value_info(n, t, [1, 8]) for n, t in outs], consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    folder.mkdir(parents=True)
    onnx.save(model, folder / "network.onnx")
    import onnxruntime as ort
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"x": x, "x2": x2})
    for k in range(5):    # the property under test: NaN in, NaN out
        assert np.isnan(expected[k][0, 0])
    np.savez(folder / "inputs.npz", x=x, x2=x2)
    np.savez(folder / "outputs.npz", **{n: v for (n, _), v in zip(outs, expected)})
    return folder


def test_nan_reference_agrees_with_onnxruntime(tmp_path):
    folder = _nan_case(tmp_path / "nan")
    graph = load_onnx(folder / "network.onnx")
    with np.load(folder / "inputs.npz") as data:
        inputs = {k: data[k] for k in data.files}
    assign_input_types(graph, inputs)
    infer_graph(graph)
    got = run_reference(graph, inputs)
    with np.load(folder / "outputs.npz") as data:
        for name in data.files:
            np.testing.assert_array_equal(got[name], data[name], err_msg=name)   # NaN matches NaN


def test_nan_generic(tmp_path, capsys):
    run_generic(_nan_case(tmp_path / "nan"), capsys)


@needs_qemu
def test_nan_siracusa(tmp_path, capsys):
    run_siracusa(_nan_case(tmp_path / "nan"), capsys)
