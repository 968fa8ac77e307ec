"""QDQ lowering: the DequantizeLinear/QuantizeLinear groups of a statically quantized ONNX model
(onnxruntime's ``quantize_static``, QDQ format) run as integer kernels and compute what
onnxruntime's integer kernels (QLinearConv, QGemm, QLinearMatMul) compute:

- ``DQ(x), DQ(w)[, DQ(b)] -> Conv -> Q  =>  [Pad(x, zp_x)] -> Conv(x, w, b') -> RequantizeLinear``,
  likewise Gemm and MatMul (a MatMul with a zero point on x becomes a Gemm for its bias): int8
  weights stay int8, the sums are int32, x's zero point is folded into the bias
  (``b' = b - zp_x * sum(w)``; a padded convolution pads x with its zero point), and the sums are
  requantised by ``scale[c] = x_scale * w_scale[c] / y_scale`` in float32 (ops/quant.py);
- ``DQ(a), DQ(b) -> MatMul -> Q`` of two activations  =>  ``MatMul(a', b') -> RequantizeLinear``
  (onnxruntime's QLinearMatMul), an operand with a zero point widened to int16 and offset by it
  (one ``TableLookup``) so that the sums are those of the zero-point-free values;
- ``MatMulInteger`` and ``ConvInteger`` of constant weights with zero points 0  =>  the op with
  x's zero point folded into a bias likewise;
- ``Relu -> Q`` whose zero point is its type's minimum  =>  ``Q`` (the saturation is the Relu);
- ``DQ(a), DQ(b) -> Add/Mul -> Q`` of one 8-bit type  =>  ``QLinearAdd/QLinearMul(a, b)``, the
  scales and zero points as attributes (onnxruntime fuses these groups into its QLinearAdd and
  QLinearMul; ops/qlinear.py computes what they compute);
- ``DQ -> Softmax -> Q`` of one 8-bit type over trailing axes  =>  ``QLinearSoftmax`` (onnxruntime
  fuses it into its QLinearSoftmax, a table softmax; ops/qlinear.py);
- ``DQ -> op -> Q`` of a data movement op with the same scale and zero point  =>  the op on the
  integers.

Before these, a chain ``DQ -> element-wise standard ops of that one tensor and constant scalars
(with Q/DQ pairs between them) -> Q`` (Gelu, a Div or Mul by a constant, Sigmoid, Tanh, ...) becomes
a ``TableLookup`` of its 256 outputs, computed at compile time by onnxruntime running the chain's
nodes (its float32 Erf, Sigmoid, ... are onnxruntime's own, not the correctly rounded ones). After
them, ``RequantizeLinear -> QLinearAdd`` of a constant becomes one ``RequantizeLinearAdd``.

QOperator models reach this pass as QDQ groups (``frontend/qoperator.py``). A group whose weights are not constant with zero points 0, or whose activations are not
per-tensor, stays float (verbose mode says why), as does LayerNormalization, which onnxruntime computes
in float on whole rows between the quantizers. Dequantizers nobody reads any more are dropped.
"""

from __future__ import annotations

import heapq

import numpy as np
from onnx import helper, numpy_helper
from onnx.defs import onnx_opset_version

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import INT16, onnx_elem_type
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops import Trait, get_op, ops_with
from Deeploy.ops._attrs import attr_float, attr_int
from Deeploy.ops.qlinear import qlinear_add_of_constant
from Deeploy.ops.requant import channel_layout
from Deeploy.passes._engine import Pattern, Rule, RuleSet, apply_rules, chain, on_copy

__all__ = ["lower_qdq", "QDQ_LOWERING", "QDQ_FUSION"]

DQ, Q = "DequantizeLinear", "QuantizeLinear"


def _const(graph: Graph, name: str) -> np.ndarray | None:
    return graph.tensors[name].value if graph.is_constant(name) else None


def _zero_point(graph: Graph, node: Node) -> int:
    """The scalar zero point of a Q/DQ node (0 without one)."""
    return int(_const(graph, node.inputs[2]).reshape(-1)[0]) if len(node.inputs) > 2 and node.inputs[2] else 0


