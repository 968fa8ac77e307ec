"""QDQ models from onnxruntime's ``quantize_static`` run as integer kernels (passes/qdq.py) and match
onnxruntime bit for bit on Generic and Siracusa (untiled and tiled).

The models are quantized with ``reduce_range`` (7-bit weights): on x86 CPUs without VNNI,
onnxruntime's u8s8 kernels (which it also uses for int8 activations) saturate pairs of products
to int16, so with 8-bit weights its own results are not the integer sums; 7-bit weights cannot
saturate, and onnxruntime documents them as the remedy."""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

from Deeploy.cli import main
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.frontend.type_inference import infer_graph
from Deeploy.passes.manager import run_passes
from Deeploy.passes.qdq import lower_qdq
from Deeploy.reference import run_reference
from DeeployTest.test_suite.test_siracusa_networks import pytestmark as needs_qemu

X_SHAPE = [1, 8, 16, 16]


def _cnn(rng, head: str) -> onnx.ModelProto:
    """Conv 8->16 -> Relu -> Conv 16->16 -> Relu -> Flatten -> Gemm (or MatMul) to 10."""
    def w(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)
    inits = [w("w1", [16, 8, 3, 3]), w("b1", [16]), w("w2", [16, 16, 1, 3]), w("b2", [16])]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[0, 1, 0, 1], strides=[2, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Flatten", ["r2"], ["f"])]
    if head == "Gemm":
        inits += [w("wg", [10, 16 * 8 * 16]), w("bg", [10])]
        nodes.append(helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1))
    else:
        inits.append(w("wg", [16 * 8 * 16, 10]))
        nodes.append(helper.make_node("MatMul", ["f", "wg"], ["y"]))
    graph = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, X_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


