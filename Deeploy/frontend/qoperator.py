"""QOperator models (onnxruntime's ``quantize_static(quant_format=QuantFormat.QOperator)``): every
quantized operator is rewritten, at load time, into the QDQ group it stands for,

    QLinearConv(x, xs, xz, w, ws, wz, ys, yz, B)  =>  Q(Conv(DQ(x, xs, xz), DQ(w, ws, wz), DQ(B, xs*ws)), ys, yz)

(likewise QLinearMatMul, com.microsoft's QGemm, QLinearAdd, QLinearMul, QLinearAveragePool,
QLinearGlobalAveragePool, QLinearSigmoid, QLinearLeakyRelu and QLinearSoftmax), so that one lowering
(``passes/qdq.py``) serves both formats and the QDQ group's float meaning is the operator's."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx
from onnx import helper, numpy_helper

from Deeploy.errors import FrontendError

__all__ = ["expand_qoperators"]


@dataclass(frozen=True)
class _Form:
    """Where a quantized operator keeps its operands: (value, scale, zero point) input indices per
    float operand, the output's (scale, zero point), and the int32 bias (scale: the first two
    operands' scales times ``alpha``)."""

    op: str
    operands: tuple[tuple[int, int, int], ...]
    output: tuple[int, int]
    bias: int | None = None
    weight_axis: int | None = None      # the second operand's per-channel axis (None: transB decides)
    dropped: tuple[str, ...] = ()       # attributes the float op does not have


_BINARY = ((0, 1, 2), (3, 4, 5))
_UNARY = ((0, 1, 2),)
_FORMS = {
    ("", "QLinearConv"): _Form("Conv", _BINARY, (6, 7), bias=8, weight_axis=0),
    ("", "QLinearMatMul"): _Form("MatMul", _BINARY, (6, 7), weight_axis=-1),
    ("com.microsoft", "QGemm"): _Form("Gemm", _BINARY, (7, 8), bias=6),
    ("com.microsoft", "QLinearAdd"): _Form("Add", _BINARY, (6, 7)),
    ("com.microsoft", "QLinearMul"): _Form("Mul", _BINARY, (6, 7)),
    ("com.microsoft", "QLinearAveragePool"): _Form("AveragePool", _UNARY, (3, 4)),
    ("com.microsoft", "QLinearGlobalAveragePool"): _Form("GlobalAveragePool", _UNARY, (3, 4)),
    ("com.microsoft", "QLinearSigmoid"): _Form("Sigmoid", _UNARY, (3, 4)),
    ("com.microsoft", "QLinearLeakyRelu"): _Form("LeakyRelu", _UNARY, (3, 4)),
    ("com.microsoft", "QLinearSoftmax"): _Form("Softmax", _UNARY, (3, 4), dropped=("opset",)),   # the file's opset
}


def _input(node: onnx.NodeProto, index: int | None) -> str:
    return node.input[index] if index is not None and index < len(node.input) else ""


def _expand(node: onnx.NodeProto, form: _Form, name: str, constants: dict[str, np.ndarray],
            fresh) -> tuple[list[onnx.NodeProto], list[onnx.TensorProto]]:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name not in form.dropped}
    if attrs.pop("channels_last", 0):
        raise FrontendError(f"node '{name}' ({node.op_type}): channels_last=1 is not supported; "
                            "quantize the model with channels-first (NCHW) operators")
    nodes, inits, floats = [], [], []
    for k, (value, scale, zero_point) in enumerate(form.operands):
        axis = form.weight_axis if form.weight_axis is not None else (0 if attrs.get("transB", 0) else 1)
        extra = {"axis": axis} if k == 1 and scale < len(node.input) and np.size(
            constants.get(node.input[scale], 1)) > 1 else {}
        floats.append(fresh(f"{node.input[value]}_dequantized"))
        ins = [node.input[value], node.input[scale]] + ([node.input[zero_point]] if _input(node, zero_point) else [])
        nodes.append(helper.make_node("DequantizeLinear", ins, [floats[-1]], f"{name}_dq{k}", **extra))
    if _input(node, form.bias):
        scales = [node.input[form.operands[k][1]] for k in (0, 1)]
        bias_scale = fresh(f"{node.input[form.bias]}_scale")
        alpha = np.float32(attrs.get("alpha", 1.0))
        if all(s in constants for s in scales):
            product = constants[scales[0]].astype(np.float32) * constants[scales[1]].astype(np.float32) * alpha
            inits.append(numpy_helper.from_array(product.reshape(-1).astype(np.float32), bias_scale))
        else:
            nodes.append(helper.make_node("Mul", scales, [bias_scale], f"{name}_bias_scale"))
        floats.append(fresh(f"{node.input[form.bias]}_dequantized"))
        nodes.append(helper.make_node("DequantizeLinear", [node.input[form.bias], bias_scale], [floats[-1]],
                                      f"{name}_dq_bias", axis=0))
    scale, zero_point = (_input(node, i) for i in form.output)
    result = fresh(f"{node.output[0]}_float") if scale else node.output[0]
    nodes.append(helper.make_node(form.op, floats, [result], name, **attrs))
    if scale:
        ins = [result, scale] + ([zero_point] if zero_point else [])
        nodes.append(helper.make_node("QuantizeLinear", ins, [node.output[0]], f"{name}_q"))
    return nodes, inits


def expand_qoperators(graph: onnx.GraphProto) -> None:
    """Rewrite the quantized operators of ``graph`` in place into their QDQ groups."""
    if not any((n.domain if n.domain != "ai.onnx" else "", n.op_type) in _FORMS for n in graph.node):
        return
    constants = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    constants.update({n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in graph.node
                      if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"})
    taken = {t for n in graph.node for t in (*n.input, *n.output)} | set(constants) | {i.name for i in graph.input}

    def fresh(base: str) -> str:
        name, k = base, 0
        while name in taken:
            k += 1
            name = f"{base}_{k}"
        taken.add(name)
        return name

    expanded = []
    for index, node in enumerate(graph.node):
        form = _FORMS.get((node.domain if node.domain != "ai.onnx" else "", node.op_type))
        if form is None:
            expanded.append(node)
            continue
        nodes, inits = _expand(node, form, node.name or f"{node.op_type}_{index}", constants, fresh)
        expanded.extend(nodes)
        graph.initializer.extend(inits)
    del graph.node[:]
    graph.node.extend(expanded)
