"""Snitch on the QEMU virtual platform: the peer's Snitch CI lists that are in the corpus (untiled,
and tiled with its L1 sizes), bit-exact (float within the harness's tolerance) on the 8 compute
cores with the data-mover hart present; a few of each in the default suite, all with -m slow. The
project's float decoder layer (Models/Float/Llama) tiled at the peer's float-Llama L1 sizes."""

from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import replace

import pytest

from Deeploy.tiling.flags import tiling_options
from Deeploy.tiling.network import TilingOptions
from Deeploy.runtime.abi import TASK_BEGIN
from Deeploy.targets.siracusa.profile import layer_cycles
from Deeploy.targets.siracusa.timing import model_cycles, read_records
from Deeploy.targets.snitch.timing import SNITCH_TIMING
from Deeploy.targets.snitch.runner import core_count
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")

SNITCH = RunnerPlatform("Snitch", "TEST_SNITCH")
SNITCH_TILED = RunnerPlatform("Snitch", "TEST_SNITCH_TILED")
# the peer's lists (test_snitch_config.py, test_snitch_tiled_config.py); its microLlama1 (FP32) is
# not in the corpus
UNTILED = ["FP32/Add/Regular", "FP32/Add/Scalar", "FP32/Div/Regular", "FP32/Div/Scalar", "FP32/Hardswish", "FP32/MatMul",
           "FP32/Mul/Regular", "FP32/Mul/Scalar", "FP32/RMSNorm/single_fused_op", "FP32/Softmax/Regular",
           "Integer/Add/Large", "Integer/Add/Regular", "Integer/Softmax/Large", "Integer/Softmax/Regular",
           "Integer/MatMul/Regular", "Integer/iNoNorm", "Integer/GEMM/Regular_RQPerRow", "Integer/Add/Regular_RQ",
           "Integer/GEMM/TransB_RQ"]
TILED = [(k, l1) for k in ("FP32/Add/Scalar", "FP32/Div/Regular", "FP32/Div/Scalar", "FP32/Hardswish", "FP32/Mul/Regular",
                           "FP32/Mul/Scalar", "FP32/RMSNorm/single_fused_op", "FP32/Softmax/Regular",
                           "FP32/GEMM/Regular", "FP32/GEMM/TransB") for l1 in (2000, 5000, 10000)] + \
        [(k, l1) for k in ("Integer/Add/Large", "Integer/Softmax/Large", "Integer/iNoNorm", "Integer/Add/Regular_RQ")
         for l1 in (5000, 10000)] + [("Integer/GEMM/Regular_RQPerRow", l1) for l1 in (2000, 5000)]
DEFAULT_UNTILED = {"FP32/Softmax/Regular", "Integer/Add/Regular", "Integer/GEMM/Regular_RQPerRow", "Integer/GEMM/TransB_RQ"}
DEFAULT_TILED = {("FP32/GEMM/TransB", 2000), ("Integer/Softmax/Large", 5000), ("FP32/RMSNorm/single_fused_op", 2000)}


def _params(cases, default):
    return [pytest.param(c, marks=() if c in default else pytest.mark.slow, id=str(c))
            for c in cases if (CORPUS / "Kernels" / (c[0] if isinstance(c, tuple) else c)).is_dir()]


def _run(test_dir, gen, rp, options: dict, capsys) -> int:
    """Modelled cycles of a run that passed (bit-exact, or floats within the tolerance)."""
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, profileUntiled=False, profileTiling=None, timeout=None)
    code = run_test(args, rp, options)
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    cycles = re.search(r"^Runtime: (\d+) cycles$", out, re.M)
    assert cycles, out
    return int(cycles.group(1))


def _tiled(l1: int, double_buffer: bool = False) -> dict:
    return {"cores": 8, "tiling": tiling_options(argparse.Namespace(l1=l1, l2=None, defaultMemLevel="L2",
                                                                    doublebuffer=double_buffer))}


