"""The harness's float comparison: a golden moved within the tolerance passes, one moved beyond it
fails with the mismatches counted, and the worst errors are printed next to the count."""

from __future__ import annotations

import argparse
import re
import shutil

import numpy as np
import pytest

from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.harness import FLOAT_TOLERANCE
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from Deeploy.ir.dtypes import FLOAT32

SOURCE = DEEPLOY_TEST / "Tests" / "Models" / "Float" / "MobileNet"


def _run_with_golden(tmp_path, factor, capsys):
    test = tmp_path / "test"
    shutil.copytree(SOURCE, test)
    with np.load(test / "outputs.npz") as data:
        golden = {k: data[k] for k in data.files}
    np.savez(test / "outputs.npz", **{k: (v * np.float32(factor)).astype(np.float32) for k, v in golden.items()})
    args = argparse.Namespace(test=str(test), verbose=False, skipgen=False, skipsim=False, gen_dir=str(tmp_path / "gen"))
    code = run_test(args, GENERIC)
    return code, capsys.readouterr().out


@pytest.mark.parametrize("within", (True, False), ids=("within_tolerance", "beyond_tolerance"))
def test_float_golden_tolerance(tmp_path, capsys, within):
    rtol, _ = FLOAT_TOLERANCE[FLOAT32]
    code, out = _run_with_golden(tmp_path, 1 + (0.3 if within else 3) * rtol, capsys)
    counts = re.search(r"Errors: (\d+) out of (\d+) \(float outputs: worst abs error (\S+), worst rel error (\S+);", out)
    assert counts, out
    errors = int(counts.group(1))
    worst_rel = float(counts.group(4))
    if within:
        assert code == 0 and errors == 0 and worst_rel < rtol
    else:
        assert code == 1 and errors > 0 and worst_rel > rtol and "Mismatch in output" in out
