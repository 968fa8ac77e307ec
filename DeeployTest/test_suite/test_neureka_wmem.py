"""Siracusa_w_neureka's weight memory (--neureka-wmem): the knapsack that chooses the NPU weights
placed there (exact, better than first-come in graph order), the placement in the compiled
program (a level of its own, resident tiles: no L1 slot, no DMA, the job's weight-memory bit), the
runner and `deeploy compile` flags, and networks running bit-exactly under QEMU with it."""

from __future__ import annotations

import argparse
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.memory.knapsack import Item, choose
from Deeploy.memory.planner import BufferKind
from Deeploy.targets.siracusa.timing import model_cycles, read_records
from Deeploy.targets.siracusa_w_neureka.ops import config_word
from Deeploy.targets.siracusa_w_neureka.wmem import weight_values
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.neureka_flags import add_neureka_flags, neureka_options
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

MOBILENET = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
WMEM_BIT = 1 << 9
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


# ---- the knapsack ---------------------------------------------------------------------------
def _greedy_in_order(items, capacity):
    """The peer's placement: in graph order, each item that still fits."""
    chosen, used = [], 0
    for it in items:
        if used + it.size <= capacity:
            chosen.append(it.name)
            used += it.size
    return chosen


def _value(items, names):
    return sum(it.value for it in items if it.name in names)


def test_knapsack_beats_first_come_in_graph_order():
    items = [Item("first", 64, 60), Item("second", 48, 50), Item("third", 48, 50)]
    assert _greedy_in_order(items, 96) == ["first"]                     # 60 cycles saved
    assert choose(items, 96) == ["second", "third"]                      # 100 cycles saved


def test_knapsack_is_exact():
    """Against every subset, on random instances; value first, then the fewest bytes."""
    rng = np.random.default_rng(6)
    for _ in range(20):
        items = [Item(f"w{k}", int(rng.integers(1, 40)) * 32, int(rng.integers(0, 500))) for k in range(9)]
        capacity = int(rng.integers(1, 120)) * 32
        best = max(((_value(items, {i.name for i in sub}), -sum(i.size for i in sub))
                    for r in range(len(items) + 1) for sub in itertools.combinations(items, r)
                    if sum(i.size for i in sub) <= capacity))
        got = choose(items, capacity)
        assert sum(it.size for it in items if it.name in got) <= capacity
        assert (_value(items, got), -sum(it.size for it in items if it.name in got)) == best


def test_knapsack_edges():
    assert choose([], 100) == []
    assert choose([Item("big", 200, 9)], 100) == []          # never fits
    assert choose([Item("idle", 32, 0)], 100) == []          # saves nothing
    assert choose([Item("a", 32, 1), Item("b", 32, 2)], 64) == ["a", "b"]


# ---- placement in a compiled network --------------------------------------------------------
def _graph():
    graph = load_onnx(MOBILENET / "network.onnx")
    assign_input_types(graph, {graph.inputs[0]: next(iter(np.load(MOBILENET / "inputs.npz").values()))})
    return graph


def _compile(tmp_path, tiling=None, **options):
    return compile_graph(_graph(), "Siracusa_w_neureka", tmp_path / "out", tiling=tiling,
                         platform_options={"neureka_wmem": True, **options})


def test_placement_is_the_best_within_a_small_weight_memory(tmp_path):
    """With room for a few blobs only, the placed set saves the most modelled cycles (checked
    against every subset of the tiler's values) and more than first-come in graph order does."""
    tiling = TilingOptions(l1=2000, default_level="L3", double_buffer=True)
    result = _compile(tmp_path, tiling, wmem_size=4096)
    placed = {n for n, p in result.plan.placements.items() if p.kind == BufferKind.WEIGHT}
    blank = compile_graph(_graph(), "Siracusa_w_neureka", tmp_path / "blank", tiling=tiling)
    from Deeploy.targets import get_platform
    platform = get_platform("Siracusa_w_neureka").configure(wmem_size=4096)
    values = weight_values(blank.graph, blank.layers, blank.plan, platform, tiling, 8)
    items = [Item(w, size, value) for w, (size, value) in values.items()]
    assert len(items) == 12 and len({it.value for it in items}) > 3
    best = max(_value(items, {i.name for i in sub}) for r in range(len(items) + 1)
               for sub in itertools.combinations(items, r) if sum(i.size for i in sub) <= 4096)
    assert _value(items, placed) == best
    assert _value(items, set(_greedy_in_order(items, 4096))) < best
    assert sum(values[w][0] for w in placed) <= 4096
    assert any("weight memory:" in note and "placed" in note for note in result.notes)