def _per_tensor(graph: Graph, node: Node | None, op: str) -> str | None:
    """Why ``node`` is not a per-tensor ``op`` with constant scale and zero point (None if it is)."""
    if node is None or node.op != op:
        return f"not a {op}"
    consts = [_const(graph, i) for i in node.inputs[1:] if i]
    if any(c is None for c in consts):
        return f"{node.op} '{node.name}' has a scale or zero point that is not constant"
    if any(c.size != 1 for c in consts):
        return f"{node.op} '{node.name}' is per channel (activations are quantized per tensor)"
    bits = graph.tensors[node.inputs[0] if op == DQ else node.outputs[0]].dtype.bits
    return None if bits == 8 else f"{node.op} '{node.name}' is not 8-bit"


def _weights(graph: Graph, node: Node | None, axis: int) -> str | None:
    """Why ``node`` is not a DQ of constant integer weights with zero points 0 and a scale per
    tensor or along ``axis``."""
    if node is None or node.op != DQ or _const(graph, node.inputs[0]) is None:
        return "the weights are not a DequantizeLinear of a constant"
    consts = [_const(graph, i) for i in node.inputs[1:] if i]
    if any(c is None for c in consts):
        return f"{node.op} '{node.name}' has a scale or zero point that is not constant"
    if len(consts) > 1 and np.any(consts[1] != 0):
        return f"{node.op} '{node.name}' has non-zero weight zero points"
    if consts[0].size > 1 and attr_int(node, "axis", 1) % len(graph.tensors[node.inputs[0]].shape) != axis:
        return f"{node.op} '{node.name}' is per channel along another axis than the output channels"
    return None


def _bias(graph: Graph, node: Node | None) -> str | None:
    """Why ``node`` is not a DQ of constant integers with zero point 0 (onnxruntime adds them to the sums)."""
    zp = node and (_const(graph, node.inputs[2]) if len(node.inputs) > 2 and node.inputs[2] else np.zeros(1))
    if node is None or node.op != DQ or _const(graph, node.inputs[0]) is None \
            or graph.tensors[node.inputs[0]].dtype.is_float or zp is None or np.any(zp != 0):
        return "the bias is not a DequantizeLinear of constant integers with zero point 0"
    return None


_INTEGER_OPS = {"ConvInteger": "Conv", "MatMulInteger": "MatMul"}     # zero points as inputs 2 and 3


def _weight_axis(op: Node, graph: Graph) -> int:
    """The weight axis of the output channels."""
    if op.op == "Gemm":
        return 0 if attr_int(op, "transB", 0) else 1
    return 0 if _INTEGER_OPS.get(op.op, op.op) == "Conv" else len(graph.tensors[op.inputs[1]].shape) - 1


def _op_fits(graph: Graph, op: Node, zx: int) -> str | None:
    """Why the integer op with x's zero point ``zx`` has no integer kernel form."""
    if op.op == "Gemm" and (attr_float(op, "alpha", 1.0) != 1.0 or attr_float(op, "beta", 1.0) != 1.0):
        return "Gemm with alpha or beta other than 1"
    if _INTEGER_OPS.get(op.op, op.op) == "MatMul" and (len(graph.tensors[op.inputs[1]].shape) != 2
                                                       or (zx and len(graph.tensors[op.inputs[0]].shape) > 3)):
        return "MatMul of constant weights needs a rank-2 B (and, with a zero point on A, a rank-2 or -3 A)"
    return None


def _group(graph: Graph, matched: list[Node]) -> str | None:
    op, q = matched
    if q.inputs[0] != op.outputs[0]:
        return "the op's output is not the quantizer's input"
    producers = graph.producers()
    parts = [producers.get(i) for i in op.inputs]
    reason = _per_tensor(graph, parts[0], DQ) or _per_tensor(graph, q, Q) \
        or _weights(graph, parts[1], _weight_axis(op, graph))
    if reason:
        return reason
    if len(parts) > 2 and op.inputs[2] and _bias(graph, parts[2]):
        return _bias(graph, parts[2])
    return _op_fits(graph, op, _zero_point(graph, parts[0]))


