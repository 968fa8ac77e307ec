"""The register-blocked GEMM kernels (gemm.inc, and GemmRQ = gemm.inc with the requantisation
fused) on the shapes and operand types that select their different paths: Siracusa's assembly
4 x 4 blocks over a packed panel (int8 or uint8 A and B, K even, at least two column blocks),
the C 2 x 8 and 4 x 4 blocks, the 1 x 4 / 1 x 1 edges and small-tile splits, C added in the
assembly store (a per-column add), the C block store or the general one, and the host's dot-product path. Outputs must match the reference interpreter's goldens bit-exactly on Generic and
on Siracusa with 1 and 8 cores."""

from __future__ import annotations


import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.linear import _gemm, gemm_int8_bias_rq
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.kernel_cases import needs_qemu, run_generic, run_siracusa


# (id, M, K, N, A unsigned, B an unsigned input instead of int8 weights, requantised: False, True
# or the RequantShift's calibration options)
SATURATE = {"percentile": 60.0}                       # about 20% of the outputs clipped at each bound
CASES = [
    ("rv_s8_s8", 8, 16, 16, False, False, True),      # assembly path, 2 row x 4 column blocks
    ("rv_u8_s8", 8, 16, 16, True, False, True),       # lbu for A
    ("rv_s8_u8", 8, 10, 12, False, True, True),       # lbu for B, a 4-column edge
    ("rv_u8_u8", 12, 6, 8, True, True, True),
    ("odd_k", 9, 7, 19, False, False, True),          # K odd: C blocks, row and column edges
    ("narrow_n", 16, 12, 4, False, False, True),      # N = 4: one assembly block per packed panel
    ("narrow_n_odd_k", 16, 25, 4, False, False, True),    # N < 8, K odd: C 4 x 4 blocks
    ("gemv", 1, 32, 20, False, False, True),          # one row: 1 x 4 units over the cores
    ("tiny", 2, 3, 3, True, False, True),             # fewer outputs than cores: 1 x 1 units
    ("rv_k2", 8, 2, 16, False, False, True),          # K = 2: no loop iteration after the first pair
    ("rv_clip", 8, 4, 16, False, False, SATURATE),    # the clip's off-range path, both bounds
    ("rv_clip_u8", 8, 6, 12, True, False, dict(SATURATE, signed=False)),   # uint8 output
    ("rv_rq_row", 12, 8, 16, False, False, dict(SATURATE, axis=0)),   # mul/add per row, clipped
    ("plain", 10, 16, 24, False, False, False),       # int32 output: Generic's plain GEMM
    ("plain_u8", 6, 5, 9, True, True, False),
]
# Gemm with C (id, A shape, B shape, C shape, requantisation: None, "scalar", "row", "col" or
# scalar with calibration options)
GEMM_CASES = [
    ("gemm_bias_rq", (16, 32), (32, 16), (16,), "scalar"),   # assembly path, C per column
    ("gemm_bias_rq_clip", (16, 24), (24, 16), (16,), SATURATE),    # int64 requantisation, clipped
    ("gemm_bias_rq_row", (8, 16), (16, 24), (24,), "row"),    # mul/add per row
    ("gemm_bias_rq_col", (8, 16), (16, 24), (24,), "col"),    # mul/add per column: the general store
    ("gemm_matrix_c", (12, 8), (8, 16), (12, 16), None),      # C a matrix, int32 output
]

# Gemm with an int8 C and a scalar requantisation small enough for int32 (TACC), so C goes into
# the assembly store (id, M, K, N, C shape, mul, add, shift, signed output[, C's bound]);
# the outputs clip at both bounds
BIAS_CASES = [
    ("bias_asm", 16, 24, 16, (16,), 3, -7, 8, True),
    ("bias_asm_u8", 16, 12, 12, (12,), 2, 100, 7, False),
    ("bias_asm_scalar_c", 8, 16, 16, (1,), 1, 0, 7, True),      # one C for every output
    ("bias_asm_c16", 16, 16, 16, (16,), 1, 3, 8, True, 2000),   # int16 C: lh
    ("bias_asm_c32", 16, 16, 16, (16,), 1, -5, 9, True, 40000),   # int32 C: lw
    ("bias_c_matrix", 16, 16, 16, (16, 16), 3, -7, 8, True),   # C per row too: the C block store
]


def _net(rng, m, k, n, a_unsigned, b_unsigned, requant) -> Net:
    net = Net("MatMul")
    a = net.input("input_0", ints_in(rng, 0, 255, (m, k)) if a_unsigned else ints_in(rng, -128, 127, (m, k)))
    b = (net.input("input_1", ints_in(rng, 0, 255, (k, n))) if b_unsigned
         else net.const(weights(rng, (k, n)), "MatMul.weight"))
    y = net.node("MatMul", [a, b])
    if requant:
        y = net.calib_rqs(y, offset_rng=rng, **(requant if isinstance(requant, dict) else {}))
    net.output(y)
    return net


ALL = CASES + GEMM_CASES + BIAS_CASES


@pytest.fixture(params=ALL, ids=[c[0] for c in ALL])
def case_dir(request, tmp_path):
    name, *shape = request.param
    folder = tmp_path / name
    rng = np.random.default_rng(7)
    if len(shape) >= 8:
        net = gemm_int8_bias_rq(rng, *shape)
    else:
        net = _net(rng, *shape) if len(shape) == 6 else _gemm(rng, shape[0], shape[1], shape[2], rq=shape[3])
    write_test(net, folder)
    return folder


def test_generic(case_dir, capsys):
    run_generic(case_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(case_dir, cores, capsys):
    run_siracusa(case_dir, cores, capsys)
