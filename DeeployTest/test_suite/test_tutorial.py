"""The upstream tutorial's command lines, typed as it gives them in DeeployTest: each runs, checks
its outputs and reports ``Errors: 0``; every runner answers ``--help``. The whole-network lines on
Siracusa take a few minutes together and run with ``-m slow``."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401 (QEMU present)

RUNNERS = ["testRunner_generic.py", "testRunner_siracusa.py", "testRunner_siracusa_w_neureka.py",
           "testRunner_tiled_siracusa.py", "testRunner_tiled_siracusa_w_neureka.py", "testRunner_cortexm.py",
           "testRunner_gap9.py", "testRunner_tiled_gap9.py", "testRunner_snitch.py", "testRunner_tiled_snitch.py",
           "testRunner_mempool.py", "testRunner_tiled_gap9_w_ne16.py"]

LLAMA = "Tests/Models/microLlama/microLlama64_parallel --cores=8 --l1 64000 --defaultMemLevel=L2"
LINES = [
    "testRunner_generic.py -t Tests/IntKernels/Add/Regular",
    "testRunner_siracusa.py -t Tests/IntKernels/Add/Regular --cores=8",
    "testRunner_cortexm.py -t Tests/IntKernels/Add/Regular",
    "testRunner_gap9.py -t Tests/IntKernels/Add/Regular",
    "testRunner_snitch.py -t Tests/IntKernels/Add/Regular/",
    "testRunner_mempool.py -t Tests/IntKernels/Add/Regular",
    "testRunner_generic.py  -t ./Tests/Models/miniMobileNetv2",
    "testRunner_siracusa.py  -t ./Tests/Models/miniMobileNetv2",
    pytest.param("testRunner_siracusa.py -t Tests/Models/microLlama/microLlama128 --cores=1", marks=pytest.mark.slow),
    pytest.param("testRunner_siracusa.py -t Tests/Models/microLlama/microLlama128 --cores=8", marks=pytest.mark.slow),
    pytest.param("testRunner_tiled_siracusa.py -t Tests/Models/microLlama/microLlama64_parallel --cores=8 --l1 8000 "
                 "--defaultMemLevel=L2", marks=pytest.mark.slow),
    pytest.param(f"testRunner_tiled_siracusa.py -t {LLAMA}", marks=pytest.mark.slow),
    pytest.param(f"testRunner_tiled_siracusa_w_neureka.py -t {LLAMA}", marks=pytest.mark.slow),
    pytest.param(f"testRunner_tiled_siracusa_w_neureka.py -t {LLAMA} --neureka-wmem", marks=pytest.mark.slow),
]


def _python(line: str) -> subprocess.CompletedProcess:
    """``python <line>`` run in DeeployTest, as the tutorial types it."""
    return subprocess.run([sys.executable, *shlex.split(line)], cwd=DEEPLOY_TEST, capture_output=True, text=True,
                          timeout=900)


@pytest.mark.parametrize("line", LINES)
def test_tutorial_line(line):
    proc = _python(line)
    assert proc.returncode == 0 and "Errors: 0 out of" in proc.stdout, proc.stdout[-2000:] + proc.stderr


@pytest.mark.parametrize("runner", RUNNERS)
def test_runner_help(runner):
    proc = _python(f"{runner} --help")
    assert proc.returncode == 0 and "-t TEST, --test TEST" in proc.stdout, proc.stderr
