"""The cluster's iSoftmax on byte lanes (TargetLibraries/Siracusa/kernels/isoftmax_lanes.inc):
8-bit rows whose starts fall on every byte of a word (row widths not a multiple of 4: an
unaligned head and tail), rows shorter than a word, rows shared by cores (a core writes part of
a row), uint8 inputs (cv.maxu.b), maxima in the head, the words and the tail, 16- and 32-bit
e(d) tables, rows whose e fit the core's stack buffer and rows longer than it, and the fused
requantisation (scalar: tabulated; per row). Siracusa binds the
lanes kernels to these calls, and their outputs match the reference interpreter's goldens
bit-exactly on Generic and on Siracusa with 1 and 8 cores and tiled."""

from __future__ import annotations


import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.integer import isoftmax_attrs
from DeeployTest.generators.registry import ints_in
from DeeployTest.test_suite.kernel_cases import case_batch, needs_qemu, run_generic, run_siracusa, run_tiled

L1 = 3000   # several tiles of rows


def _maxima_everywhere(lo, hi, shape):
    """Random rows with each row's maximum put at column r % width (head, words and tail)."""
    def x(rng):
        v = ints_in(rng, lo, hi - 1, shape).reshape(-1, shape[-1])
        for r in range(v.shape[0]):
            v[r, r % shape[-1]] = hi
        return v.reshape(shape)
    return x


def _softmax(x, attrs=None, rq=None):
    """iSoftmax on x(rng), followed by a RequantShift (mul, add, shift) when rq is given."""
    def build(rng):
        net = Net("iSoftmax")
        s = net.node("iSoftmax", [net.input("input", x(rng))], attrs or isoftmax_attrs(96), name="softmax")
        if rq is not None:
            mul, add, shift = rq
            mul = mul if np.isscalar(mul) else rng.integers(500, 4000, size=mul)
            s = net.rqs(s, mul, add, shift, name="rqs")
        net.output(s)
        return net
    return build


# e(0) = 2^17 + ...: the table's entries do not fit 16 bits (32-bit entries)
_WIDE_TABLE = {"coeffA": 1, "coeffB": 400, "coeffC": 2**17, "log2": 300, "n_levels": 256}

# a * t^2 + c on both sides of 2^31: the e(d) table filled in int64 (and a 64-bit TACC: no lanes)
_INT64_TABLE = {"coeffA": 1, "coeffB": 46341, "coeffC": 7, "log2": 8, "n_levels": 256}

CASES = [
    ("width_7_int8", _softmax(_maxima_everywhere(-128, 127, (5, 7, 7)))),
    ("width_13_uint8", _softmax(_maxima_everywhere(0, 255, (3, 4, 13)))),
    ("width_3_rows_shorter_than_a_word", _softmax(_maxima_everywhere(-128, 120, (50, 3)))),
    ("width_66_rows_shared_by_cores", _softmax(_maxima_everywhere(-100, 127, (5, 66)))),
    ("width_30_table_of_words", _softmax(_maxima_everywhere(-128, 127, (9, 30)), _WIDE_TABLE)),
    ("int64_table", _softmax(_maxima_everywhere(-128, 127, (30, 20)), _INT64_TABLE)),
    ("width_301_beyond_the_stack_row", _softmax(_maxima_everywhere(-128, 127, (3, 301)))),
    ("width_150_words_beyond_the_stack_row", _softmax(_maxima_everywhere(-128, 127, (2, 150)), _WIDE_TABLE)),
    ("rq_scalar_width_22", _softmax(_maxima_everywhere(-128, 127, (4, 9, 22)), rq=(3000, -200, 10))),
    ("rq_per_row_width_37", _softmax(_maxima_everywhere(-128, 127, (2, 4, 37)), rq=((2, 4, 1), 50, 11))),
]


batch_dir = case_batch(CASES, 17)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_runs_the_lanes_kernel(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)
    code = (batch_dir / f"siracusa{cores}" / "network" / "Network.c").read_text()
    assert "_xp.inc" in code, "the Siracusa call does not use the byte-lanes iSoftmax wrapper"


@needs_qemu
def test_siracusa_tiled(batch_dir, capsys):
    run_tiled(batch_dir, batch_dir / "tiled", L1, capsys)
