"""microLlama: a tiny int8 Llama-style decoder, in the structure of the QuantLib exports of the
corpus (``../shared/corpus/Models/microLlama``).

Per layer: iRMSNorm -> K/Q/V projections (MatMul + Add bias + RequantShift) -> heads by Reshape
(and a RoPE MatMul with a rotation-matrix graph input for K and Q) -> Transpose -> KV cache:
Concat of the past K/V (graph inputs) with the new K/V (axis -2), the new caches are graph
outputs -> Q.K^T -> RequantShift -> TrueIntegerDiv (by sqrt(head_dim)) -> RequantShift -> + the
requantized attention mask -> iSoftmax -> RequantShift -> .V -> Transpose, Reshape -> output
projection -> residual Add; then iRMSNorm -> gate and up projections, iHardswish on the gate,
Mul -> down projection -> residual Add. A final iRMSNorm gives the output. Every RequantShift
has a scalar mul and a shared zero add, like the corpus.

One set of weights and RequantShift parameters serves all five tests. The parameters are
calibrated, layer by layer in execution order, on the prefill of a 64-token prompt
(``microLlama64_parallel``, zero-sized past caches). The autoregressive tests then decode one
token with the caches a prefill of 64 (``microLlama64``: the very caches microLlama64_parallel
outputs), 32, 128 or 256 tokens (``microLlama32``, ``microLlama128``, ``microLlama256``)
produces, so the caches are consistent with the model.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.calib import calibrate
from DeeployTest.generators.integer import isoftmax_attrs
from DeeployTest.generators.registry import seed_of, test, weights

SHIFT = 16  # div = 65536 throughout, as in the corpus


@dataclass(frozen=True)
class Config:
    dim: int = 64
    heads: int = 4
    head_dim: int = 16
    ffn: int = 128
    layers: int = 4
    softmax_log2: int = 20
    hswish: tuple = (43, 96, 192)  # one_over_six, three, six: inputs of 1/32 per step


@dataclass
class Params:
    """Weights (created on first use, in build order) and RequantShift multipliers
    (calibrated on first use)."""

    rng: np.random.Generator
    weights: dict = field(default_factory=dict)
    rqs: dict = field(default_factory=dict)
    frozen: bool = False

    def weight(self, key, make):
        if key not in self.weights:
            if self.frozen:
                raise KeyError(f"weight {key} not created during calibration")
            self.weights[key] = make(self.rng)
        return self.weights[key]


class _Builder:
    def __init__(self, cfg: Config, params: Params, net: Net):
        self.cfg, self.p, self.net = cfg, params, net
        self.zero = net.const(np.array(0), "rqs.add")  # one shared zero add, as in the corpus
        self.identity = net.const(np.array(1 << SHIFT), "rqs.identity_mul")

    def rq(self, x, key, target=110.0, mul=None):
        """A scalar RequantShift; calibrated on first use (when the params are not frozen)."""
        if key not in self.p.rqs:
            if self.p.frozen:
                raise KeyError(f"RequantShift {key} not calibrated")
            if mul is None:
                m, _, shift = calibrate(self.net.value(x), self.net.bounds[x], signed=True,
                                        center=False, target=target, max_shift=SHIFT)
                mul = (int(m[0]), shift)
            self.p.rqs[key] = mul
        m, shift = self.p.rqs[key]
        if m == 1 << SHIFT and shift == SHIFT:
            mul_in = self.identity
        else:
            mul_in = self.net.const(np.array(m), f"{key}.mul")
        return self.net.rqs(x, mul_in, self.zero, shift, name=key)

    def const_w(self, key, shape):
        return self.net.const(self.p.weight(key, lambda r: weights(r, shape)), key)

    def linear(self, x, key, n_in, n_out):
        w = self.const_w(f"{key}.weight", (n_in, n_out))
        b = self.net.const(self.p.weight(f"{key}.bias", lambda r: r.integers(-2000, 2001, size=n_out)),
                           f"{key}.bias")
        y = self.net.node("MatMul", [x, w], name=f"{key}_MatMul")
        y = self.net.node("Add", [b, y], name=f"{key}_Add")
        return self.rq(y, f"{key}.rqs")

    def rmsnorm(self, x, key):
        c = self.cfg
        w = self.p.weight(key, lambda r: np.round(r.uniform(0.6, 1.4, size=c.dim) * 35 * (1 << SHIFT)).astype(np.int64))
        return self.net.node("iRMSNorm", [x, self.net.const(w, key)], {"D": 1 << SHIFT, "n_levels": 256},
                             name=key.replace(".weight", ""))

    def shape_const(self, values, key):
        return self.net.const(np.array(values, dtype=np.int64), key, dtype=np.int64)

    def layer(self, l, x, mask_q, rope, past_k, past_v, seq, prefix=None):
        c, net = self.cfg, self.net
        H, hd = c.heads, c.head_dim
        pre = prefix or f"layers.{l}"
        h = self.rmsnorm(x, f"{pre}.input_norm.weight")
        heads_shape = self.shape_const([1, seq, H, hd], f"{pre}.heads_shape")

        def project_heads(kind, use_rope):
            y = self.linear(h, f"{pre}.self_attn.{kind}_proj", c.dim, c.dim)
            y = net.node("Reshape", [y, heads_shape], name=f"{pre}.{kind}_Reshape")
            if use_rope:
                y = net.node("MatMul", [y, rope], name=f"{pre}.{kind}_rope")
                y = self.rq(y, f"{pre}.self_attn.{kind}_rope.rqs")
            return net.node("Transpose", [y], {"perm": [0, 2, 1, 3]}, name=f"{pre}.{kind}_Transpose")

        def cache(y, past, kind):
            # near-identity RequantShift into the cache scale, then an identity one on the
            # concatenation (so the past entries pass unchanged), as in the corpus
            key = f"{pre}.{kind}_concat_in.rqs"
            if key not in self.p.rqs:
                self.p.rqs[key] = ((1 << SHIFT) - int(self.p.rng.integers(0, 200)), SHIFT)
            y = self.rq(y, key)
            y = net.node("Concat", [past, y], {"axis": -2}, name=f"{pre}.{kind}_Concat")
            return self.rq(y, f"{pre}.{kind}_cache.rqs", mul=(1 << SHIFT, SHIFT))

        k = cache(project_heads("k", True), past_k, "k")                     # [1,H,T,hd]
        kt = net.node("Transpose", [k], {"perm": [0, 1, 3, 2]}, name=f"{pre}.k_T")
        q = project_heads("q", True)                                         # [1,H,S,hd]
        s = net.node("MatMul", [q, kt], name=f"{pre}.scores")                # [1,H,S,T]
        s = self.rq(s, f"{pre}.scores.rqs", target=100)
        s = net.node("TrueIntegerDiv", [s], {"Delta": 16384, "eps": 1, "eta": 200000,
                                             "y": int(math.isqrt(hd))}, name=f"{pre}.scale")
        s = self.rq(s, f"{pre}.scale.rqs", target=60)
        s = net.node("Add", [s, mask_q], name=f"{pre}.mask_Add")
        s = self.rq(s, f"{pre}.mask_Add.rqs", mul=(1 << SHIFT, SHIFT))
        a = net.node("iSoftmax", [s], isoftmax_attrs(c.softmax_log2), name=f"{pre}.softmax")
        a = self.rq(a, f"{pre}.softmax.rqs", target=120)
        v = cache(project_heads("v", False), past_v, "v")                    # [1,H,T,hd]
        o = net.node("MatMul", [a, v], name=f"{pre}.context")                # [1,H,S,hd]
        o = self.rq(o, f"{pre}.context.rqs")
        o = net.node("Transpose", [o], {"perm": [0, 2, 1, 3]}, name=f"{pre}.context_Transpose")
        o = net.node("Reshape", [o, self.shape_const([1, seq, c.dim], f"{pre}.merge_shape")],
                     name=f"{pre}.context_Reshape")
        o = self.linear(o, f"{pre}.self_attn.o_proj", c.dim, c.dim)
        r = self.rq(x, f"{pre}.residual_attn.rqs", target=60)
        o = self.rq(o, f"{pre}.attn_out.rqs", target=60)
        x = self.rq(net.node("Add", [r, o], name=f"{pre}.residual_attn_Add"), f"{pre}.residual_attn_Add.rqs")

        h = self.rmsnorm(x, f"{pre}.post_attention_norm.weight")
        g = self.linear(h, f"{pre}.mlp.gate_proj", c.dim, c.ffn)
        one_over_six, three, six = c.hswish
        g = net.node("iHardswish", [g], {"one_over_six": one_over_six, "three": three, "six": six},
                     name=f"{pre}.mlp.act")
        g = self.rq(g, f"{pre}.mlp.act.rqs")
        u = self.linear(h, f"{pre}.mlp.up_proj", c.dim, c.ffn)
        m = self.rq(net.node("Mul", [g, u], name=f"{pre}.mlp.Mul"), f"{pre}.mlp.Mul.rqs")
        d = self.linear(m, f"{pre}.mlp.down_proj", c.ffn, c.dim)
        r = self.rq(x, f"{pre}.residual_mlp.rqs", target=60)
        d = self.rq(d, f"{pre}.mlp_out.rqs", target=60)
        x = self.rq(net.node("Add", [r, d], name=f"{pre}.residual_mlp_Add"), f"{pre}.residual_mlp_Add.rqs")
        return x, k, v


def rope_matrices(positions, head_dim) -> np.ndarray:
    """int8 rotation matrices [1, len(positions), hd, hd] such that q_rot = q @ R."""
    half = head_dim // 2
    theta = 10000.0 ** (-np.arange(half) / half)
    out = np.zeros((1, len(positions), head_dim, head_dim))
    for n, pos in enumerate(positions):
        cos, sin = np.cos(pos * theta), np.sin(pos * theta)
        i = np.arange(half)
        out[0, n, i, i] = cos
        out[0, n, i + half, i + half] = cos
        out[0, n, i, i + half] = sin
        out[0, n, i + half, i] = -sin
    return np.round(out * 127).astype(np.int64)


def build(cfg: Config, params: Params, name: str, embeds: np.ndarray, past_kv, start: int) -> Net:
    """One network: ``embeds`` [1,S,dim] tokens at positions start.., after ``past_kv`` (a list
    of (K, V) per layer, each [1,H,P,hd]). S > 1: prefill with a causal mask [1,S,T];
    S == 1: autoregressive with a [T] mask of zeros (as the corpus)."""
    seq = embeds.shape[1]
    past = past_kv[0][0].shape[2]
    total = past + seq
    net = Net(name)
    x = net.input("input", embeds)
    if seq == 1:
        mask = np.zeros(total, dtype=np.int64)
        rope = rope_matrices([start], cfg.head_dim)
    else:
        mask = np.where(np.arange(total)[None, :] <= past + np.arange(seq)[:, None], 0, -128)[None]
        rope = rope_matrices(range(start, start + seq), cfg.head_dim)
    mask = net.input("mask", mask)
    rope = net.input("rope", rope)
    pasts = [(net.input(f"past_key_{l}", pk), net.input(f"past_value_{l}", pv))
             for l, (pk, pv) in enumerate(past_kv)]
    b = _Builder(cfg, params, net)
    mask_q = b.rq(mask, "attention_mask.rqs", mul=(4 << SHIFT, SHIFT))
    caches = []
    for l in range(cfg.layers):
        x, k, v = b.layer(l, x, mask_q, rope, *pasts[l], seq)
        caches += [k, v]
    y = b.rmsnorm(x, "norm.weight")
    net.output(net.rename(y, "output"))
    for l in range(cfg.layers):
        net.output(net.rename(caches[2 * l], f"present_key_{l}"), net.rename(caches[2 * l + 1], f"present_value_{l}"))
    return net


def _embeddings(rng, cfg, seq):
    return np.clip(np.round(rng.normal(0, 45, size=(1, seq, cfg.dim))), -128, 127).astype(np.int64)


def _caches(net: Net, cfg: Config):
    return [(net.value(f"present_key_{l}"), net.value(f"present_value_{l}")) for l in range(cfg.layers)]


@functools.lru_cache(maxsize=None)
def _calibrated():
    """Weights and RequantShifts calibrated on the 64-token prefill; returns (cfg, params,
    the prefill network)."""
    cfg = Config()
    rng = np.random.default_rng(seed_of("Models/microLlama"))
    params = Params(rng)
    empty = np.zeros((1, cfg.heads, 0, cfg.head_dim), dtype=np.int64)
    prompt = _embeddings(rng, cfg, 64)
    net = build(cfg, params, "microLlama64_parallel", prompt, [(empty, empty)] * cfg.layers, 0)
    params.frozen = True
    return cfg, params, net


@test("Models/microLlama/microLlama64_parallel", max_data_bytes=1 << 20)
def micro_llama64_parallel(rng):
    return _calibrated()[2]


@test("Models/microLlama/microLlama64", max_data_bytes=1 << 20)
def micro_llama64(rng):
    cfg, params, prefill = _calibrated()
    return build(cfg, params, "microLlama64", _embeddings(rng, cfg, 1), _caches(prefill, cfg), 64)


def _decode_after_prefill(rng, cache_len: int) -> Net:
    """Decode one token with the KV caches a ``cache_len``-token prefill produces."""
    cfg, params, _ = _calibrated()
    empty = np.zeros((1, cfg.heads, 0, cfg.head_dim), dtype=np.int64)
    prefill = build(cfg, params, f"microLlama{cache_len}_prefill", _embeddings(rng, cfg, cache_len),
                    [(empty, empty)] * cfg.layers, 0)
    return build(cfg, params, f"microLlama{cache_len}", _embeddings(rng, cfg, 1), _caches(prefill, cfg), cache_len)


@test("Models/microLlama/microLlama32", max_data_bytes=1 << 20)
def micro_llama32(rng):
    return _decode_after_prefill(rng, 32)


@test("Models/microLlama/microLlama128", max_data_bytes=1 << 20)
def micro_llama128(rng):
    return _decode_after_prefill(rng, 128)


@test("Models/microLlama/microLlama256", max_data_bytes=1 << 20)
def micro_llama256(rng):
    return _decode_after_prefill(rng, 256)
