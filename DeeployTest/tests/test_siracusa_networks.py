"""Every network that runs on Generic, compiled for Siracusa, cross-compiled for RV32 and run
under QEMU on 1 and on 8 cluster cores: outputs must match the goldens bit-exactly and a
modelled cycle count must be reported."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from DeeployTest.testUtils.siracusa_runner import cluster_runner
from DeeployTest.testUtils.runner import run_test
from DeeployTest.tests.conftest import CORPUS, DEEPLOY_TEST, network_dirs

pytestmark = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")

NETWORKS = network_dirs(DEEPLOY_TEST, "Tests") + network_dirs(
    CORPUS, "Kernels/Integer", "Models/miniMobileNetv2", "Models/microLlama/INT8")
SIRACUSA = cluster_runner("Siracusa", "TEST_SIRACUSA")


def _id(path: Path) -> str:
    for root in (DEEPLOY_TEST / "Tests", CORPUS):
        if path.is_relative_to(root):
            return ("corpus/" if root == CORPUS else "") + str(path.relative_to(root))
    return path.name


@pytest.mark.parametrize("cores", [1, 8])
@pytest.mark.parametrize("test_dir", NETWORKS, ids=[_id(p) for p in NETWORKS])
def test_siracusa_network(test_dir, cores, capsys):
    gen = DEEPLOY_TEST / "TEST_SIRACUSA" / f"cores{cores}" / _id(test_dir)
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(gen), cores=cores, profileUntiled=False, timeout=None)
    code = run_test(args, SIRACUSA, {"cores": cores})
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Errors: 0 out of" in out and "Runtime: " in out, out
