"""Throughput of the attention layers of a transformer with heads of d = 4 (microLlama's) on the
cluster, as the calibrated model measures their kernel phase with 8 cores, operands in L1: the
RequantizedMatMuls of two activations (GemmRQ, a B input packed a column block at a time; with
K = 4 two rows of requantised outputs per hardware-loop trip, a core's share in one call) and the heads' Transposes (rows of
one word moved in runs along the next dim). Lower bounds in MAC/cycle per core and upper bounds in
cycles per element and core; the outputs are checked bit-exactly on the way."""

from __future__ import annotations

import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.linear import _matmul
from DeeployTest.generators.registry import ints_in
from DeeployTest.test_suite.kernel_cases import one_tile_kernel
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401

CORES = 8


@pytest.mark.parametrize("a_shape,b_shape,rate", [
    ((16, 64, 4), (16, 4, 64), 0.65),     # Q K^T: [heads, S, d] x [heads, d, S]
    ((64, 16, 4), (64, 4, 4), 0.5),      # the rotation: [S, heads, d] x [S, d, d]
    ((16, 64, 64), (16, 64, 4), 1.7),    # scores x V: [heads, S, S] x [heads, S, d]
])
def test_matmul_of_two_activations(a_shape, b_shape, rate, tmp_path, capsys):
    net = _matmul(np.random.default_rng(0), a_shape, b_shape, rq=True)
    cycles, _ = one_tile_kernel(net, ("RequantizedMatMul",), CORES, tmp_path, capsys)
    macs = int(np.prod(a_shape)) * b_shape[-1]
    assert macs / cycles / CORES >= rate, (cycles, macs / cycles / CORES)


def test_scores_times_v_tile_packs_b_cheaply(tmp_path, capsys):
    """One tile of microLlama64_parallel's scores x V at --l1 8000: 8 heads of [8 x 64] x [64 x 4],
    one head a core, so each core packs a 64 x 4 panel of V for only two 4 x 4 blocks, and the
    packing weighs as much as the blocks' maths (2 x 64 steps of k at 5.9 cycles). The C packing
    loop (44 instructions per four steps of k: 12.2 cycles a step, 846 in all) made the kernel
    2,022 cycles, so about 1,180 are the rest (fixed cost, blocks, stores). 1,900 leaves the
    packing at most 10.2 cycles a step; its hardware loop runs 32 instructions per four steps."""
    net = _matmul(np.random.default_rng(0), (8, 8, 64), (8, 64, 4), rq=True)
    cycles, _ = one_tile_kernel(net, ("RequantizedMatMul",), CORES, tmp_path, capsys)
    assert cycles <= 1900, cycles


@pytest.mark.parametrize("shape,perm,per_element", [
    ((1, 64, 16, 4), (0, 2, 1, 3), 3.5),    # heads out of a [S, heads, d] row: one word per row
    ((1, 16, 64, 4), (0, 2, 1, 3), 4.5),    # and back (runs of 16 rows)
])
def test_transpose_of_heads(shape, perm, per_element, tmp_path, capsys):
    net = Net("Transpose")
    x = net.input("input_0", ints_in(np.random.default_rng(0), -128, 127, shape))
    net.output(net.node("Transpose", [x], {"perm": list(perm)}))
    cycles, _ = one_tile_kernel(net, ("Transpose",), CORES, tmp_path, capsys)
    assert cycles * CORES / np.prod(shape) <= per_element, cycles * CORES / np.prod(shape)