class _RandomData(CalibrationDataReader):
    def __init__(self, rng):
        self.batches = iter([{"x": rng.standard_normal(X_SHAPE).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.batches, None)


def _quantized(tmp_path, activations: str, head: str = "Gemm", quant_format=QuantFormat.QDQ) -> str:
    rng = np.random.default_rng(3)
    onnx.save(_cnn(rng, head), tmp_path / "float.onnx")
    path = tmp_path / "network.onnx"
    quantize_static(str(tmp_path / "float.onnx"), str(path), _RandomData(rng), quant_format=quant_format,
                    per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QInt8 if activations == "int8" else QuantType.QUInt8)
    return str(path)


def _validate(capsys, *argv) -> str:
    code = main(["validate", *map(str, argv)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 0, text
    assert "reference vs onnxruntime: worst error 0, 0 of 10 elements" in text, text
    assert re.search(r"^Errors: 0 out of 10 \(float outputs: worst abs error 0\.000e0", text, re.M), text
    return text


def _lowered(path: str):
    graph = load_onnx(path)
    assign_input_types(graph)
    infer_graph(graph)
    return run_passes(graph, [lower_qdq])


@pytest.mark.parametrize("activations", ["int8", "uint8"])
@pytest.mark.parametrize("head", ["Gemm", "MatMul"])
def test_qdq_groups_become_integer_kernels(tmp_path, activations, head):
    """Convolutions and the GEMM run on int8 weights with integer sums; only the network's input
    quantizer and output dequantizer stay float."""
    graph = _lowered(_quantized(tmp_path, activations, head))
    ops = [n.op for n in graph.nodes]
    assert ops.count("QuantizeLinear") == 1 and ops.count("DequantizeLinear") == 1, ops
    assert ops.count("RequantizeLinear") == 3, ops
    for node in graph.nodes:
        if node.op in ("Conv", "Gemm", "MatMul"):
            x, w = (graph.tensors[i] for i in node.inputs[:2])
            assert str(x.dtype) == activations and str(w.dtype) == "int8" and w.is_constant, node
            assert not graph.tensors[node.outputs[0]].dtype.is_float, node


@pytest.mark.parametrize("activations", ["int8", "uint8"])
@pytest.mark.parametrize("head", ["Gemm", "MatMul"])
def test_qdq_cnn_bit_exact_with_onnxruntime_on_generic(tmp_path, capsys, activations, head):
    _validate(capsys, _quantized(tmp_path, activations, head), "--platform", "Generic")


@pytest.mark.parametrize("activations", ["int8", "uint8"])
@pytest.mark.parametrize("head", ["Gemm", "MatMul"])
def test_qoperator_cnn_runs_as_the_qdq_integer_kernels(tmp_path, capsys, activations, head):
    """QLinearConv (with its Relu in the zero point), QLinearMatMul and com.microsoft's QGemm
    become the QDQ groups the lowering turns into integer kernels, bit-exact with onnxruntime."""
    path = _quantized(tmp_path, activations, head, QuantFormat.QOperator)
    assert {n.op_type for n in onnx.load(path).graph.node} >= {"QLinearConv", "QGemm" if head == "Gemm" else "QLinearMatMul"}
    ops = [n.op for n in _lowered(path).nodes]
    assert ops.count("RequantizeLinear") == 3 and ops.count("QuantizeLinear") == ops.count("DequantizeLinear") == 1, ops
    _validate(capsys, path, "--platform", "Generic")


def test_qoperator_sigmoid_is_a_table_and_pooling_runs_float_and_is_listed(tmp_path, capsys):
    """com.microsoft's QLinearAdd, QLinearSigmoid and QLinearGlobalAveragePool become their QDQ
    groups: the Add runs on the integers, the Sigmoid as a table (onnxruntime's QLinearSigmoid is
    one), GlobalAveragePool computes in float (``-v`` lists it)."""
    rng = np.random.default_rng(0)
    weight = numpy_helper.from_array((rng.standard_normal([8, 8, 3, 3]) * 0.2).astype(np.float32), "w")
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["c", "x"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]), helper.make_node("GlobalAveragePool", ["s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 1, 1])], [weight])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "float.onnx")
    data = iter([{"x": rng.standard_normal([1, 8, 8, 8]).astype(np.float32)} for _ in range(4)])
    reader = type("Reader", (CalibrationDataReader,), {"get_next": lambda self: next(data, None)})()
    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "q.onnx"), reader, quant_format=QuantFormat.QOperator,
                    per_channel=True, reduce_range=True, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    assert [n.op_type for n in onnx.load(tmp_path / "q.onnx").graph.node][2:5] == \
        ["QLinearAdd", "QLinearSigmoid", "QLinearGlobalAveragePool"]
    code = main(["compile", str(tmp_path / "q.onnx"), "--platform", "Generic", "-o", str(tmp_path / "out"), "-v"])
    out = capsys.readouterr().out
    assert code == 0, out
    listed = next(line for line in out.splitlines() if line.startswith("  float:"))
    assert "(GlobalAveragePool)" in listed, listed
    assert "(Conv)" not in listed and "(Add)" not in listed and "(Sigmoid)" not in listed, listed


def _integer_model(tmp_path, op: str, w: np.ndarray, x_shape, y_shape, **attrs) -> str:
    """``op`` (MatMulInteger or ConvInteger) of a uint8 input with zero point 131 and weights ``w``."""
    weights = [numpy_helper.from_array(w, "w")] if w is not None else []
    inputs = [helper.make_tensor_value_info("x", TensorProto.UINT8, x_shape)]
    if w is None:
        inputs.append(helper.make_tensor_value_info("w", TensorProto.INT8, [x_shape[-1], y_shape[-1]]))
    graph = helper.make_graph([helper.make_node(op, ["x", "w", "zx"], ["y"], **attrs)], "integer", inputs,
                              [helper.make_tensor_value_info("y", TensorProto.INT32, y_shape)],
                              weights + [numpy_helper.from_array(np.array(131, np.uint8), "zx")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / f"{op}.onnx")
    return str(tmp_path / f"{op}.onnx")


def test_matmul_integer_and_conv_integer_run_as_integer_kernels(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for path, n in ((_integer_model(tmp_path, "MatMulInteger", rng.integers(-64, 64, [32, 10]).astype(np.int8),
                                    [2, 4, 32], [2, 4, 10]), 80),
                    (_integer_model(tmp_path, "ConvInteger", rng.integers(0, 128, [4, 3, 3, 3]).astype(np.uint8),
                                    [1, 3, 6, 6], [1, 4, 6, 6], pads=[1, 1, 1, 1]), 144)):
        assert [n.op for n in _lowered(path).nodes][-1] in ("Gemm", "Conv")
        code = main(["validate", path, "--platform", "Generic"])
        text = capsys.readouterr().out
        assert code == 0 and f"Errors: 0 out of {n}" in text and "worst error 0, 0 of" in text, text


def test_matmul_integer_of_two_activations_is_refused_in_one_line(tmp_path, capsys):
    code = main(["compile", _integer_model(tmp_path, "MatMulInteger", None, [4, 32], [4, 10]), "--platform", "Generic",
                 "-o", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert code != 0 and not (tmp_path / "out").exists()
    lines = [line for line in (out.out + out.err).splitlines() if line.startswith("error:")]
    assert lines == ["error: node 'MatMulInteger_0' (MatMulInteger): runs only as MatMul of constant weights with zero "
                     "points 0 and a constant scalar zero point of A, here the weights are not constant with zero "
                     "points 0"], out
    assert "Traceback" not in out.out + out.err


@needs_qemu
@pytest.mark.parametrize("activations,quant_format", [("int8", QuantFormat.QDQ), ("uint8", QuantFormat.QDQ),
                                                      ("uint8", QuantFormat.QOperator)])
def test_qdq_cnn_bit_exact_with_onnxruntime_on_siracusa(tmp_path, capsys, activations, quant_format):
    path = _quantized(tmp_path, activations, quant_format=quant_format)
    _validate(capsys, path, "--platform", "Siracusa")
    _validate(capsys, path, "--platform", "Siracusa", "--l1", "12000")


def test_uint8_zero_point_of_zero_saturates_at_zero(tmp_path):
    """A uint8 zero point 0 keeps its type: QuantizeLinear of negative values gives 0 (not a
    negative int8), as in onnxruntime."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "zp"], ["q"]),
             helper.make_node("DequantizeLinear", ["q", "s", "zp"], ["y"])]
    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "s"),
             numpy_helper.from_array(np.array(0, np.uint8), "zp")]
    graph = helper.make_graph(nodes, "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, tmp_path / "q.onnx")
    x = np.array([-3.0, -0.26, -0.05, 0.0, 0.26, 30.0], np.float32)
    want = ort.InferenceSession(str(tmp_path / "q.onnx"), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    loaded = load_onnx(tmp_path / "q.onnx")
    assign_input_types(loaded, {"x": x})
    infer_graph(loaded)
    assert str(loaded.tensors["q"].dtype) == "uint8"
    np.testing.assert_array_equal(run_reference(loaded, {"x": x})["y"], want)


def test_verbose_summary_lists_the_float_layers(tmp_path, capsys):
    code = main(["compile", _quantized(tmp_path, "uint8"), "--platform", "Generic", "-o", str(tmp_path / "out"), "-v"])
    out = capsys.readouterr().out
    assert code == 0, out
    float_lines = [line for line in out.splitlines() if line.startswith("  float:")]
    want = "  float:      x_QuantizeLinear (QuantizeLinear), y_DequantizeLinear (DequantizeLinear)"
    assert float_lines == [want], out


def test_relu_before_a_quantizer_at_its_minimum_is_the_saturation(tmp_path, capsys):
    """DQ -> Conv -> Relu -> Q with Q's zero point at -128: the Relu drops (as in onnxruntime) and
    the group runs as integers, bit-exact with onnxruntime."""
    model = onnx.load(_quantized(tmp_path, "int8"))
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    zero_point = next(i for i in model.graph.initializer if i.name == f"{conv.output[0]}_zero_point")
    assert numpy_helper.to_array(zero_point) == -128
    conv.output[0], relu_out = conv.output[0] + "_conv", conv.output[0]
    model.graph.node.insert(list(model.graph.node).index(conv) + 1,
                            helper.make_node("Relu", [conv.output[0]], [relu_out]))
    path = tmp_path / "relu.onnx"
    onnx.save(model, path)
    graph = _lowered(str(path))
    assert "Relu" not in [n.op for n in graph.nodes] and [n.op for n in graph.nodes].count("RequantizeLinear") == 3
    _validate(capsys, path, "--platform", "Generic")


@pytest.mark.parametrize("activations", ["int8", "uint8"])
def test_per_channel_requantisation_lets_the_layout_transposes_cancel(tmp_path, activations):
    """On Siracusa the convolutions run channels-last: the Transposes around them move through
    the per-channel RequantizeLinear (its scale transposed along) and the zero-point Pad (its pads
    permuted) and cancel; only the input's and the one before Flatten stay."""
    from Deeploy.targets.siracusa.platform import SIRACUSA_PASSES
    graph = _lowered(_quantized(tmp_path, activations))
    graph = run_passes(graph, SIRACUSA_PASSES)
    transposes = [n for n in graph.nodes if n.op == "Transpose"]
    assert len(transposes) == 2, [repr(n) for n in transposes]


def _quantized_elementwise(tmp_path, activations: str, quant_format=QuantFormat.QDQ) -> str:
    """Conv -> residual Add -> Mul by a per-channel constant (broadcast along H and W) -> Mul by
    the input, quantized by onnxruntime (QDQ: the Add and Mul groups; QOperator: QLinearAdd and
    QLinearMul)."""
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array((rng.standard_normal([8, 8, 3, 3]) * 0.2).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal([8, 1, 1]).astype(np.float32), "c")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["cv"], pads=[1, 1, 1, 1]), helper.make_node("Add", ["cv", "x"], ["a"]),
             helper.make_node("Mul", ["a", "c"], ["m"]), helper.make_node("Mul", ["m", "x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 8, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "float.onnx")
    data = iter([{"x": rng.standard_normal([1, 8, 8, 8]).astype(np.float32)} for _ in range(4)])
    reader = type("Reader", (CalibrationDataReader,), {"get_next": lambda self: next(data, None)})()
    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "q.onnx"), reader, quant_format=quant_format,
                    per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QInt8 if activations == "int8" else QuantType.QUInt8)
    return str(tmp_path / "q.onnx")


def _validate_n(capsys, n: int, *argv) -> None:
    code = main(["validate", *map(str, argv)])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 0, text
    assert f"reference vs onnxruntime: worst error 0, 0 of {n} elements" in text, text
    assert re.search(rf"^Errors: 0 out of {n}( \(float outputs: worst abs error 0\.000e0|$)", text, re.M), text


@pytest.mark.parametrize("activations,quant_format", [("int8", QuantFormat.QDQ), ("uint8", QuantFormat.QDQ),
                                                      ("uint8", QuantFormat.QOperator)])
def test_qdq_add_and_mul_run_as_qlinear_kernels(tmp_path, capsys, activations, quant_format):
    """The Add and Mul groups (QOperator: QLinearAdd, QLinearMul) become QLinearAdd and QLinearMul on
    the integers, bit-exact with onnxruntime; only the input quantizer and output dequantizer stay float."""
    path = _quantized_elementwise(tmp_path, activations, quant_format)
    ops = [n.op for n in _lowered(path).nodes]
    assert ops.count("QLinearAdd") == 1 and ops.count("QLinearMul") == 2, ops
    assert ops.count("QuantizeLinear") == ops.count("DequantizeLinear") == 1 and "Add" not in ops, ops
    _validate_n(capsys, 512, path, "--platform", "Generic")


@needs_qemu
def test_qdq_add_and_mul_bit_exact_on_siracusa(tmp_path, capsys):
    path = _quantized_elementwise(tmp_path, "int8")
    _validate_n(capsys, 512, path, "--platform", "Siracusa")
    _validate_n(capsys, 512, path, "--platform", "Siracusa", "--l1", "1500")


def _qlinear_model(tmp_path, op: str, dtype, a_shape, b_shape, scales, zero_points) -> str:
    """One com.microsoft ``op`` node of two activations."""
    elem = TensorProto.INT8 if dtype == np.int8 else TensorProto.UINT8
    inits = [numpy_helper.from_array(np.array(s, np.float32), f"{t}s") for t, s in zip("aby", scales)]
    inits += [numpy_helper.from_array(np.array(z, dtype), f"{t}z") for t, z in zip("aby", zero_points)]
    node = helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="com.microsoft")
    out_shape = list(np.broadcast_shapes(tuple(a_shape), tuple(b_shape)))
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info("a", elem, a_shape),
                                            helper.make_tensor_value_info("b", elem, b_shape)],
                              [helper.make_tensor_value_info("y", elem, out_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    path = tmp_path / f"{op}.onnx"
    onnx.save(model, path)
    return str(path)


@pytest.mark.parametrize("op", ["QLinearAdd", "QLinearMul"])
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qlinear_add_and_mul_match_onnxruntime_on_every_pair(tmp_path, capsys, op, dtype):
    """Every pair of 8-bit operands, same shape and with b one value per row (onnxruntime's scalar
    span), for a few scale sets: the Generic kernel gives onnxruntime's values."""
    info, rng = np.iinfo(dtype), np.random.default_rng(7)
    values = np.arange(info.min, info.max + 1).astype(dtype)
    rows, columns = np.repeat(values[:, None], 256, axis=1), np.tile(values, (256, 1))
    for a, b in ((rows, columns), (columns, values[:, None]), (values[:, None], columns)):
        scales = rng.uniform(0.004, 0.2, 3).astype(np.float32)
        path = _qlinear_model(tmp_path, op, dtype, list(a.shape), list(b.shape), scales,
                              rng.integers(info.min, info.max + 1, 3))
        np.savez(tmp_path / "inputs.npz", a=a, b=b)
        _validate_n(capsys, 65536, path, "--platform", "Generic", "--inputs", tmp_path / "inputs.npz")


def _quantized_block(tmp_path, activations: str, gelu: str, quant_format=QuantFormat.QDQ) -> str:
    """A transformer block on 8 tokens of width 16, quantized by onnxruntime (QDQ): LayerNorm ->
    Q, K, V linear layers (MatMul + Add) -> softmax(Q K^T / 4) V -> output linear layer ->
    residual Add -> MLP 16 -> 32 -> 16 with Gelu (``erf``: the Div/Erf/Add/Mul/Mul form of exports
    before opset 20, ``op``: opset 20's Gelu)."""
    t, d, h = 8, 16, 32
    rng = np.random.default_rng(11)

    def w(name, shape, scale):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)
    inits = [w("g", [d], 0.2), w("be", [d], 0.1), numpy_helper.from_array(np.array(0.25, np.float32), "scale")]
    for name, (k, n) in dict(wq=(d, d), wk=(d, d), wv=(d, d), wo=(d, d), w1=(d, h), w2=(h, d)).items():
        inits += [w(name, [k, n], 1 / np.sqrt(k)), w("b" + name[1:], [n], 0.1)]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "be"], ["n"], axis=-1)]
    for name in "qkv":
        nodes += [helper.make_node("MatMul", ["n", f"w{name}"], [f"{name}m"]),
                  helper.make_node("Add", [f"{name}m", f"b{name}"], [name])]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]), helper.make_node("MatMul", ["q", "kt"], ["s"]),
              helper.make_node("Mul", ["s", "scale"], ["ss"]), helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["a"]), helper.make_node("MatMul", ["a", "wo"], ["om"]),
              helper.make_node("Add", ["om", "bo"], ["o"]), helper.make_node("Add", ["x", "o"], ["r"]),
              helper.make_node("MatMul", ["r", "w1"], ["h1m"]), helper.make_node("Add", ["h1m", "b1"], ["h1"])]
    if gelu == "erf":
        inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("sqrt2", np.sqrt(2)), ("one", 1),
                                                                                  ("half", 0.5))]
        nodes += [helper.make_node("Div", ["h1", "sqrt2"], ["gd"]), helper.make_node("Erf", ["gd"], ["ge"]),
                  helper.make_node("Add", ["ge", "one"], ["ga"]), helper.make_node("Mul", ["h1", "ga"], ["gm"]),
                  helper.make_node("Mul", ["gm", "half"], ["h1g"])]
    else:
        nodes.append(helper.make_node("Gelu", ["h1"], ["h1g"]))
    nodes += [helper.make_node("MatMul", ["h1g", "w2"], ["h2m"]), helper.make_node("Add", ["h2m", "b2"], ["y"])]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, t, d])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, t, d])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17 if gelu == "erf" else 20)])
    model.ir_version = 9
    onnx.save(model, tmp_path / "float.onnx")
    data = iter([{"x": rng.standard_normal([1, t, d]).astype(np.float32)} for _ in range(8)])
    reader = type("Reader", (CalibrationDataReader,), {"get_next": lambda self: next(data, None)})()
    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "network.onnx"), reader, quant_format=quant_format,
                    per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QInt8 if activations == "int8" else QuantType.QUInt8)
    return str(tmp_path / "network.onnx")


