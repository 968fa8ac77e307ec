"""Running one generated kernel test folder bit-exactly on Generic and on Siracusa (the kernel
path tests share these)."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pytest

from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import run_test
from DeeployTest.testUtils.siracusa_runner import cluster_runner

SIRACUSA = cluster_runner("Siracusa", "TEST_SIRACUSA")
needs_qemu = pytest.mark.skipif(
    shutil.which("qemu-system-riscv32") is None or shutil.which("riscv64-unknown-elf-gcc") is None,
    reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def _check(code: int, out: str) -> None:
    assert code == 0, out
    assert "Errors: 0 out of" in out, out


def run_generic(case_dir: Path, capsys) -> None:
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(case_dir / "generic"))
    _check(run_test(args, GENERIC), capsys.readouterr().out)


def run_siracusa(case_dir: Path, cores: int, capsys) -> None:
    args = argparse.Namespace(test=str(case_dir), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(case_dir / f"siracusa{cores}"), cores=cores, profileUntiled=False,
                              timeout=None)
    _check(run_test(args, SIRACUSA, {"cores": cores}), capsys.readouterr().out)
