"""iSoftmax followed by a RequantShift fuses into RequantizediSoftmax on Siracusa (isoftmax_rq.inc):
scalar requantisation (the outputs tabulated, or computed per element on small calls), per-row and
per-column mul/add, unsigned outputs, a RequantShift with plain n_levels next to a softmax with
its own n_levels, int16 inputs (no e(d) table), int64 softmax intermediates, clipping at both
ends; and the pairs that stay unfused (the softmax output read by another node too, a flat
per-channel constant that does not broadcast onto the rows). Outputs must match the reference
interpreter's goldens bit-exactly on Generic, on Siracusa with 1 and 8 cores, and tiled; a
RequantizediSoftmax node written in the file runs on Generic through the same kernel."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net, tensor_attr
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.integer import isoftmax_attrs
from DeeployTest.generators.registry import ints_in
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.kernel_cases import bound_ops, case_batch, needs_qemu, run_generic, run_siracusa

TILED = RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED")
L1 = 4000   # several tiles of rows for the larger cases

# e * levels_m1 beyond 2^31: the kernel's int64 path
_WIDE = {"coeffA": 1, "coeffB": 4000, "coeffC": 2**24, "log2": 2000, "n_levels": 256}


def _softmax_rq(shape, mul=3000, add=-200, shift=10, attrs=None, lo=-128, hi=127, signed=True,
                style="tensor", also_output=False):
    """iSoftmax -> RequantShift; ``mul``/``add``: scalars or the shapes of random per-channel
    constants; ``also_output``: the softmax output is a graph output too (unfused)."""
    def build(rng):
        net = Net("iSoftmax")
        x = net.input("input", ints_in(rng, lo, hi, shape))
        s = net.node("iSoftmax", [x], attrs or isoftmax_attrs(96), name="softmax")
        m = mul if np.isscalar(mul) else rng.integers(-4000, 8000, size=mul)
        a = add if np.isscalar(add) else rng.integers(-3000, 3000, size=add)
        net.output(net.rqs(s, m, a, shift, signed=signed, attr_style=style, name="rqs"))
        if also_output:
            net.output(s)
        return net
    return build


CASES = [  # name, build, fused on Siracusa
    ("scalar_table", _softmax_rq((2, 3, 40)), True),                             # 240 elements: tabulated
    ("scalar_clips_both_ends", _softmax_rq((4, 64), mul=300, add=-20000, shift=6), True),
    ("scalar_small_direct", _softmax_rq((3, 20)), True),                         # < 128 elements: computed
    ("per_row", _softmax_rq((2, 5, 16), mul=(2, 5, 1), add=(2, 5, 1)), True),
    ("per_column", _softmax_rq((6, 24), mul=(24,), add=(1, 24)), True),
    ("per_row_mul_scalar_add_int16", _softmax_rq((3, 4, 12), mul=(3, 1, 1), lo=-3000, hi=3000), True),
    ("unsigned_n_levels_plain", _softmax_rq((4, 40), mul=900, add=100, shift=9, signed=False, style="int",
                                            attrs={**isoftmax_attrs(127), "n_levels": tensor_attr(128)}), True),
    ("int64_softmax", _softmax_rq((3, 50), mul=(3, 1), add=5, shift=8, attrs=_WIDE), True),
    ("softmax_also_an_output", _softmax_rq((2, 30), also_output=True), False),
    ("flat_channels_axis_1", _softmax_rq((1, 4, 32), mul=(4, 1, 1)), False),
]


def _fused_node(rng):
    """A RequantizediSoftmax node as written in a file (Generic runs no fusion pass): per-row mul."""
    net = Net("RequantizediSoftmax")
    x = net.input("input", ints_in(rng, -128, 127, (4, 3, 48)))
    mul, add = net.const(rng.integers(500, 4000, size=(4, 1, 1)), "mul"), net.const(np.array(-100), "add")
    attrs = {**isoftmax_attrs(64), "div": tensor_attr(2**9), "n_levels_out": tensor_attr(256),
             "signed": tensor_attr(1)}
    net.output(net.node("RequantizediSoftmax", [x, mul, add], attrs, ort=False))
    return net


def test_generic_fused_node_from_a_file(tmp_path, capsys):
    folder = tmp_path / "fused_node"
    write_test(_fused_node(np.random.default_rng(5)), folder)
    run_generic(folder, capsys)
    assert "iSoftmax_RQ_" in (folder / "generic" / "network" / "Network.c").read_text()


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case(request, tmp_path):
    name, build, fused = request.param
    folder = tmp_path / name
    write_test(build(np.random.default_rng(11)), folder)
    return folder, fused


def test_fused_when_the_softmax_feeds_only_the_requantisation(case):
    folder, fused = case
    ops = bound_ops(folder, "Siracusa")
    assert ("RequantizediSoftmax" in ops) == fused, ops
    assert ("iSoftmax" in ops) != fused and ("RequantShift" in ops) != fused, ops


batch_dir = case_batch([c[:2] for c in CASES], 11)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)


@needs_qemu
def test_siracusa_tiled(batch_dir, capsys):
    folder = batch_dir
    args = argparse.Namespace(test=str(folder), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(folder / "tiled"), cores=8, l1=L1, l2=TilingOptions.l2,
                              defaultMemLevel="L2", doublebuffer=True, profileTiling=None, plotMemAlloc=False,
                              timeout=None)
    code = run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(L1, TilingOptions.l2, "L2", True)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
