"""The GemmRQ cycle formula (Deeploy/targets/siracusa/gemm_cycles.py) against the kernel cycles
the calibrated model measures on QEMU, on shapes other than those its constants came from:
within 10%."""

from __future__ import annotations


import numpy as np
import pytest

from Deeploy.targets.siracusa.gemm_cycles import UNIT, UNIT_BIAS, UNIT_C, UNIT_WIDE, gemm_rq_cycles, gemm_rq_estimate
from DeeployTest.generators.builder import Net
from DeeployTest.generators.linear import _matmul, gemm_int8_bias_rq
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.kernel_cases import one_tile_kernel
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401


def _kernel_cycles(tmp_path, m: int, k: int, n: int, cores: int, capsys, net=None) -> tuple[float, str]:
    """The kernel phase's cycles and the kernel's name (its last type: TACC) of the GEMM layer of
    ``net`` (default: an int8 MatMul with its RequantShift)."""
    net = net or _matmul(np.random.default_rng(1), (m, k), (k, n), const_b=True, rq=True)
    return one_tile_kernel(net, ("RequantizedMatMul", "RequantizedGemm"), cores, tmp_path, capsys)


@pytest.mark.parametrize("m,k,n,cores", [(64, 64, 64, 8), (32, 48, 64, 8), (24, 32, 16, 8), (64, 128, 32, 8),
                                         (12, 32, 24, 1), (8, 100, 40, 1), (64, 4, 64, 8), (32, 16, 4, 8), (64, 64, 4, 8),
                                         (64, 256, 64, 8)])
def test_formula_within_ten_percent(m, k, n, cores, tmp_path, capsys):
    measured, kernel = _kernel_cycles(tmp_path, m, k, n, cores, capsys)
    predicted = gemm_rq_cycles(1, m, n, k, cores, UNIT_WIDE if kernel.endswith("_s64") else UNIT)
    assert predicted is not None
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured, kernel)


@pytest.mark.parametrize("m,k,n,cores", [(64, 128, 32, 8), (24, 48, 16, 1)])
def test_wide_formula_within_ten_percent(m, k, n, cores, tmp_path, capsys, monkeypatch):
    """An int8 MatMul whose requantisation needs int64 (mul 2^14: sum * mul beyond 2^31, which the
    generator refuses by default, as int32 exports never produce it): the 4 x 2 blocks through the
    general store (UNIT_WIDE)."""
    monkeypatch.setattr("DeeployTest.generators.builder.INT32_LIMIT", 2**63)
    net = Net("MatMul")
    rng = np.random.default_rng(1)
    y = net.node("MatMul", [net.input("input_0", ints_in(rng, -128, 127, (m, k))),
                            net.const(weights(rng, (k, n)), "MatMul.weight")])
    net.output(net.rqs(y, 1 << 14, 0, 24))
    measured, kernel = _kernel_cycles(tmp_path, m, k, n, cores, capsys, net)
    assert kernel.endswith("_s64"), kernel
    predicted = gemm_rq_cycles(1, m, n, k, cores, UNIT_WIDE)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)


@pytest.mark.parametrize("m,k,n,cores", [(32, 48, 32, 8), (12, 32, 24, 1), (64, 128, 16, 8)])
def test_bias_formula_within_ten_percent(m, k, n, cores, tmp_path, capsys):
    """A Gemm with an int8 C per column: C added in the inline store (UNIT_BIAS)."""
    shift = int(np.log2(np.sqrt(k) * 74 * 74 / 40))   # outputs of about 40 (few clipped)
    net = gemm_int8_bias_rq(np.random.default_rng(2), m, k, n, (n,), 1, -7, shift)
    measured, kernel = _kernel_cycles(tmp_path, m, k, n, cores, capsys, net)
    assert kernel.endswith("_s32"), kernel
    predicted = gemm_rq_cycles(1, m, n, k, cores, UNIT_BIAS)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured, kernel)
    # nearer the inline store's cost than the general store's: C went into the inline store
    with_c_store = gemm_rq_cycles(1, m, n, k, cores, UNIT_C)
    assert predicted == with_c_store or abs(predicted - measured) < abs(with_c_store - measured)


