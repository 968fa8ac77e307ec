"""A requantisation to the levels 0..255 costs on the cluster what its int8 form costs: the form an
NPU that reads uint8 only gets its int8 input in (Deeploy/targets/npu/lower.py: the producer's add
plus ``128 << shift``, its outputs unsigned) clips with one cv.clipur where the int8 form clips
with one cv.clipr, on the same kernel path (GemmRQ's K = 4 rows path and its one-mul strips,
eltwise_rq.inc's byte lanes); an iRMSNorm to uint8 with offset 128 folds the offset into its shifts
and clips with one cv.clipur (irmsnorm_lanes.inc). Both forms run tiled on Siracusa and must match
the reference interpreter's goldens bit-exactly; their kernel cycles must agree within 3%."""

from __future__ import annotations

import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.registry import ints_in
from DeeployTest.test_suite.kernel_cases import byte_values, one_tile_kernel
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401

SHIFT = 8


def _net(op: str, a_shape, b_shape, const_b: bool, mul: int, add: int, unsigned: bool) -> Net:
    """``op`` of two int8 operands requantised to int8 by ``mul``, ``add``, SHIFT, or (``unsigned``) the
    same values plus 128 as uint8 (the add plus ``128 << SHIFT``)."""
    rng = np.random.default_rng(5)
    net = Net(op)
    a = net.input("input_0", byte_values(rng, a_shape))
    b = (net.const(byte_values(rng, b_shape), "b") if const_b else net.input("input_1", byte_values(rng, b_shape)))
    y = net.node(op, [a, b], name="v")
    net.output(net.rqs(y, mul, add + (128 << SHIFT if unsigned else 0), SHIFT, signed=not unsigned, name="rqs"))
    return net


CASES = {
    "matmul_k4_rows": ("MatMul", (8, 32, 4), (8, 4, 32), False, 1, -300),     # heads of 4 (Q K^T)
    "matmul_strips": ("MatMul", (32, 64), (64, 32), True, 1, 700),     # attention's context, K > 4
    "mul_lanes": ("Mul", (1, 16, 64), (1, 16, 64), False, 3, -100),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_uint8_output_costs_the_int8_form(case, tmp_path, capsys):
    op, a_shape, b_shape, const_b, mul, add = CASES[case]
    ops = ("RequantizedMatMul", "RequantizedGemm", "RequantizedMul")
    signed, k_signed = one_tile_kernel(_net(op, a_shape, b_shape, const_b, mul, add, False), ops, 8,
                                       tmp_path / "s8", capsys)
    unsigned, k_unsigned = one_tile_kernel(_net(op, a_shape, b_shape, const_b, mul, add, True), ops, 8,
                                           tmp_path / "u8", capsys)
    assert "_u8" in k_unsigned and k_signed != k_unsigned, (k_signed, k_unsigned)
    # the same instructions; the memory's contention between the cores may differ by a few cycles
    assert abs(unsigned - signed) <= 0.03 * signed, (case, signed, unsigned, k_signed, k_unsigned)


def _rmsnorm(unsigned: bool) -> Net:
    """An iRMSNorm to int8 whose outputs clip at both ends, or (``unsigned``) the same values plus 128
    as uint8 (its offset 128: the form NE16's input takes, Deeploy/targets/npu/lower.py)."""
    rng = np.random.default_rng(7)
    net = Net("iRMSNorm")
    x = net.input("input_0", byte_values(rng, (16, 128)))
    w = net.const(ints_in(rng, -8_000_000, 8_000_000, (128,)).astype(np.int32), "w")
    attrs = {"D": 1 << 16, "n_levels": 256, **({"signed": 0, "offset": 128} if unsigned else {})}
    net.output(net.node("iRMSNorm", [x, w], attrs, name="norm"))
    return net


def test_rmsnorm_uint8_output_costs_the_int8_form(tmp_path, capsys):
    signed, k_signed = one_tile_kernel(_rmsnorm(False), ("iRMSNorm",), 8, tmp_path / "s8", capsys)
    unsigned, k_unsigned = one_tile_kernel(_rmsnorm(True), ("iRMSNorm",), 8, tmp_path / "u8", capsys)
    assert "_u8" in k_unsigned and k_signed != k_unsigned, (k_signed, k_unsigned)
    assert abs(unsigned - signed) <= 0.03 * signed, (signed, unsigned)


def test_tiler_prices_the_uint8_form_as_the_int8_form(tmp_path):
    """The K = 4 rows path's price (gemm_cycles.gemm_tile_model) follows the kernel: both forms."""
    from Deeploy.targets.siracusa.gemm_cycles import gemm_tile_model
    from DeeployTest.generators.golden import write_test
    from DeeployTest.test_suite.kernel_cases import lowered
    models = []
    for unsigned in (False, True):
        write_test(_net(*CASES["matmul_k4_rows"], unsigned), tmp_path / str(unsigned))
        graph = lowered(tmp_path / str(unsigned), "Siracusa")
        node = next(n for n in graph.nodes if n.op == "RequantizedMatMul")
        models.append(gemm_tile_model(node, graph, 8))
    assert models[0].rows and models[1] == models[0], models
