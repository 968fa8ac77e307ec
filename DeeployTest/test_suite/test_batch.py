"""Merged kernel cases (``generators/batch.py``): the merged folder runs every case bit-exactly, a
wrong golden of one case fails the run with a mismatch naming that case, and cases of different
opsets are refused."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from DeeployTest.generators.batch import merge_tests
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import save_arrays, write_test
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import run_test
from Deeploy.frontend import load_npz_arrays
from DeeployTest.test_suite.kernel_cases import byte_values


def _add(rng, shape, opset=13):
    net = Net("Add", opset=opset)
    net.output(net.node("Add", [net.input("input_0", byte_values(rng, shape)),
                                net.input("input_1", byte_values(rng, shape))]))
    return net


def _run(folder, capsys) -> tuple[int, str]:
    args = argparse.Namespace(test=str(folder), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(folder / "generic"))
    code = run_test(args, GENERIC)
    return code, capsys.readouterr().out


def test_merged_cases_run_and_a_wrong_golden_names_its_case(tmp_path, capsys):
    rng = np.random.default_rng(3)
    write_test(_add(rng, (3, 5)), tmp_path / "first")
    write_test(_add(rng, (7,)), tmp_path / "second")
    batch = merge_tests([("first", tmp_path / "first"), ("second", tmp_path / "second")], tmp_path / "batch")
    code, out = _run(batch, capsys)
    assert code == 0 and "Errors: 0 out of 44" in out, out   # 2 runs of 15 + 7 outputs

    goldens = load_npz_arrays(batch / "outputs.npz")
    name = next(k for k in goldens if k.startswith("second."))
    goldens[name] = goldens[name].astype(np.int64) + 1
    save_arrays(batch / "outputs.npz", goldens)
    code, out = _run(batch, capsys)
    assert code != 0 and f"Mismatch in output '{name}'" in out and "'first." not in out, out


def test_cases_of_different_opsets_are_refused(tmp_path):
    rng = np.random.default_rng(3)
    write_test(_add(rng, (4,), opset=13), tmp_path / "a")
    write_test(_add(rng, (4,), opset=17), tmp_path / "b")
    with pytest.raises(ValueError, match="case 'b': opset 17"):
        merge_tests([("a", tmp_path / "a"), ("b", tmp_path / "b")], tmp_path / "batch")
