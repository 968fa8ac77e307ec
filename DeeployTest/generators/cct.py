"""CCT: int8 compact convolutional transformers (CCT-2/3x1 style): ``Models/CCT`` with embedding
32 (2 heads of 16, MLP 64) and ``Models/CCT128`` with embedding 128 (2 heads of 64, MLP 256,
about 20M multiply-accumulates, the scale of the integer CCT networks of the field's benchmarks).

uint8 image [1,3,32,32] -> conv tokenizer: 3x3 stride-2 Conv + unsigned RequantShift + MaxPool
3x3 stride 2 (DIM channels, 8x8) -> Reshape [1,DIM,64] -> Transpose -> 64 tokens of DIM -> + a
learnable positional embedding (Add of a constant, RequantShift) -> two pre-norm transformer
layers -> iLayerNorm -> IntegerMean over the tokens -> Gemm classifier.

Transformer layer, in the structure of the QuantLib/ITA exports:
iLayerNorm -> Q/K/V projections (MatMul + Add bias + RequantShift) -> heads by Reshape and
Transpose -> Q.K^T -> RequantShift -> softmax (ITAMax in layer 0, ITAPartialMax with column
groups of 16 in layer 1) -> .V -> RequantShift -> Transpose, Reshape -> output projection ->
residual Add (both branches first to a common scale, then requantized); iLayerNorm -> fc1 ->
iGELU -> RequantShift -> fc2 -> residual Add. Every RequantShift is calibrated, per tensor, on
the activations of the sample image. The Q and K projection weights are correlated (a token
attends most to similar tokens), yet with 64 keys and int8 logits (32 steps per halving in the
ITA softmaxes) the attention rows stay fairly flat.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from DeeployTest.generators.builder import Net, tensor_attr
from DeeployTest.generators.integer import igelu_attrs
from DeeployTest.generators.layers import conv_rq, image, linear_rq, residual_add, shape_const
from DeeployTest.generators.registry import test, weights

LN_SHIFT = 8
QK_CORR = 0.9  # correlation of the Q and K projection weights
GELU_SCALE = 4 / 128  # the iGELU input: 4 real units per 128 steps
SOFTMAX = [("ITAMax", {"n_levels": tensor_attr(256)}),
           ("ITAPartialMax", {"group_width": 16, "n_levels": 256})]


@dataclass(frozen=True)
class Dims:
    """Embedding width, heads (of dim // heads) and the MLP's hidden width."""

    dim: int
    heads: int
    mlp: int


def _layernorm(net, rng, x, name, dim):
    w = np.round(rng.uniform(0.7, 1.3, size=dim) * 40 * (1 << LN_SHIFT)).astype(np.int64)
    b = rng.integers(-8, 9, size=dim) * (1 << LN_SHIFT)
    return net.node("iLayerNorm", [x, net.const(w, f"{name}.weight"), net.const(b, f"{name}.bias")],
                    {"D": tensor_attr(1 << LN_SHIFT), "n_levels": tensor_attr(256)}, name=name)


def _layer(net, rng, x, l, seq, d: Dims):
    pre = f"layers.{l}"
    h = _layernorm(net, rng, x, f"{pre}.norm1", d.dim)
    heads_shape = shape_const(net, [1, seq, d.heads, d.dim // d.heads], f"{pre}.heads_shape")

    def heads(kind, perm, weight=None):
        y = linear_rq(net, rng, h, d.dim, f"{pre}.attn.{kind}_proj", form="matmul", center=False, target=110,
                      weight=weight)
        y = net.node("Reshape", [y, heads_shape], name=f"{pre}.attn.{kind}_Reshape")
        return net.node("Transpose", [y], {"perm": perm}, name=f"{pre}.attn.{kind}_Transpose")

    # correlated Q and K projections (a token attends most to similar tokens, as in trained
    # models), so that the softmax rows are peaked rather than flat
    wq = weights(rng, (d.dim, d.dim))
    wk = np.clip(np.round(QK_CORR * wq + np.sqrt(1 - QK_CORR ** 2) * weights(rng, (d.dim, d.dim))), -127, 127)
    q = heads("q", [0, 2, 1, 3], wq)                                # [1,H,S,hd]
    kt = heads("k", [0, 2, 3, 1], wk.astype(np.int64))              # [1,H,hd,S]
    v = heads("v", [0, 2, 1, 3])                                    # [1,H,S,hd]
    s = net.node("MatMul", [q, kt], name=f"{pre}.attn.scores")      # [1,H,S,S]
    s = net.calib_rqs(s, center=False, target=100, name=f"{pre}.attn.scores.rqs")
    op, attrs = SOFTMAX[l % len(SOFTMAX)]
    a = net.node(op, [s], attrs, name=f"{pre}.attn.softmax")
    o = net.node("MatMul", [a, v], name=f"{pre}.attn.context")     # [1,H,S,hd]
    o = net.calib_rqs(o, center=False, target=110, name=f"{pre}.attn.context.rqs")
    o = net.node("Transpose", [o], {"perm": [0, 2, 1, 3]}, name=f"{pre}.attn.context_Transpose")
    o = net.node("Reshape", [o, shape_const(net, [1, seq, d.dim], f"{pre}.merge_shape")],
                 name=f"{pre}.attn.context_Reshape")
    o = linear_rq(net, rng, o, d.dim, f"{pre}.attn.o_proj", form="matmul", rq=False)
    x = residual_add(net, x, o, f"{pre}.residual_attn")

    h = _layernorm(net, rng, x, f"{pre}.norm2", d.dim)
    h = linear_rq(net, rng, h, d.mlp, f"{pre}.mlp.fc1", form="matmul", target=100)
    h = net.node("iGELU", [h], {k: tensor_attr(v) for k, v in igelu_attrs(GELU_SCALE).items()},
                 name=f"{pre}.mlp.act")
    h = net.calib_rqs(h, center=False, name=f"{pre}.mlp.act.rqs")
    h = linear_rq(net, rng, h, d.dim, f"{pre}.mlp.fc2", form="matmul", rq=False)
    return residual_add(net, x, h, f"{pre}.residual_mlp")


def _cct(rng, d: Dims):
    net = Net("CCT")
    x = net.input("input", image(rng, (1, 3, 32, 32)))
    x = conv_rq(net, rng, x, d.dim, 3, stride=2, signed=False, name="tokenizer.conv")
    x = net.node("MaxPool", [x], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "strides": [2, 2]},
                 name="tokenizer.pool")                                # [1,32,8,8]
    c, hh, ww = net.shape(x)[1:]
    seq = hh * ww
    x = net.node("Reshape", [x, shape_const(net, [1, c, seq], "tokenizer.flatten_shape")],
                 name="tokenizer.flatten")
    x = net.node("Transpose", [x], {"perm": [0, 2, 1]}, name="tokenizer.tokens")  # [1,64,32]
    # learnable positional embedding: the (unsigned) tokens to the embedding's scale, Add, requantize
    t = net.calib_rqs(x, target=60, center=False, name="pos_embedding.tokens.rqs")
    pe = net.const(weights(rng, (1, seq, d.dim), amp=60), "pos_embedding.weight")
    x = net.calib_rqs(net.node("Add", [t, pe], name="pos_embedding.Add"), center=False, name="pos_embedding.rqs")
    for l in range(2):
        x = _layer(net, rng, x, l, seq, d)
    x = _layernorm(net, rng, x, "norm", d.dim)
    x = net.node("IntegerMean", [x], {"axes": [1], "keepdims": 0}, name="seq_pool")  # [1,32]
    y = linear_rq(net, rng, x, 10, "classifier", center=False)
    net.output(net.rename(y, "output"))
    return net


@test("Models/CCT", max_data_bytes=1 << 20)
def cct(rng):
    return _cct(rng, Dims(32, 2, 64))


@test("Models/CCT128", max_data_bytes=1 << 20)
def cct128(rng):
    return _cct(rng, Dims(128, 2, 256))
