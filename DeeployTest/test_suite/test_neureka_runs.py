"""Siracusa_w_neureka under QEMU: networks with NPU layers run bit-exactly, untiled and tiled
(several L1 sizes, data in L2 and L3, single and double buffered); the NPU layers are bound to
the neureka engine in the snapshot, and the cycle model times each NPU job with the spec's
throughput model (NeurekaParams.job_cycles) on its own timeline."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.targets.siracusa_w_neureka.params import NEUREKA

from Deeploy.manifest import read_manifest
from Deeploy.runtime.abi import NPU_JOB_END, NPU_WAIT
from Deeploy.targets.siracusa.profile import layer_profile
from Deeploy.targets.siracusa.npu_timeline import npu_job_cycles
from Deeploy.targets.siracusa.timing import model_cycles, read_records
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")

UNTILED = RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA")
TILED = RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA_TILED")
MOBILENET = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
# corpus kernels with a layer the NPU takes: 1x1, 3x3 dense and depthwise (plain and requantized),
# GEMMs with per-column requantization, batched, and a MatMul with constant weights
NPU_KERNELS = ("Conv/PW_2D", "Conv/DW_3x3", "Conv/DW_3x3_RQ", "Conv/DW_2D_RQ", "Conv/Regular_3x3",
               "Conv/Regular_3x3_RQ", "GEMM/Batch_RQ", "GEMM/Regular_RQPerColumn", "MatMul/Add", "Attention")


def _engines(gen: Path) -> dict[str, str]:
    model = onnx.load(gen / "deeployStates" / "backend_post_binding.onnx")
    return {n.name: next(p.value for p in n.metadata_props if p.key == "deeploy.engine") for n in model.graph.node}


def _check(gen: Path, code: int, out: str) -> None:
    assert code == 0, out
    assert "Errors: 0 out of" in out, out
    assert int(re.search(r"^Runtime: (\d+) cycles$", out, re.M).group(1)) > 0, out
    assert "neureka" in _engines(gen).values()
    result = model_cycles(read_records(gen / "build" / "records.txt"))
    assert result.npu and all(job.cycles > 0 and job.start >= job.triggered for job in result.npu)
    for a, b in zip(result.npu, result.npu[1:]):          # one engine: jobs never overlap
        assert b.start >= a.start + a.cycles


def _untiled(test_dir: Path, capsys) -> None:
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_W_NEUREKA" / "suite" / test_dir.name
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, profileUntiled=False, timeout=None)
    code = run_test(args, UNTILED, {"cores": 8})
    _check(gen, code, capsys.readouterr().out)


def _tiled(test_dir: Path, l1: int, level: str, db: bool, capsys) -> None:
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_W_NEUREKA_TILED" / f"l1_{l1}_{level}_{int(db)}" / test_dir.name
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, l1=l1, l2=TilingOptions.l2, defaultMemLevel=level, doublebuffer=db,
                              profileTiling=None, plotMemAlloc=False, timeout=None)
    code = run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(l1, TilingOptions.l2, level, db)})
    _check(gen, code, capsys.readouterr().out)


def test_mobilenet_untiled(capsys):
    _untiled(MOBILENET, capsys)
    engines = _engines(DEEPLOY_TEST / "TEST_SIRACUSA_W_NEUREKA" / "suite" / MOBILENET.name)
    assert engines["block1.dw"] == engines["block0.expand"] == engines["classifier"] == "neureka"
    assert engines["stem"] == "cluster"                    # stride 2


def test_npu_job_cycles_follow_the_spec_model(tmp_path, capsys):
    """Every job the run timed costs what NeurekaParams.job_cycles (the spec's throughput model)
    gives for its layer's geometry and reports its multiply-accumulates, in execution order; the
    per-layer profile gives each NPU layer's busy cycles and utilisation."""
    _untiled(MOBILENET, capsys)
    graph = load_onnx(MOBILENET / "network.onnx")
    assign_input_types(graph, {graph.inputs[0]: next(iter(np.load(MOBILENET / "inputs.npz").values()))})
    layers = compile_graph(graph, "Siracusa_w_neureka", tmp_path / "out").layers
    expected = []
    for layer in layers:
        if layer.node.op == "NeurekaConv":
            p = layer.node.params
            out_bytes = 1 if p.normquant else 4
            macs = p.out_plane[0] * p.out_plane[1] * p.cout * p.taps * (1 if p.mode == "3x3dw" else p.cin)
            expected += [(NEUREKA.job_cycles(p.mode, *p.out_plane, p.cout, p.cin, out_bytes), macs)] * p.batch
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_W_NEUREKA" / "suite" / MOBILENET.name
    result = model_cycles(read_records(gen / "build" / "records.txt"))
    cycles = [(job.cycles, job.macs) for job in result.npu]   # the testbench may run the network more than once
    assert len(expected) == 12 and cycles and cycles == expected * (len(cycles) // len(expected))
    lines = layer_profile(result, read_manifest(gen / "network"))
    npu_lines = [line for line in lines if "NeurekaConv" in line]
    assert len(npu_lines) % 12 == 0 and npu_lines and all(re.search(r"; NPU busy \d+ cycles \(1 job\), utilisation \d+\.\d%$", line)
                                        for line in npu_lines), lines


@pytest.mark.parametrize("l1,level,db", [(16000, "L2", False), (2000, "L3", True)])
def test_mobilenet_tiled(l1, level, db, capsys):
    _tiled(MOBILENET, l1, level, db, capsys)


def _jobs_in_flight(gen: Path) -> int:
    """The most NPU jobs core 0 had triggered and not yet waited for, from its records."""
    records = read_records(gen / "build" / "records.txt")
    jobs = npu_job_cycles(records)
    flight = most = 0
    for r in records.by_hart[0]:
        if r.marker == NPU_JOB_END and (0, r.seq) in jobs:
            flight += 1
            most = max(most, flight)
        elif r.marker == NPU_WAIT:
            flight -= 1
            assert flight >= 0, "a wait without a job"
    assert flight == 0, "jobs never waited for"
    return most


@pytest.mark.parametrize("level,db", [("L2", True), ("L3", True), ("L2", False)])
def test_tiles_use_the_job_queue(level, db, corpus, capsys):
    """In the table loop (data staged from L3), double-buffered, a tile's job is programmed while
    the previous tile's runs (two jobs in flight, the queue's depth, never more) and its outputs
    are written back after the next tile's job is triggered; in straight-line code (few tiles in
    L2) and single-buffered, each job is waited for before the next (double-buffered, the next
    tile's inputs arrive meanwhile). Bit-exact either way (PW_2D at --l1 32000 has 5 tiles)."""
    test_dir = corpus / "Kernels" / "Integer" / "Conv" / "PW_2D"
    _tiled(test_dir, 32000, level, db, capsys)
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_W_NEUREKA_TILED" / f"l1_32000_{level}_{int(db)}" / test_dir.name
    loop, = [t["loop"] for t in json.loads((gen / "network" / "manifest.json").read_text())["tiles"]
             if t["engine"] == "neureka"]
    assert loop == ("tables" if level == "L3" else "code")
    assert _jobs_in_flight(gen) == (NEUREKA.queue_depth if db and loop == "tables" else 1)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", NPU_KERNELS)
@pytest.mark.parametrize("tiled", [False, True])
def test_corpus_npu_kernels(kernel, tiled, corpus, capsys):
    test_dir = corpus / "Kernels" / "Integer" / kernel
    if tiled:
        _tiled(test_dir, 5000, "L2", True, capsys)
    else:
        _untiled(test_dir, capsys)