# What stays float: the network's input quantizer and output dequantizer, and the LayerNormalization
# between its quantizers (a whole row in, so no table); Gelu, in either form, is a TableLookup.
_BLOCK_FLOATS = {"QuantizeLinear", "DequantizeLinear", "LayerNormalization"}


@pytest.mark.parametrize("activations,gelu,quant_format", [("int8", "erf", QuantFormat.QDQ), ("uint8", "op", QuantFormat.QDQ),
                                                           ("uint8", "erf", QuantFormat.QOperator)])
def test_qdq_transformer_block_runs_integer_kernels_bit_exact_on_generic(tmp_path, capsys, activations, gelu,
                                                                         quant_format):
    """Linear layers, the attention MatMuls, Softmax (onnxruntime's QLinearSoftmax), Add and Mul run
    on the integers; only what onnxruntime computes in float stays float; bit-exact with
    onnxruntime (QOperator: QLinearMatMul, QLinearAdd, QLinearMul, QLinearSoftmax likewise)."""
    path = _quantized_block(tmp_path, activations, gelu, quant_format)
    graph = _lowered(path)
    floats = {n.op for n in graph.nodes if any(graph.tensors[o].dtype.is_float for o in n.outputs)}
    assert floats <= _BLOCK_FLOATS, floats
    ops = [n.op for n in graph.nodes]
    tables = [graph.tensors[n.outputs[0]].dtype.bits for n in graph.nodes if n.op == "TableLookup"]
    assert ops.count("QLinearSoftmax") == 1 and tables.count(8) == 2, ops     # the score scaling, Gelu
    assert "Cast" not in ops and "Sub" not in ops, ops         # operands less their zero points: int16 tables
    assert ops.count("RequantizeLinearAdd") == 6 and ops.count("QLinearAdd") == 1, ops   # the biases; the residual
    _validate_n(capsys, 128, path, "--platform", "Generic")


