"""Float32 test networks: a MobileNet-style CNN, a Llama-style decoder layer, a ViT-style
encoder, a compact convolutional transformer exported at opsets 20 and 12, and a mixed graph
(float around an int8 part joined by QuantizeLinear/DequantizeLinear).

They are written with float32 weights and inputs; the goldens come from onnxruntime on the whole
model, and the compiler's reference interpreter must agree with them within the float tolerance
of the test harness (a check that the file means what onnxruntime computes)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import FLOAT32
from Deeploy.reference import run_reference
from DeeployTest.generators.golden import save_arrays
from DeeployTest.generators.limits import BuildError
from DeeployTest.generators.registry import test
from DeeployTest.testUtils.harness import FLOAT_TOLERANCE

__all__ = ["FloatNet"]

_OPSET = 20   # Gelu is a standard op from opset 20


class FloatNet:
    """A float32 ONNX graph under construction (shapes tracked by onnx shape inference)."""

    def __init__(self, name: str, rng: np.random.Generator, opset: int = _OPSET):
        self.name, self.rng, self.opset = name, rng, opset
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[TensorProto] = []
        self.inputs: list[tuple[str, np.ndarray]] = []
        self.outputs: list[str] = []
        self.output_types: dict[str, int] = {}
        self._k = 0

    def _fresh(self, base: str) -> str:
        self._k += 1
        return f"{base}_{self._k}"

    def input(self, name: str, shape: Sequence[int], scale: float = 1.0, value: np.ndarray | None = None) -> str:
        """A graph input with normal samples (times ``scale``), or the given ``value``."""
        if value is None:
            value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inputs.append((name, value))
        return name

    def const(self, value, name: str = "w") -> str:
        name = self._fresh(name)
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def constant_node(self, value) -> str:
        """A ``Constant`` node holding ``value`` (as exporters write small constants)."""
        out = self._fresh("Constant")
        value = numpy_helper.from_array(np.asarray(value))
        self.nodes.append(helper.make_node("Constant", [], [out], name=out, value=value))
        return out

    def weight(self, shape: Sequence[int], fan_in: int | None = None, name: str = "w") -> str:
        fan_in = fan_in or int(np.prod(shape[1:]))
        return self.const((self.rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32), name)

    def node(self, op: str, inputs: Sequence[str], domain: str = "", n_out: int = 1, **attrs: Any):
        out = self._fresh(op)
        outs = [out] + [f"{out}_{k}" for k in range(1, n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=out, domain=domain, **attrs))
        return out if n_out == 1 else outs

    def output(self, name: str, elem: int = TensorProto.FLOAT) -> None:
        self.outputs.append(name)
        self.output_types[name] = elem

    def to_onnx(self) -> onnx.ModelProto:
        ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), list(v.shape))
               for n, v in self.inputs]
        outs = [helper.make_tensor_value_info(n, self.output_types[n], None) for n in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, ins, outs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="DeeployTest/generate_tests.py")
        model.ir_version = 9
        return onnx.shape_inference.infer_shapes(model)

    # ---- the test folder -----------------------------------------------------------------
    def write(self, folder: Path) -> dict:
        """network.onnx, inputs.npz and outputs.npz (goldens from onnxruntime, always)."""
        import onnxruntime as ort
        model = self.to_onnx()
        data = model.SerializeToString()
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.log_severity_level = 3
        feeds = dict(self.inputs)
        golden = ort.InferenceSession(data, opts, providers=["CPUExecutionProvider"]).run(None, feeds)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "network.onnx"
            path.write_bytes(data)
            graph = load_onnx(path)
        assign_input_types(graph, feeds)
        infer_graph(graph)
        ref = run_reference(graph, feeds)
        rtol, atol = FLOAT_TOLERANCE[FLOAT32]
        for name, want in zip(self.outputs, golden):
            if not np.allclose(ref[name], want, rtol=rtol, atol=atol):
                worst = float(np.max(np.abs(ref[name] - want)))
                raise BuildError(f"{self.name}: output '{name}' of the reference differs from onnxruntime by {worst:g}")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "network.onnx").write_bytes(data)
        save_arrays(folder / "inputs.npz", feeds)
        save_arrays(folder / "outputs.npz", dict(zip(self.outputs, golden)))
        size = sum((folder / f).stat().st_size for f in ("network.onnx", "inputs.npz", "outputs.npz"))
        data_bytes = sum(v.nbytes for v in feeds.values()) + sum(g.nbytes for g in golden)
        return {"nodes": len(self.nodes), "ort_checked": len(self.nodes), "golden": "onnxruntime", "bytes": size,
                "data_bytes": data_bytes}


# ---- layers -------------------------------------------------------------------------------
def _conv(net, x, c_in, c_out, k, stride=1, group=1, act=True):
    w = net.weight([c_out, c_in // group, k, k])
    y = net.node("Conv", [x, w, net.const(np.zeros(c_out, np.float32) + 0.01, "b")], kernel_shape=[k, k],
                 strides=[stride, stride], pads=[k // 2] * 4, group=group)
    return net.node("Relu", [y]) if act else y


def _linear(net, x, d_in, d_out):
    return net.node("MatMul", [x, net.weight([d_in, d_out], d_in)])


def _rmsnorm(net, x, dim):
    """x / sqrt(mean(x^2) + eps) * w, from standard ops (onnxruntime runs it)."""
    sq = net.node("Mul", [x, x])
    ms = net.node("ReduceMean", [sq, net.const(np.array([-1], np.int64), "axes")], keepdims=1)
    rs = net.node("Sqrt", [net.node("Add", [ms, net.const(np.array(1e-6, np.float32), "eps")])])
    w = net.const((1.0 + 0.1 * net.rng.standard_normal(dim)).astype(np.float32), "norm")
    return net.node("Mul", [net.node("Div", [x, rs]), w])


def _attention(net, x, tokens, dim, heads, causal):
    hd = dim // heads
    split = net.const(np.array([tokens, heads, hd], np.int64), "shape")
    q, k, v = (net.node("Transpose", [net.node("Reshape", [_linear(net, x, dim, dim), split])], perm=[1, 0, 2])
               for _ in range(3))
    kt = net.node("Transpose", [k], perm=[0, 2, 1])
    s = net.node("Mul", [net.node("MatMul", [q, kt]), net.const(np.array(1 / np.sqrt(hd), np.float32), "scale")])
    if causal:
        mask = np.triu(np.full((tokens, tokens), -1e4, np.float32), 1)
        s = net.node("Add", [s, net.const(mask, "mask")])
    p = net.node("Softmax", [s], axis=-1)
    o = net.node("Transpose", [net.node("MatMul", [p, v])], perm=[1, 0, 2])
    o = net.node("Reshape", [o, net.const(np.array([tokens, dim], np.int64), "shape")])
    return _linear(net, o, dim, dim)


# ---- networks -----------------------------------------------------------------------------
@test("Models/Float/MobileNet")
def mobilenet(rng):
    """Conv stem, two inverted-residual blocks (depthwise 3x3), spatial mean, classifier."""
    net = FloatNet("float_mobilenet", rng)
    x = _conv(net, net.input("input", [1, 3, 16, 16]), 3, 8, 3, stride=2)
    for _ in range(2):
        h = _conv(net, x, 8, 16, 1)
        h = _conv(net, h, 16, 16, 3, group=16)
        x = net.node("Add", [x, _conv(net, h, 16, 8, 1, act=False)])
    pooled = net.node("ReduceMean", [x, net.const(np.array([2, 3], np.int64), "axes")], keepdims=0)
    net.output(net.node("Gemm", [pooled, net.weight([10, 8]), net.const(np.zeros(10, np.float32), "b")], transB=1))
    return net


@test("Models/Float/Llama")
def llama(rng):
    """One Llama-style decoder layer over 8 tokens: RMSNorm, causal attention (2 heads), RMSNorm,
    SiLU-gated MLP, residuals, then the final RMSNorm and the vocabulary projection."""
    net = FloatNet("float_llama", rng)
    tokens, dim, hidden = 8, 32, 64
    x = net.input("input", [tokens, dim])
    x = net.node("Add", [x, _attention(net, _rmsnorm(net, x, dim), tokens, dim, 2, causal=True)])
    h = _rmsnorm(net, x, dim)
    gate = _linear(net, h, dim, hidden)
    gate = net.node("Mul", [gate, net.node("Sigmoid", [gate])])
    x = net.node("Add", [x, _linear(net, net.node("Mul", [gate, _linear(net, h, dim, hidden)]), hidden, dim)])
    net.output(_linear(net, _rmsnorm(net, x, dim), dim, 48))
    return net


@test("Models/Float/ViT")
def vit(rng):
    """A ViT-style encoder: 4x4 patches of a 16x16 image (flattened through Shape arithmetic),
    position embedding, one pre-norm block (LayerNormalization, attention with 2 heads, GELU MLP),
    mean over tokens, classifier."""
    net = FloatNet("float_vit", rng)
    dim, tokens = 24, 16
    patches = net.node("Conv", [net.input("input", [1, 3, 16, 16]), net.weight([dim, 3, 4, 4])],
                       kernel_shape=[4, 4], strides=[4, 4])
    # the patch grid flattened by shape arithmetic, as exporters write it (folds at compile time)
    channels = net.node("Gather", [net.node("Shape", [patches]), net.const(np.array([1], np.int64), "index")], axis=0)
    grid = net.node("Concat", [channels, net.const(np.array([-1], np.int64), "rest")], axis=0)
    x = net.node("Transpose", [net.node("Reshape", [patches, grid])], perm=[1, 0])
    x = net.node("Add", [x, net.const((0.1 * rng.standard_normal((tokens, dim))).astype(np.float32), "pos")])

    def norm(v):
        return net.node("LayerNormalization", [v, net.const(np.ones(dim, np.float32), "ln_w"),
                                               net.const(np.zeros(dim, np.float32), "ln_b")], axis=-1, epsilon=1e-5)
    x = net.node("Add", [x, _attention(net, norm(x), tokens, dim, 2, causal=False)])
    h = net.node("Gelu", [net.node("Add", [_linear(net, norm(x), dim, 2 * dim),
                                           net.const(np.zeros(2 * dim, np.float32), "b")])])
    x = net.node("Add", [x, _linear(net, h, 2 * dim, dim)])
    pooled = net.node("ReduceMean", [norm(x), net.const(np.array([0], np.int64), "axes")], keepdims=1)
    net.output(net.node("Gemm", [pooled, net.weight([dim, 10]), net.const(np.zeros(10, np.float32), "b")]))
    return net


def compact_transformer(rng, opset: int) -> FloatNet:
    """A compact convolutional transformer as exporters write it: conv tokenizer (Conv, Relu,
    MaxPool), flatten(2) through ``Shape -> Slice -> Concat -> Reshape`` with ``Constant`` nodes,
    transpose, position embedding, one pre-norm block (2 heads, GELU MLP), sequence pooling
    (softmax over the tokens of x W), classifier; 49 tokens of 16 channels, batch 1. At opset
    20 linear layers are MatMul + Add on [1, T, C] and the norm and GELU are ops; at opset 12
    they are Gemm on the flattened tokens, LayerNormalization and GELU from their formulas, and
    the softmax over the tokens is a last-axis Softmax between Transposes."""
    net = FloatNet(f"float_cct_opset{opset}", rng, opset)
    dim, heads, hidden, tokens = 16, 2, 32, 49
    hd = dim // heads

    def i64(*values):
        return net.constant_node(np.array(values, np.int64))

    def f32(value):
        return net.constant_node(np.array(value, np.float32))

    def reshape_keeping(v, lead: int, *rest: int, like: str | None = None):
        """v reshaped to the first ``lead`` dims of ``like`` (default v; read through Shape and
        Slice) + ``rest``."""
        kept = net.node("Slice", [net.node("Shape", [like or v]), i64(0), i64(lead), i64(0)])
        return net.node("Reshape", [v, net.node("Concat", [kept, i64(*rest)], axis=0)])

    def linear(v, d_in, d_out):
        w = net.weight([d_in, d_out], d_in)
        b = net.const((0.05 * rng.standard_normal(d_out)).astype(np.float32), "b")
        if opset >= 13:
            return net.node("Add", [net.node("MatMul", [v, w]), b])
        rows = net.node("Gemm", [net.node("Reshape", [v, i64(-1, d_in)]), w, b])
        return reshape_keeping(rows, -1, d_out, like=v)

    def norm(v):
        w = net.const((1 + 0.1 * rng.standard_normal(dim)).astype(np.float32), "ln_w")
        b = net.const((0.1 * rng.standard_normal(dim)).astype(np.float32), "ln_b")
        if opset >= 17:
            return net.node("LayerNormalization", [v, w, b], axis=-1, epsilon=1e-5)
        d = net.node("Sub", [v, net.node("ReduceMean", [v], axes=[-1], keepdims=1)])
        var = net.node("ReduceMean", [net.node("Pow", [d, f32(2.0)])], axes=[-1], keepdims=1)
        std = net.node("Sqrt", [net.node("Add", [var, f32(1e-5)])])
        return net.node("Add", [net.node("Mul", [net.node("Div", [d, std]), w]), b])

    def gelu(v):
        if opset >= 20:
            return net.node("Gelu", [v])
        erf = net.node("Erf", [net.node("Div", [v, f32(np.sqrt(2.0))])])
        return net.node("Mul", [net.node("Mul", [v, net.node("Add", [erf, f32(1.0)])]), f32(0.5)])

    x = net.node("Conv", [net.input("input", [1, 3, 14, 14]), net.weight([dim, 3, 3, 3]),
                          net.const(np.full(dim, 0.01, np.float32), "b")], kernel_shape=[3, 3], pads=[1] * 4)
    x = net.node("MaxPool", [net.node("Relu", [x])], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    x = net.node("Transpose", [reshape_keeping(x, 2, -1)], perm=[0, 2, 1])
    x = net.node("Add", [x, net.const((0.1 * rng.standard_normal((1, tokens, dim))).astype(np.float32), "pos")])
    h = norm(x)
    q, k, v = (net.node("Transpose", [reshape_keeping(linear(h, dim, dim), 2, heads, hd)], perm=[0, 2, 1, 3])
               for _ in range(3))
    s = net.node("MatMul", [q, net.node("Transpose", [k], perm=[0, 1, 3, 2])])
    p = net.node("Softmax", [net.node("Mul", [s, f32(1 / np.sqrt(hd))])], axis=-1)
    o = net.node("Transpose", [net.node("MatMul", [p, v])], perm=[0, 2, 1, 3])
    x = net.node("Add", [x, linear(reshape_keeping(o, 2, -1), dim, dim)])
    x = net.node("Add", [x, linear(gelu(linear(norm(x), dim, hidden)), hidden, dim)])
    x = norm(x)
    a = linear(x, dim, 1)                                                      # [1, T, 1]
    if opset >= 13:
        a = net.node("Softmax", [a], axis=1)
    else:
        a = net.node("Transpose", [net.node("Softmax", [net.node("Transpose", [a], perm=[0, 2, 1])], axis=-1)],
                     perm=[0, 2, 1])
    pooled = net.node("MatMul", [net.node("Transpose", [a], perm=[0, 2, 1]), x])  # [1, 1, C]
    net.output(linear(reshape_keeping(pooled, 1, -1), dim, 10))
    return net


@test("Models/Float/CCT_opset20")
def cct_opset20(rng):
    return compact_transformer(rng, 20)


@test("Models/Float/CCT_opset12")
def cct_opset12(rng):
    return compact_transformer(rng, 12)


@test("Models/Float/Autoencoder")
def autoencoder(rng):
    """A 1-D convolutional autoencoder: strided Conv encoder, ConvTranspose decoder (one grouped,
    with output_padding), BatchNormalization and Relu."""
    net = FloatNet("float_autoencoder", rng)
    x = net.input("input", [1, 2, 32])

    def conv(v, c_in, c_out, **attrs):
        return net.node("Conv", [v, net.weight([c_out, c_in, 3]), net.const(np.zeros(c_out, np.float32) + 0.02, "b")],
                        kernel_shape=[3], pads=[1, 1], **attrs)

    def batchnorm(v, c):
        params = [(1 + 0.1 * rng.standard_normal(c)), 0.1 * rng.standard_normal(c), 0.1 * rng.standard_normal(c),
                  0.5 + rng.random(c)]
        return net.node("BatchNormalization", [v] + [net.const(a.astype(np.float32), "bn") for a in params])
    h = net.node("Relu", [batchnorm(conv(x, 2, 8, strides=[2]), 8)])
    h = net.node("Relu", [conv(h, 8, 8, strides=[2])])
    h = net.node("ConvTranspose", [h, net.weight([8, 4, 4], 8), net.const(np.zeros(8, np.float32), "b")],
                 strides=[2], pads=[1, 1], group=2)
    h = net.node("Relu", [batchnorm(h, 8)])
    net.output(net.node("ConvTranspose", [h, net.weight([8, 2, 3], 8)], strides=[2], pads=[1, 1],
                        output_padding=[1]))
    return net


@test("Training/SoftmaxCrossEntropyLoss")
def cross_entropy(rng):
    """SoftmaxCrossEntropyLoss with class weights: the mean loss and the log-probabilities."""
    net = FloatNet("float_cross_entropy", rng)
    labels = net.input("labels", [6], value=rng.integers(0, 5, size=6).astype(np.int64))
    weights = net.const((0.5 + rng.random(5)).astype(np.float32), "weights")
    loss, log_prob = net.node("SoftmaxCrossEntropyLoss", [net.input("scores", [6, 5], scale=2.0), labels, weights],
                              n_out=2, reduction="mean")
    net.output(loss)
    net.output(log_prob)
    return net


@test("Kernels/Float/Unary")
def unary_chain(rng):
    """GELU as PyTorch exports it before opset 20 (x * 0.5 * (1 + Erf(x / sqrt 2))), then Tanh,
    Abs, Log, Neg and Reciprocal."""
    net = FloatNet("float_unary", rng)
    x = net.input("input", [2, 3, 16], scale=2.0)
    half, one = net.const(np.array(0.5, np.float32), "half"), net.const(np.array(1.0, np.float32), "one")
    erf = net.node("Erf", [net.node("Div", [x, net.const(np.array(np.sqrt(2.0), np.float32), "sqrt2")])])
    gelu = net.node("Mul", [net.node("Mul", [x, half]), net.node("Add", [erf, one])])
    h = net.node("Add", [net.node("Abs", [net.node("Tanh", [gelu])]), net.const(np.array(1.5, np.float32), "c")])
    net.output(net.node("Reciprocal", [net.node("Neg", [net.node("Log", [h])])]))
    return net


@test("Kernels/Float/GemmScaled")
def gemm_scaled(rng):
    """Gemm with non-integer alpha and beta, B transposed, C a row vector."""
    net = FloatNet("float_gemm_scaled", rng)
    x = net.input("input", [12, 20])
    net.output(net.node("Gemm", [x, net.weight([16, 20]), net.const(rng.standard_normal(16).astype(np.float32), "c")],
                        alpha=0.125, beta=0.5, transB=1))
    return net


@test("Kernels/Float/QuantDequant")
def quant_dequant(rng):
    """A mixed graph: float input quantized to int8, an integer MaxPool, dequantized back to float
    and scaled (the pooled tensor keeps its int8 type); and the input scaled and cast to int8."""
    net = FloatNet("float_quant_dequant", rng)
    scale = net.const(np.array(0.05, np.float32), "scale")
    zero = net.const(np.array(-3, np.int8), "zero_point")
    x = net.input("input", [1, 4, 8, 8], scale=2.0)
    q = net.node("QuantizeLinear", [x, scale, zero])
    pooled = net.node("MaxPool", [q], kernel_shape=[2, 2], strides=[2, 2])
    d = net.node("DequantizeLinear", [pooled, scale, zero])
    net.output(net.node("Mul", [d, net.const(np.array(1.5, np.float32), "gain")]))
    net.output(net.node("Cast", [net.node("Mul", [x, net.const(np.array(3.3, np.float32), "k")])], to=3),
               TensorProto.INT8)
    return net
