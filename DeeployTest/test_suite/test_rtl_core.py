"""The CV32E40P reference core (toolchain/rtl, built by toolchain/install.sh) against the cycle
model: a few calibration programs of benchmarks/fidelity/programs/ run on the RTL simulator and on
the QEMU cluster with one core; each checks its own result against a C reference on both, and the
model's cycles of the measured region must be within 2% of the RTL's. The classes they exercise:
a taken branch to a misaligned 32-bit instruction (branch_misaligned), the far call's jump
register hazard (call_ret), fsqrt.s (fpu_fsqrt), a requantised int8 GEMM (gemm_i8_rq), and in the PULP
DSP form (programs/dsp/) the 4x2 int8 GEMM block of dot products in a hardware loop (gemm_4x2_i8), the
requantised GEMM kernel itself on attention's Q K^T with heads of 4 (gemm_rq_k4_i8: one core, one
tile, its outputs checked on the RTL too), the byte-lane table lookup of the element-wise kernels
and iSoftmax (lookup_lanes_i8) and the bit-manipulation mix (bitmanip_mix, whose cv.cnt/ff1/fl1/clb
run through the emulator on QEMU).
The whole suite (N >= 30 programs, every one within 2%) runs with ``-m rtl_full``."""

from __future__ import annotations

import importlib.util

import pytest

from Deeploy.errors import BuildError
from Deeploy.targets.pulp.rtl import rtl_simulator
from DeeployTest.test_suite.conftest import REPO

# the module fixture builds once: the tests stay on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("rtl_core")

FAST = ("branch_misaligned", "call_ret", "fpu_fsqrt", "gemm_i8_rq", "gemm_4x2_i8", "gemm_rq_k4_i8", "lookup_lanes_i8",
        "bitmanip_mix")


@pytest.fixture(scope="module")
def fidelity():
    spec = importlib.util.spec_from_file_location("fidelity", REPO / "benchmarks" / "fidelity.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def fast(fidelity, tmp_path_factory):
    return {p.name: p for p in fidelity.calibrate(tmp_path_factory.mktemp("rtl"), list(FAST))}


@pytest.mark.parametrize("name", FAST)
def test_program_within_two_percent(fast, name):
    p = fast[name]
    assert abs(p.deviation) <= 2.0, f"{name}: RTL {p.rtl_cycles} cycles, model {p.model_cycles:.0f}"


def test_counters_of_the_region(fast):
    # branch_misaligned: 2000 loop trips of add; addi; bnez, a few set-up instructions, one call
    # and one return around them
    c = fast["branch_misaligned"].counters
    assert (c["branch"], c["branch_taken"], c["jump"]) == (2000, 1999, 2)
    assert 6000 < c["instret"] < 6010
    # the far call `auipc ra; jalr ra` stalls on its address register (event JMP_STALL)
    assert fast["call_ret"].counters["jmp_stall"] >= 1000


def test_missing_simulator_is_named():
    with pytest.raises(BuildError, match=r"toolchain/install.sh.*build.sh 7 7"):
        rtl_simulator(7, 7)


@pytest.mark.rtl_full
def test_full_calibration(fidelity, tmp_path):
    names, _skipped = fidelity.program_names()
    rows = fidelity.calibrate(tmp_path, names)
    assert len(rows) >= 59   # 46 plain programs, 17 in the DSP form
    worst = max(rows, key=lambda p: abs(p.deviation))
    assert abs(worst.deviation) <= fidelity.GOAL, f"{worst.name}: {worst.deviation:+.2f}%"