def _quantized_softmax(tmp_path, dtype) -> str:
    """DQ -> Softmax -> Q over rows of 40 (y's scale 1/255 as quantize_static sets it), with
    random 8-bit inputs (inputs.npz)."""
    info, rng = np.iinfo(dtype), np.random.default_rng(2)
    elem = TensorProto.INT8 if dtype == np.int8 else TensorProto.UINT8
    inits = [numpy_helper.from_array(np.array(0.07, np.float32), "xs"), numpy_helper.from_array(np.array(3, dtype), "xz"),
             numpy_helper.from_array(np.array(1 / 255, np.float32), "ys"),
             numpy_helper.from_array(np.array(info.min, dtype), "yz")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["f"]), helper.make_node("Softmax", ["f"], ["p"]),
             helper.make_node("QuantizeLinear", ["p", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "softmax", [helper.make_tensor_value_info("x", elem, [2, 64, 40])],
                              [helper.make_tensor_value_info("y", elem, [2, 64, 40])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "softmax.onnx")
    np.savez(tmp_path / "inputs.npz", x=rng.integers(info.min, info.max + 1, [2, 64, 40]).astype(dtype))
    return str(tmp_path / "softmax.onnx")


@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_qdq_softmax_is_onnxruntimes_table_softmax(tmp_path, capsys, dtype):
    """DQ -> Softmax -> Q becomes QLinearSoftmax, which onnxruntime runs for it: bit-exact over
    many rows (a float softmax between the quantizers is off by one step on some of them)."""
    path = _quantized_softmax(tmp_path, dtype)
    assert "QLinearSoftmax" in [n.op for n in _lowered(path).nodes]
    _validate_n(capsys, 5120, path, "--platform", "Generic", "--inputs", tmp_path / "inputs.npz")


@needs_qemu
@pytest.mark.parametrize("activations,gelu", [("int8", "erf"), ("uint8", "op")])
def test_qdq_transformer_block_bit_exact_on_siracusa(tmp_path, capsys, activations, gelu):
    path = _quantized_block(tmp_path, activations, gelu)
    _validate_n(capsys, 128, path, "--platform", "Siracusa")
    _validate_n(capsys, 128, path, "--platform", "Siracusa", "--l1", "6000")


@needs_qemu
def test_qdq_softmax_tiled_by_rows_on_siracusa(tmp_path, capsys):
    path = _quantized_softmax(tmp_path, np.int8)
    _validate_n(capsys, 5120, path, "--platform", "Siracusa", "--l1", "3000", "--inputs", tmp_path / "inputs.npz")


def _quantize_linear(tmp_path, scale, zero_point, axis: int = 1) -> tuple[str, np.ndarray]:
    """QuantizeLinear of a [2, 3, 1500] float input to int8 (``scale`` and ``zero_point`` per
    tensor or along ``axis``), the input holding halfway points of the quotient, their float
    neighbours, and random values."""
    scale, zero_point = np.asarray(scale, np.float32), np.asarray(zero_point, np.int8)
    s = scale.reshape(1, -1, 1) if scale.size > 1 else scale
    rng = np.random.default_rng(4)
    k = rng.integers(-150, 150, [2, 3, 500]) + 0.5
    half = (k * s).astype(np.float32)
    x = np.concatenate([half, np.nextafter(half, np.float32(np.inf)), (rng.standard_normal([2, 3, 500]) * 3)
                        .astype(np.float32)], axis=2)
    x[0, 0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    inits = [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(zero_point, "z")]
    graph = helper.make_graph([helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], axis=axis)], "q",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, list(x.shape))], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "quantize.onnx")
    np.savez(tmp_path / "inputs.npz", x=x)
    return str(tmp_path / "quantize.onnx"), x