@pytest.mark.parametrize("kernel", _params(UNTILED, DEFAULT_UNTILED))
def test_peer_ci_untiled(kernel, capsys):
    gen = DEEPLOY_TEST / "TEST_SNITCH" / kernel
    assert _run(CORPUS / "Kernels" / kernel, gen, SNITCH, {"cores": 8}, capsys) > 0
    recs = read_records(gen / "build" / "records.txt")
    # QEMU runs the data-mover core too (a ninth hart, idle untiled); each fork phase reports its
    # busiest TCDM bank (the plugin's l1map)
    assert set(recs.by_hart) == set(range(9)) and recs.phases


@pytest.mark.parametrize("case", _params(TILED, DEFAULT_TILED))
def test_peer_ci_tiled(case, capsys):
    kernel, l1 = case
    gen = DEEPLOY_TEST / "TEST_SNITCH_TILED" / f"l1_{l1}" / kernel
    assert _run(CORPUS / "Kernels" / kernel, gen, SNITCH_TILED, _tiled(l1), capsys) > 0
    assert read_records(gen / "build" / "records.txt").dma    # the tiles came by DMA


def test_data_mover_streams_tiles(capsys, monkeypatch):
    """Tiled and double-buffered: the data-mover core (hart 8) runs the tile loop and alone programs
    the DMA; the 8 compute cores (harts 0..7) run every tile's kernel, which the data mover forks
    without taking part, prefetching the next tile meanwhile. (With Snitch's 64 B/cycle DMA the
    tiler finds single buffering faster on the corpus' layers: double buffering is forced here.)"""
    monkeypatch.setattr(TilingOptions, "l1_params", lambda self, platform, cores: replace(
        platform.tiles, capacity=self.l1, cores=cores, buffering="double"))
    kernel = "FP32/GEMM/TransB"
    gen = DEEPLOY_TEST / "TEST_SNITCH_TILED" / "l1_2000_db" / kernel
    assert _run(CORPUS / "Kernels" / kernel, gen, SNITCH_TILED, _tiled(2000, double_buffer=True), capsys) > 0
    assert "double-buffered" in (gen / "network" / "Network.c").read_text()
    recs = read_records(gen / "build" / "records.txt")
    issuers = {(h, d.engine) for (h, _seq), d in recs.dma.items()}
    assert issuers == {(8, 0)} and {h for h, _seq in recs.waits} == {8}
    tasks = {h: sum(r.marker == TASK_BEGIN for r in rs) for h, rs in recs.by_hart.items()}
    assert tasks[8] == 0 and len({tasks[h] for h in range(8)}) == 1 and tasks[0] > 1
    res = model_cycles(recs, SNITCH_TIMING)
    assert res.forks and all(f.cores == 8 for f in res.forks)
    prefetched = [d for d in res.dma if any(f.start < d.issue < f.start + f.cycles for f in res.forks)]
    assert len(prefetched) >= len(res.forks) - 1       # the next tile's inputs, while the cores compute
    # the profile charges the data mover's programming outside the kernels as exposed DMA
    assert res.controls == (0, 8) and sum(c.dma_issue for c in layer_cycles(res)) > 0


@pytest.mark.parametrize("l1", [10000, 20000])
def test_float_llama_tiled(l1, capsys):
    """The project's float32 decoder layer at the L1 sizes the peer uses for its float Llama."""
    gen = DEEPLOY_TEST / "TEST_SNITCH_TILED" / f"l1_{l1}" / "Models/Float/Llama"
    assert _run(DEEPLOY_TEST / "Tests/Models/Float/Llama", gen, SNITCH_TILED, _tiled(l1), capsys) > 0


def test_peer_core_counts():
    """--cores/--num-cores: 1..8 compute cores; 9, the peer's CI count with the data mover, is 8."""
    assert [core_count(t) for t in ("1", "8", "9")] == [1, 8, 8]
    with pytest.raises(argparse.ArgumentTypeError, match="outside 1..8"):
        core_count("10")
