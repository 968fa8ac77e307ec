"""The cluster's standalone RequantShift on byte lanes (TargetLibraries/Siracusa/kernels/
requant_shift_lanes.inc: 8-bit inputs and outputs, scalar mul and add, the outputs looked up in
the table the cores fill): signed and unsigned inputs and outputs, element counts whose per-core
shares start and end inside a word (an unaligned head and a tail), clipping at both ends, inputs
at the 8-bit extremes. Siracusa binds the lanes kernel to these calls, and their outputs match
the reference interpreter's goldens bit-exactly on Generic, on Siracusa with 1 and 8 cores and
tiled."""

from __future__ import annotations

import re

import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.test_suite.kernel_cases import (byte_values, case_batch, needs_qemu, run_generic, run_siracusa,
                                                 run_tiled)

L1 = 2000   # several tiles


def _rqs(shape, mul, add, shift, unsigned_in=False, signed_out=True):
    def build(rng):
        v = byte_values(rng, shape, unsigned_in)
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


batch_dir = case_batch(CASES, 23)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_runs_the_lanes_kernel(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)
    code = (batch_dir / f"siracusa{cores}" / "network" / "Network.c").read_text()
    # the lanes kernel, called with its output table (a scratch pointer, not NULL)
    assert re.search(r"RequantShift_XP_\w+\([^;]*\(\(void \*\)\(deeploy_", code), code


@needs_qemu
def test_siracusa_tiled(batch_dir, capsys):
    run_tiled(batch_dir, batch_dir / "tiled", L1, capsys)
