"""The cluster's standalone RequantShift on byte lanes (TargetLibraries/Siracusa/kernels/
requant_shift_lanes.inc: 8-bit inputs and outputs, scalar mul and add, the outputs looked up in
the table the cores fill): signed and unsigned inputs and outputs, element counts whose per-core
shares start and end inside a word (an unaligned head and a tail), clipping at both ends, inputs
at the 8-bit extremes. Siracusa binds the lanes kernel to these calls, and their outputs match
the reference interpreter's goldens bit-exactly on Generic, on Siracusa with 1 and 8 cores and
tiled."""

from __future__ import annotations

import argparse
import re

import numpy as np
import pytest

from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.kernel_cases import needs_qemu, run_generic, run_siracusa

TILED = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
L1 = 2000   # several tiles


def _rqs(shape, mul, add, shift, unsigned_in=False, signed_out=True):
    def build(rng):
        lo, hi = (0, 256) if unsigned_in else (-128, 128)
        v = rng.integers(lo, hi, size=shape)
        v.flat[0], v.flat[-1] = lo, hi - 1
        net = Net("RequantShift")
        net.output(net.rqs(net.input("input", v), mul, add, shift, signed=signed_out, name="rqs"))
        return net
    return build


CASES = [
    ("int8_555", _rqs((3, 5, 37), 300, -20, 8)),
    ("uint8_to_uint8_602", _rqs((2, 301), 77, 100, 7, unsigned_in=True, signed_out=False)),
    ("int8_clips_both_ends_1029", _rqs((1029,), 1500, 40, 8)),
    ("uint8_to_int8_4099", _rqs((4099,), -90, 300, 6, unsigned_in=True)),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case_dir(request, tmp_path):
    name, build = request.param
    folder = tmp_path / name
    write_test(build(np.random.default_rng(23)), folder)
    return folder


def test_generic(case_dir, capsys):
    run_generic(case_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_runs_the_lanes_kernel(case_dir, cores, capsys):
    run_siracusa(case_dir, cores, capsys)
    code = (case_dir / f"siracusa{cores}" / "network" / "Network.c").read_text()
    # the lanes kernel, called with its output table (a scratch pointer, not NULL)
    assert re.search(r"RequantShift_XP_\w+\([^;]*\(\(void \*\)\(deeploy_", code), code


@needs_qemu
def test_siracusa_tiled(case_dir, capsys):
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(case_dir / "tiled"), cores=8, l1=L1, l2=TilingOptions.l2,
                              defaultMemLevel="L2", doublebuffer=True, profileTiling=None, plotMemAlloc=False,
                              timeout=None)
    code = run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(L1, TilingOptions.l2, "L2", True)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