def test_layers_that_tile_only_with_their_weights_in_place_come_first(tmp_path):
    """At --l1 1200 two depthwise layers fit L1 only without their weight blobs: a 1 KiB weight
    memory takes exactly those two (first-come in graph order would fill it with block0's 1 KiB
    blob and the network would not tile); with room for one only, the other layer's error remains."""
    tiling = TilingOptions(l1=1200, default_level="L3")
    result = _compile(tmp_path, tiling, wmem_size=1024)
    placed = {n for n, p in result.plan.placements.items() if p.kind == BufferKind.WEIGHT}
    assert placed == {"block2.dw.npu_weights", "block3.dw.npu_weights"}
    from Deeploy.errors import DeeployError
    with pytest.raises(DeeployError, match="layer 'block2.dw' \\(NeurekaConv\\) does not fit L1 = 1200 B"):
        _compile(tmp_path, tiling, wmem_size=512)


def test_placed_weights_are_resident_tiles(tmp_path):
    """Tiled: a placed blob has no L1 slot and is never copied (copies 0 in its layer's table),
    lives in the WMEM level's section, and its jobs set the weight-memory bit; the others keep
    their L1 slots. The memory plot has a WMEM panel holding the blobs. (Constants in L3: with
    them in L2 a layer of few tiles runs faster as straight-line code with its weights DMA'd than
    from the tables a resident operand needs, and the placement leaves them there.)"""
    tiling = TilingOptions(l1=16000, default_level="L3")
    result = _compile(tmp_path, tiling)
    npu = [k for k, layer in enumerate(result.layers) if layer.node.op == "NeurekaConv"]
    assert len(npu) == 12
    for k in npu:
        node = result.layers[k].node
        assert node.params.wmem and config_word(node.params, True) & WMEM_BIT
        assert result.plan.placements[node.inputs[1]] == result.plan.placements[node.inputs[1]].__class__(
            BufferKind.WEIGHT, node.inputs[1], "WMEM")
        slots = {s.operand.tensor: s for s in result.tiled.schedules[k].slots}
        assert slots[node.inputs[1]].copies == 0 and slots[node.inputs[1]].l1_offsets == ()
        assert slots[node.inputs[0]].copies >= 1
    code = (tmp_path / "out" / "Network.c").read_text()
    blob = result.layers[npu[0]].node.inputs[1]
    assert re.search(rf"c_{re.escape(blob).replace('.', '_')}\[\d+\] DEEPLOY_WMEM_CONST", code.replace("\\_", "_"))
    wmem = [b for b in result.manifest.buffers if b.level == "WMEM"]
    assert {b.name for b in wmem} == {result.layers[k].node.inputs[1] for k in npu}
    assert all(b.kind == "weight" for b in wmem)
    assert not any(b.level == "L1" and b.name.endswith("npu_weights tile (slot 1/1)") for b in result.manifest.buffers)
    from Deeploy.codegen.memory_plot import write_manifest_plot
    html = write_manifest_plot(tmp_path / "plot.html", "wmem", result.manifest).read_text()
    panel = html[html.index('<section class="level" data-level="WMEM">'):]
    assert f"{blob}" in panel[:panel.index("</section>")] and "weight" in panel[:panel.index("</section>")]


def test_untiled_placement_sets_the_bit(tmp_path):
    result = _compile(tmp_path)
    nodes = [layer.node for layer in result.layers if layer.node.op == "NeurekaConv"]
    assert nodes and all(n.params.wmem for n in nodes)
    assert all(result.plan.placements[n.inputs[1]].level == "WMEM" for n in nodes)
    without = compile_graph(_graph(), "Siracusa_w_neureka", tmp_path / "plain")
    assert not any(layer.node.params.wmem for layer in without.layers if layer.node.op == "NeurekaConv")
    assert not any(p.kind == BufferKind.WEIGHT for p in without.plan.placements.values())


