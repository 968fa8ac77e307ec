"""The Generic C of every network of the external corpus (integer and float) and of the fuzz slice,
built with ``-fsanitize=address,undefined -fno-sanitize-recover=all`` (``DEEPLOY_SANITIZE``) and
run: no sanitizer report (any report aborts the run) and outputs still bit-exact (float ones
within the harness's tolerance)."""

from __future__ import annotations

import argparse
import shutil

import pytest

from DeeployTest.generators.batch import batch_folder, batch_ids, batches
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.conftest import CORPUS, FLOAT_CORPUS, REJECTED, network_dirs

pytestmark = [pytest.mark.sanitize,
              pytest.mark.skipif(shutil.which("cc") is None, reason="no host C compiler")]

INTEGER_NETWORKS = network_dirs(CORPUS, "Kernels/Integer", "Models/miniMobileNetv2", "Models/microLlama/INT8")
FLOAT_NETWORKS = [d for d in network_dirs(CORPUS, *FLOAT_CORPUS) if str(d.relative_to(CORPUS)) not in REJECTED]
NETWORKS = INTEGER_NETWORKS + FLOAT_NETWORKS
# the single-kernel networks run merged, BATCH at a time (generators/batch.py); the models one by one
KERNELS = [d for d in NETWORKS if d.relative_to(CORPUS).parts[0] == "Kernels"]
BATCH = 16
# (integer and float networks apart: whether a FLOAT-declared tensor holds integers is decided per graph)
KERNEL_BATCHES = batches([(str(d.relative_to(CORPUS)), d) for d in KERNELS], BATCH,
                         kind=lambda d: d.relative_to(CORPUS).parts[1])
# microLlama64 runs by default; its larger siblings use the same kernels on larger shapes (-m slow)
LARGER_SIBLINGS = {"microLlama128", "microLlama64_parallel"}


def _params() -> list:
    return [pytest.param(d, id=str(d.relative_to(CORPUS)), marks=pytest.mark.slow if d.name in LARGER_SIBLINGS else ())
            for d in NETWORKS if d not in KERNELS]


def _run_sanitized(test_dir, gen, capsys) -> None:
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(gen), sanitize=True)
    code = run_test(args, GENERIC)
    captured = capsys.readouterr()
    assert code == 0 and "Errors: 0 out of" in captured.out, captured.out + captured.err
    assert "DEEPLOY_SANITIZE:BOOL=ON" in (gen / "build" / "CMakeCache.txt").read_text()


@pytest.mark.parametrize("test_dir", _params())
def test_corpus_network_sanitized(test_dir, corpus, tmp_path, capsys):
    _run_sanitized(test_dir, tmp_path / "gen", capsys)


@pytest.mark.parametrize("cases", KERNEL_BATCHES, ids=batch_ids(KERNEL_BATCHES))
def test_corpus_kernels_sanitized(cases, corpus, tmp_path, capsys):
    _run_sanitized(batch_folder(cases, tmp_path), tmp_path / "gen", capsys)


# the default suite runs the first 2 batches of each slice under the sanitizers; -m slow all 10
# (at least ``least`` graphs: the first batch is the strategy's smallest example, one graph)
@pytest.mark.parametrize("batches,least", ((2, 20), pytest.param(10, 150, marks=pytest.mark.slow)))
@pytest.mark.parametrize("custom_ops", (False, True), ids=("standard_ops", "custom_ops"))
def test_fuzz_slice_sanitized(tmp_path, custom_ops, batches, least):
    """The deterministic fuzz slice of test_fuzz.py (standard ops, or with the custom ops) under the
    sanitizers."""
    pytest.importorskip("hypothesis")
    from DeeployTest.test_suite.test_fuzz import generic_slice

    assert generic_slice(tmp_path, custom_ops, sanitize=True, count=batches) >= least
