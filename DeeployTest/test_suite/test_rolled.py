"""Rolled regions (codegen/rolled.py, memory/fold.py, passes/region_schedule.py): microLlama64's
8 decoder layers found by --loop-rolling run as one body called in a loop, bit-exact with the
goldens on Generic, Siracusa, tiled Siracusa (data in L2 and in L3, where the parameters are
streamed into two L2 slots) and with the NPU; one arena layout serves every iteration and never
overlaps two buffers live at the same step."""

from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from Deeploy.binding import bind
from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.frontend.io_data import load_npz_arrays, map_arrays
from Deeploy.memory.fold import region_spans
from Deeploy.memory.planner import BufferKind, plan_memory
from Deeploy.memory.stream import first_pieces, spread
from Deeploy.passes.graph_outputs import copy_shared_outputs
from Deeploy.passes.loop_rolling import LoopRolling, roll_loops
from Deeploy.passes.manager import run_passes
from Deeploy.passes.region_schedule import schedule_regions, stack_types
from Deeploy.targets import get_platform
from Deeploy.ir.region import InputKind, body_inputs
from Deeploy.manifest import LayerInfo, LoopInfo, Manifest, MarkerInfo, read_manifest
from Deeploy.runtime.abi import LAYER_BASE
from Deeploy.targets.siracusa.execute import last_run
from Deeploy.targets.siracusa.profile import per_iteration
from Deeploy.targets.siracusa.timing import LayerTime, TimingResult
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST

LLAMA = CORPUS / "Models/microLlama/INT8/microLlama64"
AUTO = LoopRolling(auto=True)
TOOLCHAIN = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None, reason="QEMU missing")


def _lowered(platform: str):
    graph = load_onnx(LLAMA / "network.onnx")
    npz = LLAMA / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    infer_graph(graph)
    target = get_platform(platform)
    graph = run_passes(graph, (*target.passes, copy_shared_outputs), None)
    graph, _ = roll_loops(graph, AUTO)
    return stack_types(schedule_regions(graph)), target


def _one_loop(platform: str) -> str:
    """The runner's note for microLlama64's 8 decoder layers rolled into one loop on ``platform``."""
    return f"8 iterations of {_lowered(platform)[0].regions[0].body_size} layers run as one loop"


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_regions_run_as_consecutive_blocks_with_one_kernel_per_position(platform):
    graph, target = _lowered(platform)
    spans, notes = region_spans(graph)
    assert not notes and [s.iterations for s in spans] == [8], (spans, notes)
    layers = bind(graph, target, 8)
    s = spans[0]
    for pos in range(s.body):
        variants = {layers[s.start + i * s.body + pos].variant for i in range(s.iterations)}
        assert len(variants) == 1, (pos, variants)


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_one_arena_layout_for_every_iteration(platform):
    graph, target = _lowered(platform)
    layers = bind(graph, target, 8)
    plan = plan_memory(graph, layers, target.level(target.default_level))
    s = region_spans(graph)[0][0]
    # every tensor a body layer writes has the same offset in all iterations except where the
    # value must outlive the next iteration's write (then two alternating places at most)
    for pos in range(s.body):
        for slot, _ in enumerate(layers[s.start + pos].node.outputs):
            offsets = set()
            for i in range(s.iterations):
                name = layers[s.start + i * s.body + pos].node.outputs[slot]
                p = plan.placements[name]
                if p.kind == BufferKind.ACTIVATION:
                    offsets.add(p.offset)
            assert len(offsets) <= 2, (pos, slot, offsets)
    # no two buffers live at one step overlap (checked on the real, unfolded steps)
    arena = [b for b in plan.buffers if b.level == plan.level.name]
    for a in arena:
        for b in arena:
            if a is not b and a.first <= b.last and b.first <= a.last:
                assert a.offset + a.size <= b.offset or b.offset + b.size <= a.offset, (a, b)


def test_rolled_code_is_one_body(tmp_path):
    graph = load_onnx(LLAMA / "network.onnx")
    npz = LLAMA / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    result = compile_graph(graph, "Generic", tmp_path / "out", loop_rolling=AUTO)
    c = (tmp_path / "out" / "Network.c").read_text()
    assert c.count("static void deeploy_r0_body(uint32_t i)") == 1
    assert "for (uint32_t i = 0; i < 8u; ++i)" in c
    assert "/* 100: " not in c    # no layer of a later iteration has code of its own
    assert any("8 iterations of 63 layers run as one loop" in n for n in result.notes), result.notes
    # the manifest: every layer is listed, the later iterations have no marker of their own
    assert len(result.manifest.layers) == 505


def _runs(runner, test_dir: Path, gen: Path, options: dict, capsys) -> str:
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=options.get("cores", 1), profileUntiled=False, profileTiling=None, timeout=None)
    code = run_test(args, runner, options)
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    return out


def _text(out: str) -> int:
    return int(re.search(r"Code: \.text (\d+) B", out).group(1))