# ---- flags ----------------------------------------------------------------------------------
def test_runner_flag():
    p = argparse.ArgumentParser()
    add_neureka_flags(p)
    assert neureka_options(p.parse_args(["--neureka-wmem"])) == {"platform_options": {"neureka_wmem": True}}
    assert neureka_options(p.parse_args(["--neureka-wmem", "--wmem-size", "1024"])) == {
        "platform_options": {"neureka_wmem": True, "wmem_size": 1024}}
    assert neureka_options(p.parse_args([])) == {}


def test_deeploy_compile_neureka_wmem(tmp_path):
    model = MOBILENET / "network.onnx"
    cmd = [sys.executable, "-m", "Deeploy.cli", "compile", str(model), "-o"]
    ok = subprocess.run(cmd + [str(tmp_path / "a"), "--platform", "Siracusa_w_neureka", "--neureka-wmem",
                               "--l1", "16000", "--defaultMemLevel", "L3"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert re.search(r"note: weight memory: 12 of 12 NPU weight blobs placed", ok.stdout), ok.stdout
    assert "DEEPLOY_WMEM_CONST" in (tmp_path / "a" / "Network.c").read_text()
    bad = subprocess.run(cmd + [str(tmp_path / "b"), "--platform", "Siracusa", "--neureka-wmem"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "platform Siracusa takes no --neureka-wmem" in bad.stdout + bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "b").exists()


def test_weight_memory_larger_than_its_window_is_refused(tmp_path):
    model = MOBILENET / "network.onnx"
    run = subprocess.run([sys.executable, "-m", "Deeploy.cli", "compile", str(model), "-o", str(tmp_path / "a"),
                          "--platform", "Siracusa_w_neureka", "--neureka-wmem", "--wmem-size", str(1 << 30)],
                         capture_output=True, text=True)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    assert "weight memory size 1073741824 B is more than its 8388608 B address window" in run.stdout + run.stderr
    assert not (tmp_path / "a").exists()


# ---- under QEMU -----------------------------------------------------------------------------
TILED = RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA_TILED")
UNTILED = RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA")


def _run(test_dir: Path, capsys, tiling: TilingOptions | None, tag: str, wmem: bool = True,
         profile: bool = False, skipgen: bool = False, ok: bool = True, **options) -> tuple[Path, str]:
    root = "TEST_SIRACUSA_W_NEUREKA" + ("_TILED" if tiling else "")
    gen = DEEPLOY_TEST / root / "wmem" / tag / test_dir.name
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=skipgen, skipsim=False, gen_dir=str(gen),
                              cores=8, timeout=None, profileUntiled=False, profileTiling="tiles" if profile else None,
                              plotMemAlloc=False)
    options = {"cores": 8, "platform_options": {"neureka_wmem": wmem, **options}}
    if tiling:
        vars(args).update(l1=tiling.l1, l2=tiling.l2, defaultMemLevel=tiling.default_level or "L2",
                          doublebuffer=tiling.double_buffer)
        options["tiling"] = tiling
    code = run_test(args, TILED if tiling else UNTILED, options)
    out = capsys.readouterr().out
    if not ok:
        return gen, out
    assert code == 0, out
    assert "Errors: 0 out of" in out, out
    return gen, out


def _npu_input_dma_per_tile(gen: Path) -> float:
    """Mean modelled DMA cycles (issue + wait) of the input phase of the NPU layers' L1 tiles."""
    import json
    profile = json.loads((gen / "profile.json").read_text())
    tiles = [t for layer in profile["layers"] if layer["op"] == "NeurekaConv"
             for t in layer.get("tiles", []) if t["level"] == "L1"]
    return sum(t["load_dma_issue"] + t["load_dma_wait"] for t in tiles) / len(tiles)


@needs_qemu
@pytest.mark.parametrize("tiling", [None, TilingOptions(l1=2000, default_level="L3"),
                                    TilingOptions(l1=2000, default_level="L3", double_buffer=True)],
                         ids=["untiled", "l1_2000_L3_sb", "l1_2000_L3_db"])
def test_mobilenet_with_weight_memory(tiling, capsys):
    tag = "untiled" if tiling is None else f"l1_2000_L3_{int(tiling.double_buffer)}"
    gen, out = _run(MOBILENET, capsys, tiling, tag)
    result = model_cycles(read_records(gen / "build" / "records.txt"))
    assert result.npu and all(job.cycles > 0 for job in result.npu)


@needs_qemu
@pytest.mark.parametrize("db", [False, True], ids=["sb", "db"])
def test_mobilenet_with_some_weights_in_the_weight_memory(db, capsys):
    """A 4 KiB weight memory holds some blobs; the others are DMA'd per tile as before: bit-exact."""
    tiling = TilingOptions(l1=2000, default_level="L3", double_buffer=db)
    gen, out = _run(MOBILENET, capsys, tiling, f"small_wmem_{int(db)}", profile=True, wmem_size=4096)
    assert re.search(r"weight memory: ([1-9]|1[01]) of 12 NPU weight blobs placed", out), out
    # --profileTiling names each tiled layer's engine on its kernel lines
    assert re.search(r"^\[block1\.dw L1\]\[(SB|DB)\]\[\d+ ops\]\[Tile 0\] kernel \d+ cycles on neureka$", out, re.M), out
    assert re.search(r"^\[stem L1\]\[(SB|DB)\]\[\d+ ops\]\[Tile 0\] kernel \d+ cycles on cluster$", out, re.M), out


@needs_qemu
def test_a_job_whose_weights_are_not_where_its_bit_says_stops(capsys):
    """The functional model checks the job's weight source: weights moved out of the weight
    memory's section while the jobs keep the weight-memory bit stop the program (exit 3)."""
    gen, _ = _run(MOBILENET, capsys, None, "misplaced")
    code = gen / "network" / "Network.c"
    code.write_text(code.read_text().replace("DEEPLOY_WMEM_CONST", "DEEPLOY_L2_CONST"))
    _, out = _run(MOBILENET, capsys, None, "misplaced", skipgen=True, ok=False)
    assert re.search(r"NPU job: weights at 0x8[0-9a-f]+ outside the weight memory, but the job's weight-memory "
                     r"bit is set", out), out
    assert "Errors: 0 out of" not in out


@needs_qemu
def test_mobilenet_that_tiles_only_with_the_weight_memory(capsys):
    tiling = TilingOptions(l1=1200, default_level="L3", double_buffer=True)
    _, out = _run(MOBILENET, capsys, tiling, "l1_1200_L3_1", wmem_size=1024)
    assert "weight memory: 2 of 12 NPU weight blobs placed (1024 of 1024 B)" in out, out


# The peer's NPU kernel matrix (specs/neureka.md) at its L1 sizes, with the weight memory.
NPU_KERNELS = [("Conv/PW_2D", 32000), ("Conv/PW_2D_RQ/Regular_RQ", 32000), ("Conv/PW_2D_RQ/Unsigned_RQ", 32000),
               ("Conv/DW_3x3", 32000), ("Conv/DW_2D_RQ", 32000),
               ("Conv/DW_3x3_RQ", 32000), ("Conv/Regular_3x3", 32000), ("Conv/Regular_3x3_RQ", 32000),
               ("GEMM/Regular_RQPerColumn", 16000), ("GEMM/Batch_RQ", 16000)]


@needs_qemu
@pytest.mark.parametrize("db", [False, True], ids=["sb", "db"])
@pytest.mark.parametrize("kernel,l1", NPU_KERNELS, ids=[k for k, _ in NPU_KERNELS])
def test_corpus_npu_kernels_with_weight_memory(kernel, l1, db, corpus, capsys):
    test_dir = corpus / "Kernels" / "Integer" / kernel
    if not (test_dir / "network.onnx").is_file():
        pytest.skip(f"{kernel} is not in this corpus")
    _run(test_dir, capsys, TilingOptions(l1=l1, double_buffer=db), f"l1_{l1}_{int(db)}")


@needs_qemu
@pytest.mark.slow
def test_weight_memory_cuts_npu_input_dma_per_tile(capsys):
    """microLlama64_parallel at --l1 64000, data in L2: the NPU layers' input DMA per tile (the
    profile's load phase: DMA issue + wait) drops at least 10x with the weight memory; bit-exact."""
    model = DEEPLOY_TEST / "Tests" / "Models" / "microLlama" / "microLlama64_parallel"
    tiling = TilingOptions(l1=64000, default_level="L2")
    with_dma, _ = _run(model, capsys, tiling, "dma_l1_64000", wmem=False, profile=True)
    in_place, _ = _run(model, capsys, tiling, "wmem_l1_64000", profile=True)
    assert _npu_input_dma_per_tile(with_dma) >= 10 * _npu_input_dma_per_tile(in_place)