def _integer_op(graph: Graph, op: Node, x: str, zx: int, w: str, bias: np.ndarray | None, out: str) -> list[Node]:
    """``op`` (Conv, Gemm, MatMul or their zero-point forms) of integers ``x`` with zero point ``zx``
    and constant weights ``w`` with zero points 0, plus ``bias``, into ``out``: x's zero point folded
    into the bias, a padded convolution padding x with it."""
    wv, axis, kind = graph.tensors[w].value.astype(np.int64), _weight_axis(op, graph), _INTEGER_OPS.get(op.op, op.op)
    channels = wv.shape[axis]
    folded = (np.zeros(channels, np.int64) if bias is None else bias.astype(np.int64).reshape(-1)) \
        - zx * np.moveaxis(wv, axis, 0).reshape(channels, -1).sum(axis=1)
    attrs, nodes = dict(op.attrs), []
    if kind == "Conv" and zx and any(op.params.pads):
        top, left, bottom, right = op.params.pads
        pads = [0, 0, top, left, 0, 0, bottom, right] if op.params.dims == 2 else [0, 0, left, 0, 0, right]
        fill = graph.add_constant(f"{op.name}.zero_point", np.array(zx), graph.tensors[x].dtype)
        padded = graph.add_tensor(f"{x}_padded")
        nodes.append(Node(graph.fresh(f"{op.name}_pad"), "Pad", [x, graph.add_constant(f"{op.name}.pads", np.array(pads)), fill],
                          [padded]))
        x = padded
        attrs.pop("auto_pad", None)
        attrs["pads"] = [0] * (2 * op.params.dims)
    if kind == "MatMul" and zx:
        kind = "Gemm"
    inputs = [x, w] + ([graph.add_constant(f"{op.name}.bias", folded)] if bias is not None or zx else [])
    return nodes + [Node(op.name, kind, inputs, [out], attrs, op.domain)]


def _lower(graph: Graph, matched: list[Node]) -> list[Node]:
    op, q = matched
    producers = graph.producers()
    x_dq, w_dq = producers[op.inputs[0]], producers[op.inputs[1]]
    b_dq = producers[op.inputs[2]] if len(op.inputs) > 2 and op.inputs[2] else None
    acc = graph.add_tensor(f"{op.outputs[0]}_int")
    nodes = _integer_op(graph, op, x_dq.inputs[0], _zero_point(graph, x_dq), w_dq.inputs[0],
                        graph.tensors[b_dq.inputs[0]].value if b_dq else None, acc)
    return nodes + [_requantize(graph, x_dq, w_dq, q, acc, op.params.dims if op.op == "Conv" else 0)]


def _requantize(graph: Graph, a_dq: Node, b_dq: Node, q: Node, acc: str, dims: int = 0) -> Node:
    """``q`` as the RequantizeLinear of the integer sums ``acc`` of the operands of ``a_dq`` and
    ``b_dq`` (b's scale per tensor or per output channel; a convolution's, of ``dims`` spatial
    dims, full rank: it follows the layout pass's Transposes)."""
    xs, ys = (graph.tensors[n.inputs[1]].value.astype(np.float32).reshape(-1)[0] for n in (a_dq, q))
    scale = (xs * graph.tensors[b_dq.inputs[1]].value.astype(np.float32).reshape(-1)) / ys    # float32, as onnxruntime
    if scale.size > 1 and dims:
        scale = scale.reshape((1, -1) + (1,) * dims)
    y_type = graph.tensors[q.outputs[0]].dtype
    zp = q.inputs[2] if len(q.inputs) > 2 and q.inputs[2] else graph.add_constant(f"{q.name}.zero_point", np.array(0))
    scale = graph.add_constant(f"{q.name}.scale", scale.astype(np.float32))
    return Node(q.name, "RequantizeLinear", [acc, scale, zp], q.outputs, {"signed": int(y_type.min < 0)})


def _zero_points(graph: Graph, op: Node) -> tuple[np.ndarray | None, ...]:
    """A zero-point op's zero points of x and w (0 when absent, None when not constant)."""
    return tuple(_const(graph, op.inputs[k]) if len(op.inputs) > k and op.inputs[k] else np.zeros(1, np.int64)
                 for k in (2, 3))