_QUANTIZERS = [(np.float32(0.0123), -7), ([0.0123, 0.3, 1e-3], [0, 5, -128])]


@pytest.mark.parametrize("scale,zero_point", _QUANTIZERS)
def test_quantize_linear_divides_exactly_on_generic(tmp_path, capsys, scale, zero_point):
    """x / scale rounded half to even as onnxruntime divides: halfway quotients, their neighbours,
    NaN and infinities, per tensor and per channel."""
    path, x = _quantize_linear(tmp_path, scale, zero_point)
    _validate_n(capsys, x.size, path, "--platform", "Generic", "--inputs", tmp_path / "inputs.npz")


@needs_qemu
@pytest.mark.parametrize("scale,zero_point", _QUANTIZERS)
def test_quantize_linear_divides_exactly_on_siracusa(tmp_path, capsys, scale, zero_point):
    path, x = _quantize_linear(tmp_path, scale, zero_point)
    _validate_n(capsys, x.size, path, "--platform", "Siracusa", "--inputs", tmp_path / "inputs.npz")


@needs_qemu
@pytest.mark.parametrize("wtype", [np.int8, np.uint8])
def test_conv_integer_on_the_clusters_dot_products(tmp_path, capsys, wtype):
    """A ConvInteger of uint8 x (4 channels: the PULP dot-product block) and int8 or uint8 weights
    on Siracusa, untiled and tiled: the integer sums, bit-exact."""
    rng = np.random.default_rng(6)
    info = np.iinfo(wtype)
    w = rng.integers(info.min, info.max + 1, [8, 4, 3, 3]).astype(wtype)
    path = _integer_model(tmp_path, "ConvInteger", w, [1, 4, 7, 6], [1, 8, 7, 6], pads=[1, 1, 1, 1])
    for extra in ([], ["--l1", "2000"]):
        code = main(["validate", path, "--platform", "Siracusa", *extra])
        text = capsys.readouterr().out
        assert code == 0 and "Errors: 0 out of 336" in text and "worst error 0, 0 of" in text, text


