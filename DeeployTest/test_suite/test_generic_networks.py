"""Every network, the project's own and the external corpus's, compiled for Generic, built with
CMake and run as host C: integer outputs must match the goldens bit-exactly, float outputs within
the harness's tolerance. The corpus's plain runs are behind ``-m slow``: by default its networks run
sanitized (test_sanitize.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from DeeployTest.generators.batch import batch_folder, batch_ids, batches
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import run_test
from Deeploy.errors import DeeployError
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, FLOAT_CORPUS, REJECTED, network_dirs

TESTS = DEEPLOY_TEST / "Tests"
OWN = network_dirs(DEEPLOY_TEST, "Tests")
# the single-kernel networks run merged, BATCH at a time (generators/batch.py); the others one by one
SINGLE_KERNEL = [d for d in OWN if d.relative_to(TESTS).parts[0] in ("Kernels", "IntKernels")]
BATCH = 16
KERNEL_BATCHES = batches([(str(d.relative_to(TESTS)), d) for d in SINGLE_KERNEL], BATCH)
EXTERNAL = network_dirs(CORPUS, "Kernels/Integer", "Models/miniMobileNetv2", "Models/microLlama/INT8", *FLOAT_CORPUS)


def _run(test_dir: Path, capsys) -> None:
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=None)
    code = run_test(args, GENERIC)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Errors: 0 out of" in out


@pytest.mark.parametrize("test_dir", [d for d in OWN if d not in SINGLE_KERNEL],
                         ids=[str(d.relative_to(TESTS)) for d in OWN if d not in SINGLE_KERNEL])
def test_own_network(test_dir, capsys):
    _run(test_dir, capsys)


@pytest.mark.parametrize("cases", KERNEL_BATCHES, ids=batch_ids(KERNEL_BATCHES))
def test_own_kernel_networks(cases, tmp_path, capsys):
    _run(batch_folder(cases, tmp_path), capsys)


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