def _integer_fits(graph: Graph, matched: list[Node]) -> str | None:
    op, = matched
    zx, zw = _zero_points(graph, op)
    if _const(graph, op.inputs[1]) is None or zw is None or np.any(zw != 0):
        return "the weights are not constant with zero points 0"
    if zx is None or zx.size != 1:
        return "A's zero point is not a constant scalar"
    return _op_fits(graph, op, int(zx.reshape(-1)[0]))


def _lower_integer(graph: Graph, matched: list[Node]) -> list[Node]:
    op, = matched
    zx = int(_zero_points(graph, op)[0].reshape(-1)[0])
    return _integer_op(graph, op, op.inputs[0], zx, op.inputs[1], None, op.outputs[0])


def _relu_saturates(graph: Graph, matched: list[Node]) -> str | None:
    relu, q = matched
    if q.inputs[0] != relu.outputs[0] or _per_tensor(graph, q, Q):
        return "not a per-tensor quantizer of the Relu's output"
    if _zero_point(graph, q) != graph.tensors[q.outputs[0]].dtype.min:
        return "the zero point is not its type's minimum"
    return None


def _drop_relu(graph: Graph, matched: list[Node]) -> list[Node]:
    relu, q = matched
    return [Node(q.name, Q, [relu.inputs[0]] + q.inputs[1:], q.outputs, dict(q.attrs), q.domain)]


def _same_quantization(graph: Graph, matched: list[Node]) -> str | None:
    dq, op, q = matched
    if op.inputs[0] != dq.outputs[0] or q.inputs[0] != op.outputs[0] or len(op.outputs) != 1:
        return "the op does not move the dequantized tensor into the quantizer"
    if _per_tensor(graph, dq, DQ) or _per_tensor(graph, q, Q):
        return "not per-tensor quantizers"
    if graph.tensors[dq.inputs[0]].dtype != graph.tensors[q.outputs[0]].dtype \
            or _const(graph, dq.inputs[1]).reshape(-1)[0] != _const(graph, q.inputs[1]).reshape(-1)[0] \
            or _zero_point(graph, dq) != _zero_point(graph, q):
        return "the quantizers differ in type, scale or zero point"
    return None


def _binary_group(graph: Graph, matched: list[Node]) -> str | None:
    """Why ``op -> Q`` is not a binary op of two per-tensor 8-bit DQs into a per-tensor 8-bit Q."""
    op, q = matched
    if q.inputs[0] != op.outputs[0] or len(op.inputs) != 2:
        return "the op's output is not the quantizer's input"
    producers = graph.producers()
    dqs = [producers.get(i) for i in op.inputs]
    return next(filter(None, (_per_tensor(graph, dq, DQ) for dq in dqs)), None) or _per_tensor(graph, q, Q)


def _same_type_group(graph: Graph, matched: list[Node]) -> str | None:
    reason = _binary_group(graph, matched)
    if reason:
        return reason
    op, q = matched
    producers = graph.producers()
    if len({graph.tensors[producers[i].inputs[0]].dtype for i in op.inputs} | {graph.tensors[q.outputs[0]].dtype}) != 1:
        return "the operands and the output differ in type"
    return None


def _activation_matmul(graph: Graph, matched: list[Node]) -> list[Node]:
    op, q = matched
    producers = graph.producers()
    dqs = [producers[i] for i in op.inputs]
    nodes, operands = [], []
    for dq in dqs:
        x, zp = dq.inputs[0], _zero_point(graph, dq)
        if zp:      # x - zp in int16: a table by x's byte
            offset, values = graph.add_tensor(f"{x}_offset"), np.arange(256, dtype=np.uint8).view(graph.tensors[x].dtype.numpy)
            nodes.append(Node(graph.fresh(f"{op.name}_offset"), "TableLookup", [x], [offset],
                              {"table": [int(v) - zp for v in values], "to": onnx_elem_type(INT16)}))
            x = offset
        operands.append(x)
    acc = graph.add_tensor(f"{op.outputs[0]}_int")
    return nodes + [Node(op.name, "MatMul", operands, [acc]), _requantize(graph, *dqs, q, acc)]


