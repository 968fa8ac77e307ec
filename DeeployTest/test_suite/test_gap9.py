"""GAP9 on the QEMU virtual platform: the peer's GAP9 CI lists that are in the corpus (untiled; tiled
with L2 home, single and double buffered, at its L1 sizes; its L3-home models), bit-exact (float
within the harness's tolerance) on the 8 worker cores with the cluster controller's hart present; a
few of each in the default suite, all with -m slow. The runner script, ``deeploy compile --platform
GAP9`` + ``deeploy run``, and microLlama64_parallel and miniMobileNetv2 tiled at --l1 64000."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys

import pytest

from Deeploy.cli import main as deeploy
from Deeploy.targets import get_platform
from Deeploy.targets.gap9.runner import core_count
from Deeploy.targets.siracusa.timing import read_records
from Deeploy.tiling.flags import tiling_options
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, INT8_NETWORKS

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")

GAP9 = RunnerPlatform("GAP9", "TEST_GAP9")
GAP9_TILED = RunnerPlatform("GAP9", "TEST_GAP9_TILED")

# The peer's lists (test_gap9_config.py, test_gap9_tiled_config.py); entries missing from the corpus
# (Others/Backtracking, miniMobileNet, the MLPerf models, CCT_2_32_32_128) are skipped by _params.
UNTILED = ["Integer/Add/Regular", "Integer/Add/MultIO", "Integer/Pad/Regular_1D", "Integer/Pad/Regular_2D",
           "Integer/MatMul/Regular", "Integer/MatMul/Add", "Integer/Conv/DW_2D_RQ", "Integer/Conv/Regular_2D_RQ",
           "Integer/Softmax/Regular", "Integer/Concat", "Integer/Hardswish/Regular", "Others/Backtracking",
           "FP32/Add/Regular", "FP32/GEMM/Regular", "FP32/Conv/Regular_2D_Bias", "FP32/Conv/Regular_2D_NoBias",
           "FP32/Conv/Regular_2D_ZeroValuedBias", "FP32/Conv/DW_2D_Bias", "FP32/Conv/DW_2D_NoBias",
           "FP32/Conv/DW_2D_ZeroValuedBias", "FP32/LayerNorm", "FP32/ReLU", "FP32/MaxPool/Regular_2D", "FP32/MatMul",
           "FP32/Softmax/Regular", "FP32/Transpose", "FP32/Mul/Regular", "Mixed/Dequant", "Mixed/Quant",
           "FP32/ReduceSum", "FP32/Reshape/SkipConnection"]
UNTILED_MODELS = ["miniMobileNet", "miniMobileNetv2", "MLPerf/KeywordSpotting", "MLPerf/ImageClassification",
                  "MLPerf/AnomalyDetection"]
_SB = {"Integer/MatMul/Regular": (64000, 32000, 16000), "Integer/Conv/Regular_2D_RQ": (8000, 6000, 4000),
       "Integer/Conv/StriddedPadded_2D_RQ": (600,), "Integer/Conv/DW_2D_RQ": (2561,),
       "Integer/Softmax/Regular": (800, 500, 300), "Integer/Concat": (32000, 16000, 8000),
       "Integer/Hardswish/Regular": (750,), "FP32/GEMM/Regular": (8000,), "FP32/Conv/Regular_2D_NoBias": (6600,),
       "FP32/Conv/Regular_2D_ZeroValuedBias": (6600,), "FP32/Conv/DW_2D_Bias": (7200,),
       "FP32/Conv/DW_2D_NoBias": (7200,), "FP32/Conv/DW_2D_ZeroValuedBias": (7200,), "FP32/LayerNorm": (2000,),
       "FP32/MaxPool/Regular_2D": (2000,), "FP32/MatMul": (2000,), "FP32/ReLU": (2000,),
       "FP32/Reshape/SkipConnection": (1400,), "FP32/Softmax/Regular": (4000,), "FP32/Transpose": (2000,),
       "FP32/Mul/Regular": (2000,), "Integer/GEMM/Batch_RQ": (20000,), "Integer/MatMul/Batch": (20000,)}
_DB = {"Integer/MatMul/Regular": (64000, 32000, 16000), "Integer/Conv/Regular_2D_RQ": (8000, 6000, 5000),
       "Integer/Conv/DW_2D_RQ": (5121,), "Integer/Softmax/Regular": (1600, 1000, 600),
       "Integer/Concat": (64000, 32000, 16000), "Integer/Hardswish/Regular": (750,), "FP32/GEMM/Regular": (8000,),
       "FP32/Conv/Regular_2D_NoBias": (8800,), "FP32/Conv/Regular_2D_ZeroValuedBias": (8800,),
       "FP32/Conv/DW_2D_Bias": (9800,), "FP32/Conv/DW_2D_NoBias": (10000,),
       "FP32/Conv/DW_2D_ZeroValuedBias": (9800,), "FP32/LayerNorm": (2000,), "FP32/MaxPool/Regular_2D": (5000,),
       "FP32/MatMul": (5000,), "FP32/ReLU": (20,), "FP32/Reshape/SkipConnection": (2600,),
       "FP32/Softmax/Regular": (8000,), "FP32/Transpose": (2000,), "FP32/Mul/Regular": (2000,)}
_MLPERF = {f"MLPerf/{m}": (64000,) for m in ("KeywordSpotting", "ImageClassification", "AnomalyDetection")}
_MODELS_L2 = {False: {"miniMobileNet": (60000, 12000, 6000, 3000), "miniMobileNetv2": (60000, 16000, 12000, 8000),
                      **_MLPERF},
              True: {"miniMobileNet": (60000, 24000, 12000, 6000), "miniMobileNetv2": (60000, 32000, 24000, 16000),
                     **_MLPERF}}
_MODELS_L3 = {False: {"miniMobileNet": (60000, 12000, 6000), "miniMobileNetv2": (60000, 16000, 12000, 8000),
                      "CCT/FP32/CCT_2_32_32_128": (128000,)},
              True: {"miniMobileNet": (60000, 24000, 12000, 6000), "miniMobileNetv2": (60000, 32000, 24000, 16000)}}


def _cases(table: dict, folder: str, db: bool, home: str = "L2") -> list[tuple]:
    return [(f"{folder}/{k}", l1, db, home) for k, sizes in table.items() for l1 in sizes]


TILED = _cases(_SB, "Kernels", False) + _cases(_DB, "Kernels", True) + \
    [c for db in (False, True) for c in _cases(_MODELS_L2[db], "Models", db)] + \
    [c for db in (False, True) for c in _cases(_MODELS_L3[db], "Models", db, "L3")]
DEFAULT_UNTILED = {"Kernels/Integer/Conv/Regular_2D_RQ", "Kernels/FP32/Softmax/Regular", "Models/miniMobileNetv2"}
DEFAULT_TILED = {("Kernels/Integer/MatMul/Regular", 16000, True, "L2"), ("Kernels/Integer/Conv/Regular_2D_RQ", 4000, False, "L2"),
                 ("Kernels/FP32/LayerNorm", 2000, True, "L2"), ("Models/miniMobileNetv2", 8000, False, "L3")}


def _params(cases, default):
    return [pytest.param(c, marks=() if c in default else pytest.mark.slow, id=str(c))
            for c in cases if (CORPUS / (c[0] if isinstance(c, tuple) else c)).is_dir()]


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


def _tiled(l1: int, db: bool = False, home: str = "L2") -> dict:
    return {"cores": 8, "tiling": tiling_options(argparse.Namespace(l1=l1, l2=None, defaultMemLevel=home,
                                                                    doublebuffer=db))}


def test_memory_map_and_cores():
    """GAP9's levels (specs/gap9.md §2: TCDM 128 KiB, L2 0x190000 B, the peer's 64 MB L3 model), its
    8 worker cores, and the cluster controller's stack in the linker script and hart in QEMU's run."""
    gap9 = get_platform("GAP9")
    assert [(m.name, m.size) for m in gap9.memory] == [("L1", 131072), ("L2", 1638400), ("L3", 64_000_000)]
    assert gap9.max_cores == 8 and gap9.cmake_platform == "GAP9"
    assert "__deeploy_max_harts = 9;" in gap9.linker_script(gap9.memory)
    command = gap9.run_command(gap9.memory, "deeploy_test", "${NUM_CORES}")
    assert command[command.index("-smp") + 1] == "9"


@pytest.mark.parametrize("test", _params([f"Kernels/{k}" for k in UNTILED] +
                                         [f"Models/{m}" for m in UNTILED_MODELS], DEFAULT_UNTILED))
def test_peer_ci_untiled(test, capsys):
    gen = DEEPLOY_TEST / "TEST_GAP9" / test
    assert _run(CORPUS / test, gen, GAP9, {"cores": 8}, capsys) > 0
    recs = read_records(gen / "build" / "records.txt")
    # QEMU runs the cluster controller too (a ninth hart, parked)
    assert set(recs.by_hart) == set(range(9)) and recs.phases


@pytest.mark.parametrize("case", _params(TILED, DEFAULT_TILED))
def test_peer_ci_tiled(case, capsys):
    test, l1, db, home = case
    gen = DEEPLOY_TEST / "TEST_GAP9_TILED" / f"{home}_l1_{l1}{'_db' if db else ''}" / test
    assert _run(CORPUS / test, gen, GAP9_TILED, _tiled(l1, db, home), capsys) > 0
    assert read_records(gen / "build" / "records.txt").dma    # the tiles came by DMA


@pytest.mark.parametrize("model", [pytest.param("Models/miniMobileNetv2"),
                                   pytest.param("Models/microLlama/microLlama64_parallel", marks=pytest.mark.slow)])
def test_models_tiled_l1_64000(model, capsys):
    gen = DEEPLOY_TEST / "TEST_GAP9_TILED" / "l1_64000" / model
    assert _run(DEEPLOY_TEST / "Tests" / model, gen, GAP9_TILED, _tiled(64000), capsys) > 0



@pytest.mark.slow
@pytest.mark.parametrize("home", [None, "L2", "L3"], ids=["untiled", "L2", "L3"])
@pytest.mark.parametrize("network", INT8_NETWORKS)
def test_corpus_int8_network(network, home, capsys):
    """Every int8 network of the corpus, untiled and tiled at --l1 64000 with its data in L2 and in L3."""
    if home is None:
        assert _run(CORPUS / network, DEEPLOY_TEST / "TEST_GAP9" / "int8" / network, GAP9, {"cores": 8}, capsys) > 0
    else:
        gen = DEEPLOY_TEST / "TEST_GAP9_TILED" / f"int8_{home}_l1_64000" / network
        assert _run(CORPUS / network, gen, GAP9_TILED, _tiled(64000, home=home), capsys) > 0


def test_cli_compile_and_run(tmp_path, capsys):
    """``deeploy compile --platform GAP9`` (tiled, standalone output with its testbench) and ``deeploy run``."""
    out = tmp_path / "gap9"
    model = DEEPLOY_TEST / "Tests/IntKernels/Add/Regular/network.onnx"
    assert deeploy(["compile", str(model), "--platform", "gap9", "-o", str(out), "--l1", "8000",
                    "--emit-testbench"]) == 0
    assert (out / "cmake" / "GAP9.cmake").is_file() and (out / "runtime" / "deeploy_xpulp_emu.c").is_file()
    assert "__deeploy_max_harts = 9;" in (out / "link.ld").read_text()
    capsys.readouterr()
    assert deeploy(["run", str(out)]) == 0
    assert re.search(r"^Errors: 0 out of \d+$", capsys.readouterr().out, re.M)


def test_peer_core_counts():
    """--cores: 1..8 worker cores; 9, the count with the cluster controller, is 8."""
    assert [core_count(t) for t in ("1", "8", "9")] == [1, 8, 8]
    with pytest.raises(argparse.ArgumentTypeError, match="outside 1..8"):
        core_count("10")


@pytest.mark.parametrize("runner, flags", [
    ("testRunner_gap9.py", ("--cores", "--plotMemAlloc", "--profileUntiled")),
    ("testRunner_tiled_gap9.py", ("--cores", "--l1", "--l2", "--defaultMemLevel", "--doublebuffer", "--profileTiling",
                                  "--plotMemAlloc"))])
def test_runner_flags(runner, flags):
    """The runners take the peer's GAP9 flags."""
    proc = subprocess.run([sys.executable, runner, "--help"], cwd=DEEPLOY_TEST, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert [f for f in flags if f not in proc.stdout] == []
