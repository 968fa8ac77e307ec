"""Siracusa's tabulated element-wise requantised ops on byte lanes (eltwise_rq.inc, KFN(_span_table)
with the PULP DSP extension: scalar mul and add, 8-bit operands and outputs, the outputs looked up
in the table the cores fill, a's words in a hardware loop): Add of two contiguous operands (signed,
unsigned and mixed lanes, the keys a + b summed), Add of one b value and a unary op (iGELU: the
key is a's lane), b broadcast over rows of odd length (spans starting inside a word: a head in C)
and element counts whose per-core shares end inside a word (a tail in C). Outputs must match the
reference interpreter's goldens bit-exactly on Siracusa with 1 and 8 cores."""

from __future__ import annotations

import re

import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.integer import _unary, igelu_attrs
from DeeployTest.test_suite.kernel_cases import byte_values, case_batch, needs_qemu, run_siracusa


def _add(shape, b_shape=None, a_unsigned=False, b_unsigned=False, signed_out=True):
    """Add of inputs of ``shape`` (b: ``b_shape``) with a scalar RequantShift (tabulated)."""
    def build(rng):
        def operand(name, unsigned, shape):
            return net.input(name, byte_values(rng, shape, unsigned))
        net = Net("Add")
        s = net.node("Add", [operand("input_0", a_unsigned, shape), operand("input_1", b_unsigned, b_shape or shape)],
                     name="v")
        net.output(net.rqs(s, 700, -30, 9, signed=signed_out, name="rqs"))
        return net
    return build


def _igelu(rng):
    return _unary("iGELU", rng.integers(-128, 128, size=(1, 1, 1027)), igelu_attrs(4 / 128), rq=True, rng=rng)


CASES = [
    ("add_s8_s8_1203", _add((3, 401))),
    ("add_u8_s8_1402", _add((2, 701), a_unsigned=True)),
    ("add_u8_u8_u8_out", _add((1, 1157), a_unsigned=True, b_unsigned=True, signed_out=False)),
    ("add_s8_u8", _add((1, 1030), b_unsigned=True)),
    ("add_one_b", _add((1, 1101), b_shape=(1,))),
    ("add_b_rows_of_223", _add((5, 223), b_shape=(223,))),
    ("igelu_1027", _igelu),
]


batch_dir = case_batch(CASES, 29)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_tabulated(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)
    code = (batch_dir / f"siracusa{cores}" / "network" / "Network.c").read_text()
    # every case's layer is called with its output table (a scratch pointer, not NULL)
    calls = re.findall(r"(?:AddRQ|iGELU_RQ)_\w+\([^;]*\(\(void \*\)\(deeploy_", code)
    assert len(calls) >= len(CASES), code