def test_generic_rolled_is_bit_exact_and_smaller(capsys):
    gen = DEEPLOY_TEST / "TEST_GENERIC" / "rolled"
    rolled = _runs(GENERIC, LLAMA, gen / "rolled", {"loop_rolling": AUTO}, capsys)
    flat = _runs(GENERIC, LLAMA, gen / "flat", {}, capsys)
    assert "8 iterations of 63 layers run as one loop" in rolled
    assert _text(rolled) < _text(flat) / 1.5, (_text(rolled), _text(flat))


@TOOLCHAIN
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_rolled_is_bit_exact(cores, capsys):
    runner = RunnerPlatform("Siracusa", "TEST_SIRACUSA")
    out = _runs(runner, LLAMA, DEEPLOY_TEST / "TEST_SIRACUSA" / "rolled" / f"cores{cores}",
                {"cores": cores, "loop_rolling": AUTO}, capsys)
    assert _one_loop("Siracusa") in out


@TOOLCHAIN
@pytest.mark.parametrize("level,double", [("L2", False), pytest.param("L2", True, marks=pytest.mark.slow),
                                          pytest.param("L3", False, marks=pytest.mark.slow), ("L3", True)])
def test_tiled_rolled_is_bit_exact(level, double, capsys):
    runner = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
    tiling = TilingOptions(l1=64000, default_level=level, double_buffer=double)
    out = _runs(runner, LLAMA, DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "rolled" / f"{level}{int(double)}",
                {"cores": 8, "tiling": tiling, "loop_rolling": AUTO}, capsys)
    # with the graph input in L3 it is copied into the arena first: every iteration reads the arena alike
    assert _one_loop("Siracusa") in out and "emitted layer by layer" not in out, out
    if level == "L3":   # the parameters are streamed: L2 holds two iterations' worth, not eight
        manifest = read_manifest(DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "rolled" / f"{level}{int(double)}" / "network")
        (stream,) = [b for b in manifest.buffers if b.kind == "streamed"]
        per_iteration = _per_iteration_bytes()
        assert stream.size <= 2 * per_iteration + 2 * 16 * 64, (stream.size, per_iteration)
        l2 = int(re.search(r"L2 (\d+) B", out).group(1))
        assert l2 < 3 * per_iteration, (l2, per_iteration)
        c = (DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "rolled" / f"{level}{int(double)}" / "network" / "Network.c").read_text()
        assert "deeploy_s0_fetch(i + 0u);" in c and "deeploy_s0_fetch(0u);" not in c   # one loop, no peeled code
        # the next iteration's parameters come in one piece per body position, of about equal size
        pieces = [int(v) for v in re.search(r"deeploy_s0_piece\[\] = \{([^}]*)\}", c).group(1).split(",")]
        body = _lowered("Siracusa")[0].regions[0].body_size
        assert len(pieces) == body + 1 and pieces[0] == 0 and pieces[-1] == stream.size // 2, pieces
        assert max(b - a for a, b in zip(pieces, pieces[1:])) <= pieces[-1] // body + 16, pieces
        assert f"deeploy_s0_next(i + 0u, {body - 1}u);" in c


def test_stream_pieces_cover_the_slot_one_per_position():
    # 100 B over 3 positions: bounds at 100/3 and 200/3 rounded up to 16 B
    assert spread(100, 3) == ((0, 0, 48), (1, 48, 80), (2, 80, 100))
    # fewer 16 B units than positions: positions 1, 3 and 4 issue nothing
    assert spread(32, 5) == ((0, 0, 16), (2, 16, 32))


