"""Cross-layer prefetch (Deeploy/tiling/prefetch.py): a tiled layer loads the first tile of the next
layer's weights while it computes, so on the modelled timeline the weights' bytes move inside the
earlier layer's span and the next layer neither moves nor waits for them; outputs stay bit-exact."""

from __future__ import annotations

import argparse
import json

import numpy as np

from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.test_ne16 import needs_qemu
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from Deeploy.tiling.network import TilingOptions

TILED = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
ROWS, K, N = 8, 64, 128      # a few activation rows against wide weights: the layers load mostly weights


def _net() -> Net:
    """Two requantised linear layers, each with its own constant int8 weights (K x N, N x K)."""
    rng = np.random.default_rng(5)
    net = Net("MatMul")
    x = net.input("input_0", ints_in(rng, -128, 127, (ROWS, K)))
    for name, shape in (("first", (K, N)), ("second", (N, K))):
        x = net.calib_rqs(net.node("MatMul", [x, net.const(weights(rng, shape), f"{name}.weight")], name=name),
                          offset_rng=rng, name=f"{name}.rqs")
    net.output(x)
    return net


def _run(test_dir, gen, capsys, db: bool) -> dict[str, dict]:
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, l1=64000, l2=TilingOptions.l2, defaultMemLevel="L2", doublebuffer=db,
                              profileTiling=True, plotMemAlloc=False, timeout=None)
    code = run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(64000, TilingOptions.l2, "L2", db)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    return {e["name"]: e for e in json.loads((gen / "profile.json").read_text())["layers"]}


@needs_qemu
def test_the_next_layers_weights_load_during_the_layer_before(tmp_path, capsys):
    """Single- and double-buffered: the first tile of the second layer's weights (N x K bytes; at
    least a quarter of them) moves inside the first layer's span, beside the first layer's own
    weights and activations; the second layer moves fewer bytes than its weights and waits for DMA
    far less than the first."""
    write_test(_net(), tmp_path / "net")
    for db in (False, True):
        layers = _run(tmp_path / "net", tmp_path / f"gen_{db}", capsys, db)
        first, second = layers["first"]["dma"], layers["second"]["dma"]
        assert first["bytes"] > K * N + ROWS * (K + N) + N * K // 4, (db, first)
        assert second["bytes"] < N * K, (db, second)
        assert second["waited"] < first["waited"] / 2, (db, first, second)
