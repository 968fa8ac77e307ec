"""Every network that runs untiled on Siracusa, run tiled (every layer out of L1, tiles moved by
DMA) under QEMU on 8 cores: outputs must match the goldens bit-exactly, or, for data in L2, the
compiler must refuse a network whose data truly exceeds --l2 with the clear error (the same
network then runs with --defaultMemLevel L3). Default configurations
cover both L1 sizes of the issue, data in L2 and in L3, single and double buffering; the full
cross product runs with ``-m slow``."""

from __future__ import annotations

import argparse
import itertools

import pytest

from Deeploy.errors import DeeployError
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.cluster import cluster_runner
from DeeployTest.testUtils.runner import run_test
from DeeployTest.tests.conftest import DEEPLOY_TEST
from DeeployTest.tests.test_siracusa_networks import NETWORKS, _id, pytestmark  # noqa: F401

TILED = cluster_runner("Siracusa", "TEST_SIRACUSA_TILED")

# (l1, default memory level, double buffering)
DEFAULT = [(64000, "L2", False), (16000, "L2", True), (64000, "L3", True)]
FULL = [c for c in itertools.product((64000, 16000), ("L2", "L3"), (False, True)) if c not in DEFAULT]


def run_tiled(test_dir, l1: int, level: str, db: bool, capsys, cores: int = 8, profile: bool = False) -> str:
    name = f"l1_{l1}_{level}_{'db' if db else 'sb'}"
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / name / _id(test_dir)
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=cores, l1=l1, l2=TilingOptions.l2, defaultMemLevel=level, doublebuffer=db,
                              profileTiling=profile, plotMemAlloc=False, timeout=None)
    try:
        code = run_test(args, TILED, {"cores": cores, "tiling": TilingOptions(l1, TilingOptions.l2, level, db)})
    except DeeployError as exc:
        if level == "L2" and "does not fit L2" in str(exc) and "--defaultMemLevel L3" in str(exc):
            return str(exc)
        raise
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Errors: 0 out of" in out and "Runtime: " in out, out
    return out


@pytest.mark.parametrize("config", DEFAULT, ids=[f"{c[0]}-{c[1]}-{'db' if c[2] else 'sb'}" for c in DEFAULT])
@pytest.mark.parametrize("test_dir", NETWORKS, ids=[_id(p) for p in NETWORKS])
def test_tiled_network(test_dir, config, capsys):
    run_tiled(test_dir, *config, capsys)


@pytest.mark.slow
@pytest.mark.parametrize("config", FULL, ids=[f"{c[0]}-{c[1]}-{'db' if c[2] else 'sb'}" for c in FULL])
@pytest.mark.parametrize("test_dir", NETWORKS, ids=[_id(p) for p in NETWORKS])
def test_tiled_network_full(test_dir, config, capsys):
    run_tiled(test_dir, *config, capsys)