def _chain_model(tmp_path, chain: str, dtype) -> str:
    """An 8-bit input holding each of its 256 values -> DQ -> float ops of it and constants, with
    the quantizers onnxruntime's ``quantize_static`` puts between them -> Q: ``gelu_erf`` (the
    Div/Erf/Add/Mul/Mul form, x read twice), ``sigmoid``, ``div_tanh``."""
    info = np.iinfo(dtype)
    elem = TensorProto.INT8 if dtype == np.int8 else TensorProto.UINT8
    inits, nodes, k = [], [], iter(range(100))

    def const(value, np_type=np.float32):
        name = f"c{next(k)}"
        inits.append(numpy_helper.from_array(np.array(value, np_type), name))
        return name

    def dq(x, scale, zp):
        nodes.append(helper.make_node("DequantizeLinear", [x, const(scale), const(zp, dtype)], [x + "_f"]))
        return x + "_f"

    def q(x, scale, zp, name):
        nodes.append(helper.make_node("QuantizeLinear", [x, const(scale), const(zp, dtype)], [name]))
        return name

    def op(kind, *ins):
        nodes.append(helper.make_node(kind, list(ins), [f"t{len(nodes)}"]))
        return nodes[-1].output[0]

    zp = (info.min + info.max + 1) // 2 + 3
    x = dq("x", 0.0473, zp)
    if chain == "gelu_erf":
        e = q(op("Erf", op("Div", x, const(np.sqrt(2)))), 0.0079, 1 + info.min, "e")
        a = q(op("Add", dq(e, 0.0079, 1 + info.min), dq(q(const(1.0), 0.0039, info.min, "one"), 0.0039, info.min)),
              0.0078, info.min, "a")
        m = q(op("Mul", x, dq(a, 0.0078, info.min)), 0.051, zp - 40, "m")
        y = q(op("Mul", dq(m, 0.051, zp - 40), dq(q(const(0.5), 0.002, info.min, "h"), 0.002, info.min)),
              0.026, zp - 40, "y")
    elif chain == "sigmoid":
        y = q(op("Sigmoid", x), 1 / 255, info.min, "y")
    else:
        y = q(op("Tanh", op("Div", x, const(2.7))), 1 / 127, zp - 1, "y")
    graph = helper.make_graph(nodes, chain, [helper.make_tensor_value_info("x", elem, [4, 64])],
                              [helper.make_tensor_value_info(y, elem, [4, 64])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, tmp_path / "chain.onnx")
    np.savez(tmp_path / "inputs.npz", x=np.arange(info.min, info.max + 1).astype(dtype).reshape(4, 64))
    return str(tmp_path / "chain.onnx")


_CHAINS = [("gelu_erf", np.int8), ("gelu_erf", np.uint8), ("sigmoid", np.uint8), ("div_tanh", np.int8)]


@pytest.mark.parametrize("chain,dtype", _CHAINS)
def test_qdq_chain_of_one_tensor_is_a_table_exact_on_every_value(tmp_path, capsys, chain, dtype):
    """DQ -> element-wise float ops of that one tensor and constants -> Q is one TableLookup (no
    float layer), its 256 entries onnxruntime's: all 256 input values on Generic."""
    path = _chain_model(tmp_path, chain, dtype)
    assert [n.op for n in _lowered(path).nodes] == ["TableLookup"]
    _validate_n(capsys, 256, path, "--platform", "Generic", "--inputs", tmp_path / "inputs.npz")


@needs_qemu
@pytest.mark.parametrize("chain,dtype", _CHAINS[:1])
def test_qdq_chain_table_exact_on_siracusa(tmp_path, capsys, chain, dtype):
    path = _chain_model(tmp_path, chain, dtype)
    _validate_n(capsys, 256, path, "--platform", "Siracusa", "--inputs", tmp_path / "inputs.npz")
    _validate_n(capsys, 256, path, "--platform", "Siracusa", "--l1", "320", "--inputs", tmp_path / "inputs.npz")
