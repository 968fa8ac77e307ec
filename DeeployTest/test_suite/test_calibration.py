"""The cycle model against hand-computed counts: the calibration kernels of benchmarks/calibration/
(taken branches, mulh, load-use, TCDM bank conflicts, 8 cores streaming from L2) run on QEMU with
the timing plugin; each modelled count must be within 2% of the count derived from the loop
structure and the CV32E40P manual (benchmarks/calibration.py), and the model must see the bank
conflict (same bank clearly slower than different banks)."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

from Deeploy.resources import timing_plugin
from DeeployTest.test_suite.conftest import REPO

_missing = [t for t in ("riscv64-unknown-elf-gcc", "qemu-system-riscv32", "cmake") if shutil.which(t) is None]
if not timing_plugin(build=False).is_file():
    _missing.append("the timing plugin")
# the module fixture builds once: the tests stay on one worker (--dist loadgroup)
pytestmark = [pytest.mark.skipif(bool(_missing), reason=f"toolchain missing ({', '.join(_missing)})"),
              pytest.mark.xdist_group("calibration")]


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("calibration", REPO / "benchmarks" / "calibration.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return {name: (model, expected) for name, model, expected in mod.calibrate(tmp_path_factory.mktemp("cal"))}


def test_every_kernel_within_two_percent(rows):
    assert len(rows) == 7
    for name, (model, expected) in rows.items():
        assert abs(model - expected) <= 0.02 * expected, f"{name}: model {model:.0f}, expected {expected}"


def test_bank_conflicts_are_visible(rows):
    same, _ = rows["8 cores, same L1 bank"]
    different, _ = rows["8 cores, different banks"]
    assert same > 1.5 * different