def _qlinear_binary(graph: Graph, matched: list[Node]) -> list[Node]:
    op, q = matched
    producers = graph.producers()
    quantizers = [producers[i] for i in op.inputs] + [q]
    attrs = {f"{t}_scale": float(_const(graph, n.inputs[1]).reshape(-1)[0]) for t, n in zip("aby", quantizers)}
    attrs.update({f"{t}_zero_point": _zero_point(graph, n) for t, n in zip("aby", quantizers)})
    attrs["signed"] = int(graph.tensors[q.outputs[0]].dtype.min < 0)
    return [Node(op.name, f"QLinear{op.op}", [n.inputs[0] for n in quantizers[:2]], q.outputs, attrs)]


def _softmax_group(graph: Graph, matched: list[Node]) -> str | None:
    dq, op, q = matched
    if op.inputs[0] != dq.outputs[0] or q.inputs[0] != op.outputs[0]:
        return "the Softmax does not move the dequantized tensor into the quantizer"
    reason = _per_tensor(graph, dq, DQ) or _per_tensor(graph, q, Q)
    if reason:
        return reason
    if graph.tensors[dq.inputs[0]].dtype != graph.tensors[q.outputs[0]].dtype:
        return "the quantizers differ in type"
    return None if op.params.inner == 1 else "the Softmax's axis is followed by axes longer than 1"


def _qlinear_softmax(graph: Graph, matched: list[Node]) -> list[Node]:
    dq, op, q = matched
    shape = graph.tensors[op.inputs[0]].shape
    axis = max(a for a in range(len(shape)) if int(np.prod(shape[a:])) == op.params.width)   # the rows' first axis
    attrs = {"x_scale": float(_const(graph, dq.inputs[1]).reshape(-1)[0]),
             "y_scale": float(_const(graph, q.inputs[1]).reshape(-1)[0]), "y_zero_point": _zero_point(graph, q),
             "signed": int(graph.tensors[q.outputs[0]].dtype.min < 0), "axis": axis}
    return [Node(op.name, "QLinearSoftmax", [dq.inputs[0]], q.outputs, attrs)]


def _requant_add_fits(graph: Graph, matched: list[Node]) -> str | None:
    requant, add = matched
    if not graph.is_constant(add.inputs[1]):
        return "the QLinearAdd's second operand is not a constant"
    out = tuple(graph.tensors[add.outputs[0]].shape)
    scale = graph.tensors[requant.inputs[1]].value
    if tuple(graph.tensors[requant.outputs[0]].shape) != out or \
            qlinear_add_of_constant(add, out, graph.tensors[add.inputs[1]].value) is None:
        return "onnxruntime rounds the requantised operand's product on its own here"
    try:
        common = np.broadcast_shapes(scale.shape, graph.tensors[add.inputs[1]].shape)
        channel_layout(add, out, [common])
    except (ValueError, OpError):
        return "the scale and the constant vary along different axes"
    return None


def _requant_add(graph: Graph, matched: list[Node]) -> list[Node]:
    """RequantizeLinear -> QLinearAdd of a constant => one RequantizeLinearAdd (scale and addend of one shape)."""
    requant, add = matched
    b = graph.tensors[add.inputs[1]].value
    ra, addend = qlinear_add_of_constant(add, graph.tensors[add.outputs[0]].shape, b)
    scale = graph.tensors[requant.inputs[1]].value.astype(np.float32)
    common = np.broadcast_shapes(scale.shape, addend.shape)
    inputs = [requant.inputs[0], graph.add_constant(f"{requant.name}.scale", np.broadcast_to(scale, common).copy()),
              requant.inputs[2], graph.add_constant(f"{add.name}.addend", np.broadcast_to(addend, common).copy())]
    return [Node(add.name, "RequantizeLinearAdd", inputs, add.outputs, {"ra": ra, "signed": requant.attrs["signed"]})]


def _move_integers(graph: Graph, matched: list[Node]) -> list[Node]:
    dq, op, q = matched
    return [Node(op.name, op.op, [dq.inputs[0]] + op.inputs[1:], q.outputs, dict(op.attrs), op.domain)]