@pytest.mark.parametrize("batch,m,n,cores", [(4, 32, 32, 8), (2, 64, 16, 8), (1, 64, 64, 8), (6, 24, 8, 1)])
def test_rows_formula_within_ten_percent(batch, m, n, cores, tmp_path, capsys):
    """K = 4 with a B input (attention's Q K^T with heads of 4): the rows path (ROW_K4, STRIP_K4)."""
    net = _matmul(np.random.default_rng(1), (batch, m, 4), (batch, 4, n), rq=True)
    measured, _ = _kernel_cycles(tmp_path, m, 4, n, cores, capsys, net)
    predicted = gemm_rq_cycles(batch, m, n, 4, cores, UNIT, rows=True)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)


@pytest.mark.parametrize("batch,m,k,n,cores", [(3, 32, 64, 4, 8), (5, 8, 96, 12, 8), (3, 64, 64, 32, 8),
                                               (4, 16, 64, 6, 8), (8, 16, 64, 4, 8)])
def test_packed_formula_within_ten_percent(batch, m, k, n, cores, tmp_path, capsys):
    """K > 4 with a B input (attention's scores times V, and the split tiles small L1s give): each
    strip packs its column block of B first (PACK_STRIP, PACK_WORDS_PER_K4, PACK_PER_K4, PACK_PER_K)."""
    net = _matmul(np.random.default_rng(1), (batch, m, k), (batch, k, n), rq=True)
    measured, _ = _kernel_cycles(tmp_path, m, k, n, cores, capsys, net)
    predicted = gemm_rq_cycles(batch, m, n, k, cores, UNIT, packed=True)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)


@pytest.mark.parametrize("batch,m,k,n,cores,packed", [(2, 14, 48, 6, 8, True), (1, 3, 64, 64, 1, False),
                                                      (1, 2, 64, 32, 8, False)])
def test_edge_rows_within_a_quarter(batch, m, k, n, cores, packed, tmp_path, capsys):
    """M not a multiple of 4 (the tiles of 22 rows small L1s give, one-row classifiers): the last
    M % 4 rows run in C (EDGE_ROW, EDGE_PER_K4, EDGE_PER_MAC), dearer than a block row. Within 25%:
    the C loops' cost varies more with the shape than the blocks' (as whole blocks: 40-86% low)."""
    rng = np.random.default_rng(1)
    net = (_matmul(rng, (batch, m, k), (batch, k, n), rq=True) if packed
           else _matmul(rng, (m, k), (k, n), const_b=True, rq=True))
    measured, kernel = _kernel_cycles(tmp_path, m, k, n, cores, capsys, net)
    predicted = gemm_rq_estimate(batch, m, n, k, cores, UNIT_WIDE if kernel.endswith("_s64") else UNIT,
                                 packed=packed)
    assert abs(predicted - measured) <= 0.25 * measured, (predicted, measured)


@pytest.mark.parametrize("batch,m,k,packed", [(16, 1, 4, True), (4, 8, 64, True), (2, 16, 32, False)])
def test_odd_column_tiles_cost_at_least_one_column_less(batch, m, k, packed):
    """An odd N (a decoder's 11 of 65 cached keys) leaves the kernel's 4 x 4 blocks (N % 4 != 0) for
    4 x 2 ones: priced as 4 x 4 blocks of N + 1 columns it looked cheaper than N - 1 columns, and the
    tiler cut such layers into many odd tiles."""
    for n in range(3, 66, 2):
        assert gemm_rq_estimate(batch, m, n, k, 8, UNIT, packed=packed) >= \
            gemm_rq_estimate(batch, m, n - 1, k, 8, UNIT, packed=packed), n


def test_off_path_shapes_have_no_formula():
    assert gemm_rq_cycles(1, 64, 3, 64, 8) is None      # N odd: a column edge
    assert gemm_rq_cycles(1, 64, 64, 3, 8) is None      # K < 4: C blocks
    assert gemm_rq_cycles(1, 6, 64, 64, 8) is None      # a row edge
    assert gemm_rq_cycles(1, 4, 8, 64, 8) is None       # fewer units than cores
