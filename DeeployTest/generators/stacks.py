"""Stacks of repeated blocks, for loop rolling (``--loop-rolling``, ``--loop-body-hierarchy``).

- ``Models/Stacks/Decoder{2,4,8,16}``: N microLlama decoder layers (``llama.py``'s layer, small:
  dim 32, 2 heads, one token after a 4-token KV cache), the same layer with its own weights and
  requantisation per layer; nodes carry exporter-style ``pkg.torch.onnx.name_scopes``
  (``layers``, ``layers.<i>``). ``Decoder8NoMetadata``: the same without metadata (module paths
  only in the node names).
- ``Models/Stacks/EncoderDecoder``: 3 MLP encoder blocks (``encoder.layer.<i>``), then 2 decoder
  layers (``decoder.layer.<i>``): two different repeated blocks.
- ``Models/Stacks/BigWeights``: 5 MLP blocks of 2 x 256 x 1024 int8 weights (2.5 MiB of
  weights, more than Siracusa's default --l2), one token.
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from DeeployTest.generators.builder import Net
from DeeployTest.generators.llama import Config, Params, _Builder, rope_matrices
from DeeployTest.generators.registry import seed_of, test

SMALL = Config(dim=32, heads=2, head_dim=16, ffn=64, layers=1)
PAST = 4


def _tokens(rng, dim: int) -> np.ndarray:
    return np.clip(np.round(rng.normal(0, 45, size=(1, 1, dim))), -128, 127).astype(np.int64)


def _scopes(path: str) -> tuple[str, ...]:
    """The cumulative module paths of ``path`` (``decoder.layer.0`` -> decoder, decoder.layer, decoder.layer.0)."""
    parts = path.split(".")
    return tuple(".".join(parts[:k]) for k in range(1, len(parts) + 1))


def _mlp_block(b: _Builder, pre: str, x: str) -> str:
    """iRMSNorm -> up projection -> iHardswish -> down projection -> residual Add."""
    c, net = b.cfg, b.net
    h = b.rmsnorm(x, f"{pre}.norm.weight")
    g = b.linear(h, f"{pre}.up_proj", c.dim, c.ffn)
    one_over_six, three, six = c.hswish
    g = net.node("iHardswish", [g], {"one_over_six": one_over_six, "three": three, "six": six}, name=f"{pre}.act")
    g = b.rq(g, f"{pre}.act.rqs")
    d = b.linear(g, f"{pre}.down_proj", c.ffn, c.dim)
    r = b.rq(x, f"{pre}.residual.rqs", target=60)
    d = b.rq(d, f"{pre}.mlp_out.rqs", target=60)
    return b.rq(net.node("Add", [r, d], name=f"{pre}.residual_Add"), f"{pre}.residual_Add.rqs")


def _decoder_layers(b: _Builder, net: Net, x: str, group: str, layers: int, rng, metadata: bool) -> str:
    """``layers`` decoder layers named ``<group>.<i>``, each with its own past K/V inputs."""
    c = b.cfg
    mask = net.input(f"{group}.mask", np.zeros(PAST + 1, dtype=np.int64))
    rope = net.input(f"{group}.rope", rope_matrices([PAST], c.head_dim))
    mask_q = b.rq(mask, f"{group}.attention_mask.rqs", mul=(4 << 16, 16))
    for i in range(layers):
        past = [net.input(f"{group}.past_{kind}_{i}",
                          np.clip(np.round(rng.normal(0, 40, size=(1, c.heads, PAST, c.head_dim))), -128, 127)
                          .astype(np.int64)) for kind in ("key", "value")]
        net.scopes = _scopes(f"{group}.{i}") if metadata else ()
        x, k, v = b.layer(i, x, mask_q, rope, *past, 1, prefix=f"{group}.{i}")
        net.scopes = ()
        net.output(net.rename(k, f"{group}.present_key_{i}"), net.rename(v, f"{group}.present_value_{i}"))
    return x


def _decoder(path: str, layers: int, metadata: bool = True) -> Net:
    rng = np.random.default_rng(seed_of(path))
    net = Net(path.rsplit("/", 1)[-1])
    b = _Builder(SMALL, Params(rng), net)
    x = _decoder_layers(b, net, net.input("input", _tokens(rng, SMALL.dim)), "layers", layers, rng, metadata)
    net.scopes = ("norm",) if metadata else ()
    y = b.rmsnorm(x, "norm.weight")
    net.scopes = ()
    net.output(net.rename(y, "output"))
    net.outputs.insert(0, net.outputs.pop())   # the network output first, then the caches
    return net


for _n in (2, 4, 8, 16):
    test(f"Models/Stacks/Decoder{_n}", max_data_bytes=1 << 20)(lambda rng, n=_n: _decoder(f"Models/Stacks/Decoder{n}", n))


@test("Models/Stacks/Decoder8NoMetadata", max_data_bytes=1 << 20)
def decoder8_no_metadata(rng):
    return _decoder("Models/Stacks/Decoder8NoMetadata", 8, metadata=False)


def _mlp_stack(b: _Builder, net: Net, x: str, group: str, blocks: int) -> str:
    for i in range(blocks):
        net.scopes = _scopes(f"{group}.{i}")
        x = _mlp_block(b, f"{group}.{i}", x)
    net.scopes = ()
    return x


@test("Models/Stacks/EncoderDecoder", max_data_bytes=1 << 20)
def encoder_decoder(rng):
    net = Net("EncoderDecoder")
    b = _Builder(SMALL, Params(rng), net)
    x = _mlp_stack(b, net, net.input("input", _tokens(rng, SMALL.dim)), "encoder.layer", 3)
    x = _decoder_layers(b, net, x, "decoder.layer", 2, rng, metadata=True)
    net.output(net.rename(x, "output"))
    net.outputs.insert(0, net.outputs.pop())
    return net


@test("Models/Stacks/BigWeights", max_data_bytes=1 << 20)
def big_weights(rng):
    cfg = Config(dim=256, heads=1, head_dim=256, ffn=1024, layers=1)
    net = Net("BigWeights")
    b = _Builder(cfg, Params(rng), net)
    x = _mlp_stack(b, net, net.input("input", _tokens(rng, cfg.dim)), "layers", 5)
    net.output(net.rename(x, "output"))
    _int8_weights(net)
    return net


def _int8_weights(net: Net) -> None:
    """Store the projection weights as INT8 initializers (a quarter of the file); onnxruntime
    does not run MatMul on FLOAT x INT8, so those nodes are checked by the reference only."""
    weights = set()
    for k, init in enumerate(net.initializers):
        if init.name.endswith(".weight") and init.name in net.values and len(init.dims) == 2:
            net.initializers[k] = numpy_helper.from_array(net.values[init.name].astype(np.int8), init.name)
            weights.add(init.name)
    net.ort_skip.update(n.name for n in net.nodes if n.op_type == "MatMul" and weights & set(n.input))