QDQ_LOWERING = RuleSet("qdq", (
    Rule("relu_quantize", chain("Relu", Q), _relu_saturates, _drop_relu),
    *(Rule(f"{op.lower()}_qdq", Pattern(Q, (Pattern(op),)), _group, _lower) for op in ("Conv", "Gemm", "MatMul")),
    *(Rule(op.lower(), Pattern(op), _integer_fits, _lower_integer) for op in _INTEGER_OPS),
    *(Rule(f"{op.lower()}_qdq", Pattern(Q, (Pattern(op),)), _same_type_group, _qlinear_binary) for op in ("Add", "Mul")),
    Rule("matmul_activations_qdq", Pattern(Q, (Pattern("MatMul"),)), _binary_group, _activation_matmul),
    Rule("softmax_qdq", Pattern(Q, (Pattern("Softmax", (Pattern(DQ),)),)), _softmax_group, _qlinear_softmax),
    *(Rule(f"{op.lower()}_integers", Pattern(Q, (Pattern(op, (Pattern(DQ),)),)), _same_quantization, _move_integers)
      for op in sorted(ops_with(Trait.QUANT_TRANSPARENT))),
))

# After the lowering (its groups' dequantizers gone): a requantisation whose one reader adds a constant.
QDQ_FUSION = RuleSet("qdq", (
    Rule("requantize_add", Pattern("QLinearAdd", (Pattern("RequantizeLinear"),)), _requant_add_fits, _requant_add),
))


def _constant_like(graph: Graph, name: str, producers: dict[str, Node]) -> bool:
    """Whether ``name`` is a constant or computed from constants only (a DQ of a constant)."""
    node = producers.get(name)
    return graph.is_constant(name) or (node is not None and any(node.inputs) and all(
        _constant_like(graph, i, producers) for i in node.inputs if i))


def _chain_from(graph: Graph, dq: Node, producers: dict[str, Node], consumers: dict[str, list[Node]],
                position: dict[int, int]) -> list[Node] | None:
    """The largest chain of element-wise standard ops (plus per-tensor Q/DQ pairs) computing a
    per-tensor 8-bit Q's output from ``dq``'s input alone (other operands: constant scalars), its
    inner tensors read by the chain only; None if there is none with an op besides Q and DQ."""
    if _per_tensor(graph, dq, DQ) or graph.is_constant(dq.inputs[0]):
        return None
    shape = graph.tensors[dq.outputs[0]].shape
    region, values = [dq], {dq.outputs[0]}
    pending = [(position[id(n)], id(n), n) for name in (dq.inputs[0], dq.outputs[0]) for n in consumers.get(name, [])
               if n is not dq]
    heapq.heapify(pending)
    seen = {id(dq)}
    while pending:      # in graph order: a node's producers in the chain come first
        _, key, node = heapq.heappop(pending)
        if key in seen:
            continue
        seen.add(key)
        ins = [i for i in node.inputs if i]
        if node.op == DQ and node.inputs[0] == dq.inputs[0]:
            fits = not _per_tensor(graph, node, DQ) and _const(graph, node.inputs[1]) == _const(graph, dq.inputs[1]) \
                and _zero_point(graph, node) == _zero_point(graph, dq)      # another DQ of the same value
        else:
            fits = len(node.outputs) == 1 and {Trait.STANDARD, Trait.ELEMENTWISE} <= get_op(node).traits \
                and any(i in values for i in ins) and graph.tensors[node.outputs[0]].shape == shape \
                and all(i in values or (_constant_like(graph, i, producers) and graph.tensors[i].size == 1) for i in ins)
        if fits:
            region.append(node)
            values.add(node.outputs[0])
            for n in consumers.get(node.outputs[0], ()):
                heapq.heappush(pending, (position[id(n)], id(n), n))
    for q in reversed(region):
        if q.op != Q or _per_tensor(graph, q, Q):
            continue
        needed, chain = {q.outputs[0]}, []
        for node in reversed(region):
            if node.outputs[0] in needed:
                chain.insert(0, node)
                needed.update(node.inputs)
        inner, ids = [n.outputs[0] for n in chain[1:] if n is not q], {id(n) for n in chain}
        if any(o in graph.outputs or any(id(c) not in ids for c in consumers.get(o, ())) for o in inner):
            continue
        return chain if any(n.op not in (Q, DQ) for n in chain) else None
    return None


