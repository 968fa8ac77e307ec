"""Compile work grows linearly with the number of nodes: a chain twice as long costs about twice the
Python function calls (a deterministic count, unlike time), in every stage from loading to writing;
repeated identical layers share their tiling work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.compiler import compile_network
from Deeploy.frontend import load_npz_arrays
from Deeploy.ir.dtypes import INT8
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.chain import write_chain

REPO = Path(__file__).resolve().parents[2]


def _calls(folder: Path, nodes: int, platform: str) -> int:
    """Python function calls (and generator resumptions) of one compile of a ``nodes``-long chain."""
    path = write_chain(folder / "net", nodes)
    values = load_npz_arrays(path.with_name("inputs.npz"))
    count = 0

    def tally(frame, event, arg):
        nonlocal count
        count += event == "call"
    compile_network(path, platform, folder / "warm", input_values=values)   # imports and caches outside the count
    sys.setprofile(tally)
    try:
        compile_network(path, platform, folder / "out", input_values=values)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_doubling_a_chain_doubles_the_work(tmp_path, platform):
    small, large = _calls(tmp_path / "small", 300, platform), _calls(tmp_path / "large", 600, platform)
    assert large < 2.2 * small, f"{platform}: 300 nodes {small} calls, 600 nodes {large} ({large / small:.2f}x)"


@pytest.mark.slow
def test_100k_node_chain_compiles(tmp_path):
    path = write_chain(tmp_path / "net", 100_000)
    result = compile_network(path, "Generic", tmp_path / "out", input_values=load_npz_arrays(path.with_name("inputs.npz")))
    assert result.summary.layers == 100_000


def _requant_chain(folder: Path, blocks: int, width: int = 4096) -> Path:
    """``blocks`` identical int8 RequantShifts in a row (their kernel's output table is optional
    scratch, evaluated per candidate tile)."""
    folder.mkdir(parents=True, exist_ok=True)
    inits = [numpy_helper.from_array(np.array([v], np.float32), name) for name, v in (("mul", 5), ("add", 2))]
    nodes, x = [], "x"
    for k in range(blocks):
        y = "y" if k == blocks - 1 else f"t{k}"
        nodes.append(helper.make_node("RequantShift", [x, "mul", "add"], [y], name=f"rq{k}", div=8, n_levels=256,
                                      signed=1))
        x = y
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, width])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), folder / "network.onnx")
    return folder / "network.onnx"


def test_identical_layers_share_their_tiling_work(tmp_path, monkeypatch):
    """Repeating a layer adds no CP-SAT solve and no per-tile scratch evaluation: layers that
    compute the same function (op, attributes, shapes, types, constants) share them."""
    from Deeploy.tiling import cpsat, solver, tile_scratch
    counts = {}

    def counted(module, name):
        fn = getattr(module, name)

        def wrapper(*args, **kwargs):
            counts[name] = counts.get(name, 0) + 1
            return fn(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)
    counted(tile_scratch, "tile_node")
    counted(cpsat, "solve")
    work = {}
    for blocks in (3, 6):
        solver.clear_cache()
        tile_scratch.clear_cache()
        counts.clear()
        compile_network(_requant_chain(tmp_path / f"net{blocks}", blocks), "Siracusa", tmp_path / f"out{blocks}",
                        input_types={"x": INT8}, cores=8, tiling=TilingOptions(l1=8000, double_buffer=True))
        work[blocks] = dict(counts)
    assert work[3]["tile_node"] > 0 and work[3]["solve"] > 0
    assert work[6] == work[3]


def test_tiled_compile_imports_no_pandas_pygments_or_other_targets(tmp_path):
    """A tiled Siracusa compile loads neither pandas (OR-Tools' cp_model imports it), pygments
    (Mako's HTML error pages) nor the other targets' packages."""
    path = _requant_chain(tmp_path / "net", 2)
    code = ("import sys; from Deeploy.compiler import compile_network; from Deeploy.ir.dtypes import INT8; "
            "from Deeploy.tiling.network import TilingOptions; "
            f"compile_network({str(path)!r}, 'Siracusa', {str(tmp_path / 'out')!r}, input_types={{'x': INT8}}, "
            "cores=8, tiling=TilingOptions(l1=8000)); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pandas', 'pygments') "
            "or m.startswith(('Deeploy.targets.generic.platform', 'Deeploy.targets.siracusa_w_neureka'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[-2] == "[]"
