"""The cluster's integer Add on byte lanes (TargetLibraries/Siracusa/kernels/add_lanes.inc: 8-bit
operands, 32-bit arithmetic, the contiguous runs of binary.inc): signed, unsigned and mixed
operands, rows whose starts fall inside a word (a head in C, b sharing a's alignment) or whose b
does not share a's alignment (the portable loop), a core's share ending inside a word, and
operands at the 8-bit extremes. Siracusa binds the lanes kernel, and the outputs match the
reference interpreter's goldens bit-exactly on Generic and on Siracusa with 1 and 8 cores."""

from __future__ import annotations

import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.test_suite.kernel_cases import byte_values, case_batch, needs_qemu, run_generic, run_siracusa


def _add(shape, b_shape=None, a_unsigned=False, b_unsigned=False):
    def build(rng):
        def operand(name, unsigned, shape):
            return net.input(name, byte_values(rng, shape, unsigned))
        net = Net("Add")
        net.output(net.node("Add", [operand("input_0", a_unsigned, shape),
                                    operand("input_1", b_unsigned, b_shape or shape)], name="add"))
        return net
    return build


CASES = [
    ("s8_s8_1001", _add((1001,))),
    ("u8_s8_rows_of_37", _add((6, 37), a_unsigned=True)),
    ("u8_u8_rows_of_40", _add((5, 40), a_unsigned=True, b_unsigned=True)),
    ("s8_u8_b_rows_of_13", _add((9, 13), b_shape=(13,), b_unsigned=True)),   # b's alignment differs
]


batch_dir = case_batch(CASES, 31)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa_runs_the_lanes_kernel(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)
    assert "add_xp.inc" in (batch_dir / f"siracusa{cores}" / "network" / "Network.c").read_text()
