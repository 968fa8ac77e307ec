"""An Add or Mul broadcasting over leading axes fuses with its RequantShift on Siracusa (the
fused kernel reads the smaller operand with a period: eltwise_rq.inc), scalar requantisation runs
as one row split over the cores, per-channel requantisation by rows or within rows; one
broadcasting along a middle axis stays unfused. Operands at the int8 extremes; outputs must match
the reference interpreter's goldens bit-exactly on Generic and on Siracusa with 1 and 8 cores."""

from __future__ import annotations

import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.test_suite.kernel_cases import bound_ops, case_batch, needs_qemu, run_generic, run_siracusa


def _extremes(rng, shape):
    v = rng.integers(-128, 128, size=shape)
    v.flat[0], v.flat[-1] = -128, 127
    return v


def _add_rq(a_shape, b_shape, mul=65536, shift=16, channels=None, op="Add"):
    """op(a, b) -> RequantShift; ``channels``: a per-channel multiplier of that shape."""
    def build(rng):
        net = Net(op)
        a = net.input("input_0", _extremes(rng, a_shape))
        b = net.input("input_1", _extremes(rng, b_shape))
        s = net.node(op, [a, b], name="sum")
        m = mul if channels is None else rng.integers(mul // 2, mul, size=channels)
        net.output(net.rqs(s, m, 3, shift, name="rqs"))
        return net
    return build


CASES = [  # name, build, fused on Siracusa
    ("trailing_b_scalar_rq", _add_rq((2, 3, 8), (3, 8)), True),           # period 24 across core spans
    ("trailing_a_scalar_rq", _add_rq((5, 7), (3, 5, 7), 3000, 9), True),  # the first operand repeats
    ("trailing_b_channels_in_rows", _add_rq((2, 3, 8), (8,), channels=(1, 3, 1)), True),   # 6 rows < 8 cores
    ("trailing_b_channels_by_row", _add_rq((4, 4, 16), (16,), channels=(1, 4, 1)), True),  # 16 rows
    ("middle_broadcast_unfused", _add_rq((3, 4, 8), (3, 1, 8)), False),
    # at least two outputs per key (a + b: 511 keys) with scalar mul and add: outputs tabulated,
    # also clipped at both ends
    ("trailing_b_tabulated", _add_rq((4, 16, 32), (16, 32)), True),
    ("same_shape_tabulated_clipped", _add_rq((2, 32, 32), (2, 32, 32), 65536, 14), True),
    # Mul: products of int8 extremes (16384), with a multiplier that takes them near 2^31;
    # per-channel; a broadcast along a middle axis
    ("mul_same_shape", _add_rq((4, 6, 8), (4, 6, 8), 300, 8, op="Mul"), True),
    ("mul_trailing_b_near_2_31", _add_rq((2, 3, 8), (3, 8), 120000, 22, op="Mul"), True),
    ("mul_trailing_b_channels", _add_rq((4, 4, 16), (16,), 600, 10, channels=(1, 4, 1), op="Mul"), True),
    ("mul_middle_broadcast_unfused", _add_rq((3, 4, 8), (3, 1, 8), 300, 8, op="Mul"), False),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case(request, tmp_path):
    name, build, fused = request.param
    folder = tmp_path / name
    write_test(build(np.random.default_rng(7)), folder)
    return folder, fused, "Mul" if name.startswith("mul") else "Add"


def test_fused_when_the_operand_repeats(case):
    folder, fused, op = case
    ops = bound_ops(folder, "Siracusa")
    assert ("Requantized" + op in ops) == fused, ops
    assert (op in ops) != fused, ops


batch_dir = case_batch([c[:2] for c in CASES], 7)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)


def test_tabulated_when_every_key_has_two_outputs():
    from types import SimpleNamespace as NS
    from Deeploy.ir.dtypes import INT8, INT16, UINT8
    from Deeploy.targets.siracusa.bindings import KEY_INPUT, KEY_SUM, eltwise_table
    scalar, channels = NS(mul_per_channel=False, add_per_channel=False), NS(mul_per_channel=True, add_per_channel=False)
    s8, u8, s16 = NS(dtype=INT8), NS(dtype=UINT8), NS(dtype=INT16)
    assert eltwise_table(scalar, [s8, s8], 1022, KEY_SUM) == (-256, 511)
    assert eltwise_table(scalar, [u8, s8], 1022, KEY_SUM) == (-128, 511)
    assert eltwise_table(scalar, [s8, s8], 1021, KEY_SUM) is None       # too few outputs
    assert eltwise_table(scalar, [s8], 512, KEY_INPUT) == (-128, 256)
    assert eltwise_table(scalar, [s16, s8], 1 << 20, KEY_SUM) is None   # 16-bit operand
    assert eltwise_table(channels, [s8, s8], 4096, KEY_SUM) is None     # per-channel mul
    assert eltwise_table(scalar, [s8, s8], 4096, None) is None          # no key (Mul)
