"""The cluster's iSoftmax on byte lanes (TargetLibraries/Siracusa/kernels/isoftmax_lanes.inc) at
microLlama's shape, and its outputs on every row width from 1 to 70.

Speed: one RequantizediSoftmax [1, 16, 64, 64] int8 (microLlama64_parallel's attention scores:
rows of 64, the coefficients of its first and second layers, whose row sums are above and mostly
below levels_m1, and its requantisation), one tile in L1, 8 cores, as the calibrated model
measures the kernel phase. A core's 128 rows cost, per element (instructions of the
hardware-loop bodies, 1 cycle each, no load-use stalls; specs/pulp-core.md, timing.py):
  max 0.5 (2 cv.lw + 2 cv.max.b per 8 elements), e and sum 5 (20 per 4: cv.lw, cv.sub.b, 7 ALU
  ops for the four table offsets, 4 register-offset cv.lhu, 2 cv.insert.h, 2 cv.sw, 2
  cv.sdotup.h), outputs 8.5 (17 per 2: cv.lw, 4 cv.dotup.h, 2 each of srli, cv.msu, sltu, add,
  the output table's cv.lbu and cv.sb);
plus about 100 cycles per row (a divu, the lanes' reductions, heads and tails: 1.6 per
element), about 15.6 in all. The bound 16.5 leaves 6% for the call's tables and barrier; a
normalisation by a high multiply per element (mulhu: 5 cycles) and the exact 64/32 reciprocal per
row (19.5 per element) exceeds it.

Exactness: widths 1..70 (rows that are not a multiple of 4, starting on every byte of a word),
int8 and uint8 inputs, iSoftmax alone (byte outputs stored) and with a scalar RequantShift (the
table of outputs), 1 to 11 rows (fewer rows than cores: rows shared, a core's columns starting
at odd positions), row sums from 1 up (the reciprocal's shift k from 1 to 16); bit-exact against the
reference interpreter's goldens on Siracusa with 8 cores, untiled and tiled."""

from __future__ import annotations

import numpy as np
import pytest

from DeeployTest.generators.builder import Net, tensor_attr
from DeeployTest.generators.registry import ints_in
from DeeployTest.test_suite.kernel_cases import case_batch, needs_qemu, one_tile_kernel, run_siracusa, run_tiled

CORES = 8
# microLlama64_parallel's iSoftmax and the RequantShift after it (div 2^16, mul 88823)
_LLAMA = {"coeffA": 1, "coeffB": 64, "coeffC": 2136, "log2": 47, "n_levels": 256}
# its second layer's: e(0) = 38, row sums mostly below levels_m1
_LLAMA_1 = {"coeffA": 1, "coeffB": 5, "coeffC": 13, "log2": 4, "n_levels": 256}
# e(0) = 1, e(d > 0) = 0: row sums of 1 to 3
_ONE_HOT = {"coeffA": 0, "coeffB": 0, "coeffC": 1, "log2": 1, "n_levels": 256}


def _softmax(shape, lo, hi, rq, attrs=_LLAMA):
    """iSoftmax over rows of ``shape`` in [lo, hi], then (rq) microLlama's RequantShift."""
    def build(rng):
        net = Net("iSoftmax")
        x = net.input("input", ints_in(rng, lo, hi, shape))
        s = net.node("iSoftmax", [x], {k: tensor_attr(v) for k, v in attrs.items()}, name="softmax")
        net.output(net.rqs(s, 88823, 0, 16, name="rqs") if rq else s)
        return net
    return build


@needs_qemu
@pytest.mark.parametrize("attrs", [_LLAMA, _LLAMA_1], ids=["layer_0", "layer_1"])
def test_microllama_softmax_cycles_per_element(attrs, tmp_path, capsys):
    shape = (1, 16, 64, 64)
    net = _softmax(shape, -128, 127, True, attrs)(np.random.default_rng(0))
    cycles, kernel = one_tile_kernel(net, ("RequantizediSoftmax",), CORES, tmp_path, capsys)
    assert "_XP_" in kernel, kernel
    per_element = cycles * CORES / np.prod(shape)
    assert per_element <= 16.5, per_element


CASES = [(f"width_{w}", _softmax((1 + w % 11, w), *((0, 255) if w % 3 == 0 else (-128, 127)), w % 2 == 0))
         for w in range(1, 71)]
CASES += [(f"small_sums_width_{w}", _softmax((3, w), -128, 127, w % 2 == 0, _LLAMA_1)) for w in (5, 16, 33, 64)]
CASES += [("sums_1_to_3", _softmax((5, 37), -128, 127, True, _ONE_HOT))]

batch_dir = case_batch(CASES, 26)


@needs_qemu
def test_siracusa_widths(batch_dir, capsys):
    run_siracusa(batch_dir, CORES, capsys)


@needs_qemu
def test_siracusa_widths_tiled(batch_dir, capsys):
    run_tiled(batch_dir, batch_dir / "tiled", 3000, capsys)
