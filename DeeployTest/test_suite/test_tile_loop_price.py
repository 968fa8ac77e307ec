"""The tiler prices every tile with the loop its layer runs (``dma_plan.loop_kind``): straight-line
code up to STRAIGHT_TILES tiles and a planned loop beyond (``TilingParams.loop_cycles``), the
table loop (``tile_loop_cycles``) for the layers that run from tables (an NPU layer of more
tiles); and with ``--doublebuffer`` it double-buffers exactly the layers whose modelled cycles drop, as ``-v`` prints. Compiles only,
no simulation."""

from __future__ import annotations

import re

import numpy as np

from Deeploy.cli import main
from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types
from Deeploy.frontend.onnx_loader import load_onnx
from Deeploy.targets import get_platform
from Deeploy.tiling.dma_plan import STRAIGHT_TILES, loop_kind
from Deeploy.tiling.network import TilingOptions
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST

LLAMA = CORPUS / "Models/microLlama/INT8/microLlama64_parallel"
MINI = CORPUS / "Models/miniMobileNetv2"
KWS = DEEPLOY_TEST / "Tests/Models/KWS_DSCNN"


def _compile(test_dir, platform: str, tmp_path, l1: int, db: bool, level: str = "L2"):
    graph = load_onnx(test_dir / "network.onnx")
    assign_input_types(graph, dict(zip(graph.inputs, np.load(test_dir / "inputs.npz").values())))
    return compile_graph(graph, platform, tmp_path / f"{platform}_{l1}_{db}_{level}", cores=8,
                         tiling=TilingOptions(l1, TilingOptions.l2, level, db))


def _priced_loop(sched, params) -> float:
    """The per-tile loop cycles the layer's tiling was priced with: its overhead less the DMA
    issue, per tile, less fork, join and (without a kernel formula) the kernel call's set-up."""
    sol = sched.l1
    issue = sum(b.issue_cycles for b in sol.buffers)
    call = params.call_price(sched.spec.op) if sched.spec.tile_cycles is None else 0
    return (sol.overhead_cycles - issue) / sol.num_tiles - params.fork_cycles - params.barrier_cycles - call


def _check_prices(result, platform: str) -> set[str]:
    params = get_platform(platform).tiling.tiles
    price = {"code": dict(params.loop_cycles)[1], "plan": dict(params.loop_cycles)[STRAIGHT_TILES + 1],
             "tables": params.tile_loop_cycles}
    kinds = set()
    for k, sched in result.tiled.schedules.items():
        kind = loop_kind(result.layers[k], sched)
        kinds.add(kind)
        assert _priced_loop(sched, params) == price[kind], (result.layers[k].node.name, kind, sched.num_tiles)
    return kinds


def test_tiles_are_priced_with_the_loop_they_run(tmp_path):
    """microLlama64_parallel at --l1 8000 has straight-line and planned layers, each priced with
    its own loop; with the weights in L3 the staged layers run from tables and are priced so."""
    assert {"code", "plan"} <= _check_prices(_compile(LLAMA, "Siracusa", tmp_path, 8000, True), "Siracusa")
    assert "tables" in _check_prices(_compile(MINI, "Siracusa", tmp_path, 8000, True, "L3"), "Siracusa")


def test_npu_layers_are_priced_with_their_loop(tmp_path):
    """Tiled NPU layers (an engine with a job queue) run straight-line up to STRAIGHT_TILES tiles
    and from tables beyond: each priced with its loop."""
    result = _compile(KWS, "Siracusa_w_neureka", tmp_path, 16000, True)
    npu = {k: s for k, s in result.tiled.schedules.items() if result.layers[k].engine.tile_sync}
    assert npu
    _check_prices(result, "Siracusa_w_neureka")
    for k, sched in npu.items():
        assert loop_kind(result.layers[k], sched) == ("code" if sched.num_tiles <= STRAIGHT_TILES else "tables")


def test_double_buffering_where_it_pays(tmp_path, capsys):
    """With --doublebuffer a layer is double-buffered exactly when that tiling's modelled cycles
    are below the best single-buffered one (the tiling without --doublebuffer), and -v prints
    each layer's choice with the other buffering's cycles."""
    onnx = MINI / "network.onnx"
    out = tmp_path / "db"
    assert main(["compile", str(onnx), "--platform", "Siracusa", "--cores", "8", "--l1", "16000",
                 "--doublebuffer", "-v", "-o", str(out)]) == 0
    line = re.compile(r"^tiling: (\S+) \(\w+\): .* (DB|SB); cycles (\d+) .*; (?:single|double)-buffered: (\d+) cycles$",
                      re.M)
    printed = {}
    for m in line.finditer(capsys.readouterr().out):
        printed[m[1]] = (m[2] == "DB", int(m[3]), int(m[4]))
    single = _compile(MINI, "Siracusa", tmp_path, 16000, False)
    layers = {single.layers[k].node.name: s for k, s in single.tiled.schedules.items()}
    assert printed and set(printed) == set(layers)
    assert {db for db, _, _ in printed.values()} == {True, False}
    for name, (db, cycles, other) in printed.items():
        sb_cycles = layers[name].l1.total_cycles
        if db:
            assert cycles < sb_cycles == other, name
        else:
            assert cycles == sb_cycles and other >= cycles, name
