"""Every network, the project's own and the external corpus's, compiled for Generic, built with
CMake and run as host C: integer outputs must match the goldens bit-exactly, float outputs within
the harness's tolerance. The corpus's plain runs are behind ``-m slow``: by default its networks run
sanitized (test_sanitize.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import run_test
from Deeploy.errors import DeeployError
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, FLOAT_CORPUS, REJECTED, network_dirs

OWN = network_dirs(DEEPLOY_TEST, "Tests")
EXTERNAL = network_dirs(CORPUS, "Kernels/Integer", "Models/miniMobileNetv2", "Models/microLlama/INT8", *FLOAT_CORPUS)


def _run(test_dir: Path, capsys) -> None:
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=None)
    code = run_test(args, GENERIC)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Errors: 0 out of" in out


@pytest.mark.parametrize("test_dir", OWN, ids=[str(p.relative_to(DEEPLOY_TEST / "Tests")) for p in OWN])
def test_own_network(test_dir, capsys):
    _run(test_dir, capsys)


# the corpus's plain runs are slow: the default suite runs the same networks under the sanitizers
# (test_sanitize.py), which check the same outputs
@pytest.mark.slow
@pytest.mark.parametrize("test_dir", EXTERNAL, ids=[str(p.relative_to(CORPUS)) for p in EXTERNAL])
def test_corpus_network(test_dir, corpus, capsys):
    reason = REJECTED.get(str(test_dir.relative_to(CORPUS)))
    if reason is None:
        _run(test_dir, capsys)
        return
    with pytest.raises(DeeployError, match=reason):
        _run(test_dir, capsys)
