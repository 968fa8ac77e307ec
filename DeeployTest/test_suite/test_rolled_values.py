"""Rolled bodies whose kernel arguments differ per iteration (codegen/rolled.py, codegen/c_values.py):
a constant array argument (a Gather's index runs) that differs per iteration is read from a
per-iteration table at run time, never written into a static initializer; the network runs
rolled, bit-exact with onnxruntime, on Generic, Siracusa and tiled Siracusa."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.tiling.network import TilingOptions
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import RunnerPlatform
from DeeployTest.test_suite.test_rolled import AUTO, TOOLCHAIN, _runs

BLOCKS, ROWS, COLS = 4, 4, 8


def _gather_stack(folder: Path) -> Path:
    """BLOCKS x (Gather along axis 1 -> Relu); block k gathers columns (k + 3j) % COLS: every block
    the same number of index runs, at different starts. Goldens from onnxruntime."""
    nodes, inits, x = [], [], "x"
    for k in range(BLOCKS):
        inits.append(numpy_helper.from_array(np.array([(k + 3 * j) % COLS for j in range(COLS)], np.int64), f"idx{k}"))
        nodes += [helper.make_node("Gather", [x, f"idx{k}"], [f"g{k}"], axis=1, name=f"blocks.{k}.gather"),
                  helper.make_node("Relu", [f"g{k}"], [f"r{k}"], name=f"blocks.{k}.relu")]
        x = f"r{k}"
    graph = helper.make_graph(nodes, "gather_stack", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [ROWS, COLS])],
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [ROWS, COLS])], inits)
    folder.mkdir(parents=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), folder / "network.onnx")
    data = np.random.default_rng(7).integers(-128, 128, size=(ROWS, COLS)).astype(np.float32)
    (out,) = ort.InferenceSession(str(folder / "network.onnx")).run(None, {"x": data})
    np.savez(folder / "inputs.npz", x=data)
    np.savez(folder / "outputs.npz", **{x: out})
    return folder


CONFIGS = {
    "generic": (None, {}),
    "siracusa": ("TEST_SIRACUSA", {"cores": 8}),
    "tiled": ("TEST_SIRACUSA_TILED", {"cores": 8, "tiling": TilingOptions(l1=64000, default_level="L2")}),
}


@TOOLCHAIN
@pytest.mark.parametrize("config", list(CONFIGS))
def test_per_iteration_gather_indices_run_rolled(config, tmp_path, capsys):
    root, options = CONFIGS[config]
    runner = GENERIC if root is None else RunnerPlatform("Siracusa", root)
    out = _runs(runner, _gather_stack(tmp_path / "net"), tmp_path / "gen", options | {"loop_rolling": AUTO}, capsys)
    assert f"{BLOCKS} iterations of 2 layers run as one loop" in out, out
    c = (tmp_path / "gen" / "network" / "Network.c").read_text()
    assert f"static const uint32_t deeploy_r0_v0[{BLOCKS}][{COLS}]" in c   # the index runs of every iteration