@pytest.mark.parametrize("slot,positions,chunks", [
    (11392, 41, ((0, 0, 128), (1, 128, 144), (2, 144, 1248), (5, 1248, 1264), (9, 1264, 5000), (20, 5000, 11392))),
    (96, 3, ((0, 0, 32), (2, 32, 96))),
    (4096, 2, ((1, 0, 4096),)),
])
def test_first_iteration_pieces_arrive_one_position_early_in_small_pieces(slot, positions, chunks):
    pieces = first_pieces(slot, positions, chunks)
    bounds = [a for _, a, _ in pieces] + [slot]
    assert [b for _, _, b in pieces] == bounds[1:] and bounds[0] == 0     # contiguous, the whole slot
    assert [q for q, _, _ in pieces] == sorted(q for q, _, _ in pieces)   # issued in position order
    for pos, _, end in chunks:
        assert end in bounds                                                # a copy ends where a chunk does
        issued = max(q for q, _, b in pieces if b <= end)
        assert issued <= max(0, pos - 1), (pos, issued)                     # on its way a position early
    per_position = {}
    for q, a, b in pieces:
        per_position[q] = per_position.get(q, 0) + b - a
    # no position issues more than the least rate meeting every deadline (one position early), 16 B rounded
    due = max(-(-end // max(1, pos)) for pos, _, end in chunks)
    assert max(per_position.values()) <= max(due, -(-slot // positions)) + 16, per_position


def _per_iteration_bytes() -> int:
    """Bytes of one decoder layer's per-iteration constants, from the lowered graph (as stored)."""
    graph, _ = _lowered("Siracusa")
    region = graph.regions[0]
    return sum(graph.tensors[b.tensors[0]].nbytes for b in body_inputs(graph, region)
               if b.kind == InputKind.PER_ITERATION and graph.tensors[b.tensors[0]].is_constant)


def test_last_run_keeps_a_rolled_run_whole():
    def lt(layer, start, cycles):
        return LayerTime(layer, float(start), float(cycles))
    # two runs of a network whose layers 0, 1 run twice per run (a rolled body), then layer 2
    run = [lt(0, 0, 10), lt(1, 10, 10), lt(0, 20, 10), lt(1, 30, 10), lt(2, 40, 10)]
    second = [replace(x, start=x.start + 100) for x in run]
    result = TimingResult(total=150.0, forks=(), layers=tuple(run + second))
    assert last_run(result).layers == tuple(second)


def test_profiles_name_every_iteration():
    # layers 0..4 rolled as 2 iterations of 2 (layers 1..4) after layer 0; markers of 0, 1, 2 only
    layers = tuple(LayerInfo(k, f"n{k}", "Op", "K", "cluster", True, LAYER_BASE + k if k < 3 else None)
                   for k in range(6))
    markers = tuple(MarkerInfo(LAYER_BASE + k, f"layer {k}", k) for k in (0, 1, 2, 5))
    manifest = Manifest("Siracusa", "x.onnx", 8, (), layers, (), markers, (), (LoopInfo("loop0", 1, 2, 2),))
    run = [LayerTime(k, float(10 * t), 10.0) for t, k in enumerate([0, 1, 2, 1, 2, 5])]
    labels = [lt.layer for lt in per_iteration(TimingResult(60.0, (), tuple(run)), manifest).layers]
    assert labels == [0, 1, 2, 3, 4, 5]
    assert manifest.layer_of_marker(LAYER_BASE + 4).name == "n4"
    assert manifest.layer_of_marker(LAYER_BASE + 7) is None
    assert Manifest.from_json(manifest.to_json()) == manifest


@TOOLCHAIN
@pytest.mark.parametrize("tiled", [False, True])
def test_npu_rolled_is_bit_exact(tiled, capsys):
    """With the NPU: its jobs' per-iteration shift and weight offset read tables."""
    runner = RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA_TILED" if tiled else "TEST_SIRACUSA_W_NEUREKA")
    options = {"cores": 8, "loop_rolling": AUTO} | ({"tiling": TilingOptions(l1=64000)} if tiled else {})
    out = _runs(runner, LLAMA, DEEPLOY_TEST / runner.gen_root / "rolled", options, capsys)
    assert _one_loop("Siracusa_w_neureka") in out, out


@TOOLCHAIN
def test_weights_moved_to_l3_to_fit_are_streamed(capsys):
    """Without --defaultMemLevel a tight --l2 moves the largest weights to L3: whole per-iteration
    families are then streamed, and L2 holds less than with them staged tile by tile."""
    runner = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
    tiling = TilingOptions(l1=64000, l2=360000, double_buffer=True)
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "rolled" / "spill"
    out = _runs(runner, LLAMA, gen, {"cores": 8, "tiling": tiling, "loop_rolling": AUTO}, capsys)
    c = (gen / "network" / "Network.c").read_text()
    assert "deeploy_s0_fetch(i + 0u);" in c and _one_loop("Siracusa") in out
    assert int(re.search(r"L2 (\d+) B", out).group(1)) <= 360000, out


@TOOLCHAIN
def test_npu_weights_streamed_into_the_weight_memory(capsys):
    """Parameters in L3 and a weight memory too small for every iteration's NPU weights but not
    for two: those are streamed into a double buffer there, the jobs read it through the weight port."""
    runner = RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA_TILED")
    gen = DEEPLOY_TEST / runner.gen_root / "rolled_wmem_stream"
    options = {"cores": 8, "tiling": TilingOptions(l1=64000, default_level="L3"), "loop_rolling": AUTO,
               "platform_options": {"neureka_wmem": True, "wmem_size": 256 * 1024}}
    out = _runs(runner, LLAMA, gen, options, capsys)
    graph, _ = _lowered("Siracusa_w_neureka")
    blobs = {n.inputs[1] for n in graph.nodes if n.op == "NeurekaConv"}
    per_iteration = sum(graph.tensors[b.tensors[0]].nbytes for b in body_inputs(graph, graph.regions[0])
                        if b.kind == InputKind.PER_ITERATION and b.tensors[0] in blobs)
    assert 8 * per_iteration > 256 * 1024 >= 2 * per_iteration   # all do not fit, two iterations' worth do
    manifest = read_manifest(gen / "network")
    (stream,) = [b for b in manifest.buffers if b.kind == "streamed" and b.level == "WMEM"]
    assert stream.size == 2 * per_iteration, (stream.size, per_iteration)
    assert f"WMEM {stream.size} B" in out and "streamed into it" in out, out
    c = (gen / "network" / "Network.c").read_text()
    assert "deeploy_stream_WMEM[" in c and "DEEPLOY_WMEM_CONST" not in c.split("/* ---- kernels ---- */")[0]
