"""MemPool on the QEMU virtual platform: the peer's MemPool CI kernels that are in the corpus,
bit-exact on the 16 cores the peer runs (a few in the default suite, all with -m slow); one network
on 256 cores with the hierarchical L1 in the timing plugin's records and in the cycle model; a
compiled output folder that builds and runs on its own."""

from __future__ import annotations

import argparse
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from Deeploy.cli import main as deeploy
from Deeploy.tiling.flags import tiling_options
from Deeploy.targets.mempool.timing import MEMPOOL_TIMING
from Deeploy.targets.siracusa.timing import model_cycles, read_records
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, INT8_NETWORKS

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")

MEMPOOL = RunnerPlatform("MemPool", "TEST_MEMPOOL")
# the peer's MemPool CI kernels (test_mempool_config.py, num_threads=16); its models (CCT) are not
# in the corpus
CI_KERNELS = ["Add/MultIO", "Add/Regular", "Conv/DW_1D", "Conv/Regular_1D", "Conv/DW_2D", "Conv/Regular_2D",
              "GEMM/Regular", "MatMul/Add", "MatMul/Regular", "MaxPool/Regular_2D", "Pad/Regular_1D",
              "Pad/Regular_2D", "ReduceMean", "ReduceSum", "Slice", "Conv/Regular_2D_RQ", "Conv/DW_2D_RQ",
              "GEMM/Regular_RQPerRow", "MatMul/Regular_RQ"]
DEFAULT = {"Add/Regular", "GEMM/Regular", "Conv/DW_2D_RQ", "MatMul/Regular_RQ"}
IN_CORPUS = [pytest.param(k, marks=() if k in DEFAULT else pytest.mark.slow, id=k)
             for k in CI_KERNELS if (CORPUS / "Kernels/Integer" / k).is_dir()]


def _run(test: str, cores: int, capsys) -> tuple[int, Path]:
    """(modelled cycles, records file) of a bit-exact run of corpus test ``test`` on ``cores``."""
    gen = DEEPLOY_TEST / "TEST_MEMPOOL" / f"cores{cores}" / test
    args = argparse.Namespace(test=str(CORPUS / test), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(gen), cores=cores, profileUntiled=False, timeout=None)
    code = run_test(args, MEMPOOL, {"cores": cores})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    cycles = re.search(r"^Runtime: (\d+) cycles$", out, re.M)
    assert cycles, out
    return int(cycles.group(1)), gen / "build" / "records.txt"


@pytest.mark.parametrize("kernel", IN_CORPUS)
def test_peer_ci_kernel_16_cores(kernel, capsys):
    """Bit-exact on 16 cores (GEMM and MatMul take the C blocks: RV32IMA has no FPU)."""
    cycles, records = _run(f"Kernels/Integer/{kernel}", 16, capsys)
    recs = read_records(records)
    assert set(recs.by_hart) == set(range(16)) and cycles > 0


@pytest.mark.slow
@pytest.mark.parametrize("cores", [16, 256])
@pytest.mark.parametrize("network", INT8_NETWORKS)
def test_corpus_int8_network(network, cores, capsys):
    assert _run(network, cores, capsys)[0] > 0


def test_256_cores_hierarchical_l1(capsys):
    """A MatMul on all 256 cores: faster than on 16; cores outside tile 0 load from other tiles and
    groups (interleaved L1), every fork phase reports its busiest bank, and the model charges them."""
    test = "Kernels/Integer/MatMul/Regular"
    c16, _ = _run(test, 16, capsys)
    c256, records = _run(test, 256, capsys)
    assert c256 < c16 / 4, (c16, c256)
    recs = read_records(records)
    assert set(recs.by_hart) == set(range(256))
    group, remote = recs.column("l1_group_ld"), recs.column("l1_remote_ld")
    assert group is not None and remote is not None
    # 16 tiles of 4 cores per group: a core of group 3 loads from group 0..2's banks too
    assert recs.final(255).counters[remote] > 0 and recs.final(255).counters[group] > 0
    assert recs.phases and all(0 < most <= total for most, total in recs.phases.values())
    full = model_cycles(recs, MEMPOOL_TIMING).total
    local = model_cycles(recs, replace(MEMPOOL_TIMING, group_cycles=0.0, remote_cycles=0.0)).total
    flat = model_cycles(recs, replace(MEMPOOL_TIMING, contention=False)).total
    assert full > local and full >= flat, (full, local, flat)


def test_tiled_tiles_come_through_the_dma(capsys):
    """--l1: the layers work on L1 tiles of data in L2 that core 0 moves with MemPool's DMA, bit-exact;
    the frontend has 1-D transfers only (a command per row), each costing the core 5 register
    accesses of 5 cycles and the engine an L2 access (10 cycles) plus one 64-byte beat per cycle
    (mempool.md: the frontend's registers, Banshee's peripheral and L2 latencies, the 512-bit AXI)."""
    test = "Kernels/Integer/MatMul/Regular"
    gen = DEEPLOY_TEST / "TEST_MEMPOOL" / "tiled_l1_2000" / test
    args = argparse.Namespace(test=str(CORPUS / test), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(gen), cores=16, profileUntiled=False, profileTiling=None, timeout=None)
    tiling = tiling_options(argparse.Namespace(l1=2000, l2=None, defaultMemLevel="L2", doublebuffer=False))
    assert run_test(args, MEMPOOL, {"cores": 16, "tiling": tiling}) == 0
    assert "Errors: 0 out of" in capsys.readouterr().out
    recs = read_records(gen / "build" / "records.txt")
    assert recs.dma and {h for h, _seq in recs.dma} == {0}
    assert all(d.commands == d.rows for d in recs.dma.values())
    res = model_cycles(recs, MEMPOOL_TIMING)
    assert {(d.src, d.dst) for d in res.dma} == {("L2", "L1"), ("L1", "L2")}   # the levels, by address
    for d in res.dma:
        row = d.bytes // d.rows
        assert d.issue_cycles == d.rows * 5 * 5
        assert d.end - d.start == d.rows * (-(-row // 64) + 10)


def test_standalone_output(tmp_path, capsys):
    """deeploy compile --platform MemPool writes a folder that builds alone (its CMake file with the
    shared part it includes, the runtime, link.ld) and deeploy run runs it on the cores compiled for."""
    out = tmp_path / "out"
    assert deeploy(["compile", str(CORPUS / "Kernels/Integer/Add/Regular/network.onnx"), "--platform", "MemPool",
                    "--cores", "32", "-o", str(out), "--emit-testbench"]) == 0
    assert {p.name for p in (out / "cmake").iterdir()} >= {"MemPool.cmake", "VirtCluster.cmake"}
    capsys.readouterr()
    assert deeploy(["run", str(out)]) == 0
    assert "Errors: 0 out of" in capsys.readouterr().out