def _table(graph: Graph, chain: list[Node], producers: dict[str, Node]) -> list[int] | None:
    """onnxruntime's outputs of ``chain`` for the 256 values of its 8-bit input, by the input's byte
    (None if onnxruntime cannot run it)."""
    import onnxruntime as ort
    from onnxruntime.capi import onnxruntime_pybind11_state as state
    x, y = chain[0].inputs[0], chain[-1].outputs[0]
    nodes, seen = [], set()

    def add(node: Node) -> None:     # a node after the producers of its computed operands
        if id(node) in seen:
            return
        seen.add(id(node))
        for i in node.inputs:
            if i in producers and i != x:
                add(producers[i])
        nodes.append(helper.make_node(node.op, node.inputs, node.outputs, node.name, domain=node.domain, **node.attrs))

    for node in chain:
        add(node)
    used = {i for n in nodes for i in n.input if i}
    inits = [numpy_helper.from_array(np.asarray(graph.tensors[i].value).astype(graph.tensors[i].dtype.numpy), i)
             for i in sorted(used) if graph.is_constant(i)]
    xt, yt = graph.tensors[x].dtype, graph.tensors[y].dtype
    model = helper.make_model(
        helper.make_graph(nodes, "chain", [helper.make_tensor_value_info(x, onnx_elem_type(xt), [256])],
                          [helper.make_tensor_value_info(y, onnx_elem_type(yt), [256])], inits),
        opset_imports=[helper.make_opsetid("", graph.opset or onnx_opset_version())])
    values = np.arange(256, dtype=np.uint8).view(xt.numpy)
    try:
        out = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {x: values})
    except (state.Fail, state.InvalidGraph, state.InvalidArgument, state.NotImplemented, state.RuntimeException):
        return None
    return [int(v) for v in out[0]]


def _lower_chains(graph: Graph, log=None) -> bool:
    """Replace each chain ``_chain_from`` finds by a ``TableLookup`` of its table (a chain
    onnxruntime cannot run stays); True if any."""
    found, refused = False, set()
    while True:
        producers, consumers = graph.producers(), graph.consumers()
        position = {id(n): k for k, n in enumerate(graph.nodes)}     # graph order
        for dq in (n for n in graph.nodes if n.op == DQ and n.name not in refused):
            chain = _chain_from(graph, dq, producers, consumers, position)
            if chain is None:
                continue
            q = chain[-1]
            table = _table(graph, chain, producers)
            if table is None:
                refused.add(dq.name)
                if log:
                    log(f"  qdq/table: not at '{q.name}': onnxruntime cannot run the chain")
                continue
            graph.nodes[position[id(q)]] = Node(q.name, "TableLookup", [dq.inputs[0]], q.outputs,
                                                {"table": table, "to": onnx_elem_type(graph.tensors[q.outputs[0]].dtype)})
            while graph.remove_dead_nodes():     # the chain, node by node from its end
                pass
            if log:
                log(f"  qdq/table: {', '.join(f'{n.op}({n.name!r})' for n in chain)} => TableLookup({q.name!r})")
            found = True
            break
        else:
            return found


_tables = on_copy(_lower_chains)


def lower_qdq(graph: Graph, log=None) -> tuple[Graph, bool]:
    graph, tables = _tables(graph, log)
    work, modified = apply_rules(graph, QDQ_LOWERING, log)
    modified = modified or tables
    for node in work.nodes:
        if node.op in _INTEGER_OPS:
            raise OpError(node, f"runs only as {_INTEGER_OPS[node.op]} of constant weights with zero points 0 "
                          f"and a constant scalar zero point of A, here {_integer_fits(work, [node])}")
    if modified:
        work.remove_dead_nodes()
    work, fused = apply_rules(work, QDQ_FUSION, log)
    return work, modified or fused
