"""Siracusa's element-wise requantised Add and Mul on four 8-bit lanes (eltwise_rq.inc with the PULP
DSP extension: word loads, lanes extracted, cv.addNr, the clip, lanes packed into one word store):
rows whose outputs start off a word boundary (a head in C) and end inside a word (a tail in C),
signed and unsigned operands, b contiguous or one value, the signed range (cv.clipr) and an
unsigned output (cv.max / cv.min), per-channel multipliers (no output table). Operands at the
8-bit extremes; outputs must match the reference interpreter's goldens bit-exactly on Siracusa
with 1 and 8 cores."""

from __future__ import annotations

import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.test_suite.kernel_cases import bound_ops, byte_values, case_batch, needs_qemu, run_siracusa


def _net(op, shape, a_unsigned=False, b_unsigned=False, signed_out=True, mul=(300, 600), shift=8, b_shape=None):
    """op(a, b) of inputs of ``shape`` (b: ``b_shape``, default the same; (1,): one value) with a
    per-channel RequantShift (channels on axis 1)."""
    def build(rng):
        def operand(name, unsigned, shape):
            return net.input(name, byte_values(rng, shape, unsigned))
        net = Net(op)
        s = net.node(op, [operand("input_0", a_unsigned, shape), operand("input_1", b_unsigned, b_shape or shape)],
                     name="v")
        m = rng.integers(*mul, size=(1, shape[1], 1))
        net.output(net.rqs(s, m, -5, shift, signed=signed_out, name="rqs"))
        return net
    return build


CASES = [
    ("add_rows_of_7", _net("Add", (1, 12, 7))),                   # heads and tails, 12 rows
    ("add_rows_of_37_u8_s8", _net("Add", (1, 8, 37), a_unsigned=True)),
    ("add_u8_u8_u8_out", _net("Add", (1, 9, 21), True, True, signed_out=False)),
    ("mul_rows_of_30", _net("Mul", (1, 10, 30), mul=(20, 40), shift=10)),
    ("mul_s8_u8_u8_out", _net("Mul", (1, 4, 67), b_unsigned=True, signed_out=False, mul=(20, 40), shift=10)),
    ("add_one_b", _net("Add", (1, 6, 45), b_shape=(1,))),          # b one value (stride 0)
    ("mul_one_b_u8", _net("Mul", (1, 5, 33), b_unsigned=True, mul=(20, 40), shift=10, b_shape=(1,))),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case_dir(request, tmp_path):
    name, build = request.param
    write_test(build(np.random.default_rng(11)), tmp_path / name)
    return tmp_path / name


batch_dir = case_batch(CASES, 11)


def test_fused(case_dir):
    ops = bound_ops(case_dir, "Siracusa")
    assert any(op in ops for op in ("RequantizedAdd", "RequantizedMul")), ops


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)
