"""Cross-layer prefetch (Deeploy/tiling/prefetch.py): a tiled layer loads the first tile of the next
layer's weights while it computes, so on the modelled timeline the weights' bytes move inside the
earlier layer's span and the next layer neither moves nor waits for them; outputs stay bit-exact.
The memory plan keeps every slot loaded ahead clear of the tiles of the layer that loads it, also
where L1 is tight and the tiler makes room."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.test_ne16 import needs_qemu
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
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


@pytest.mark.parametrize("net,l1", [("microLlama/microLlama64_parallel", 8000), ("ResNet8", 16000)])
def test_slots_loaded_ahead_stay_clear_of_live_tiles(net, l1, tmp_path):
    """Where L1 is tight: some layers hand their successor's first tile over, and in the manifest's
    memory plan no two L1 tile buffers live at the same layer overlap (a slot loaded ahead is live
    from the layer that loads it), all within --l1."""
    d = DEEPLOY_TEST / "Tests" / "Models" / Path(net)
    graph = load_onnx(d / "network.onnx")
    npz = d / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    result = compile_graph(graph, "Siracusa", tmp_path / "out", cores=8, tiling=TilingOptions(l1, 2000000, "L2", True))
    tiles = [b for b in result.manifest.buffers if b.level == "L1"]
    early = [b for b in tiles if b.first < b.last]
    assert early, "no slot is loaded ahead"
    assert all(0 <= b.offset and b.offset + b.size <= l1 for b in tiles)
    for b in early:
        for c in tiles:
            if c is not b and c.first <= b.last and b.first <= c.last:
                assert b.offset + b.size <= c.offset or c.offset + c.size <= b.offset, (b, c)
