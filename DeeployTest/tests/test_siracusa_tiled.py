"""Every network that runs untiled on Siracusa, run tiled (every layer out of L1, tiles moved by
DMA) under QEMU on 8 cores: outputs must match the goldens bit-exactly, or, for data in L2, the
compiler must refuse a network whose data truly exceeds --l2 with the clear error (the same
network then runs with --defaultMemLevel L3). Default configurations
cover both L1 sizes of the issue, data in L2 and in L3, single and double buffering; the full
cross product runs with ``-m slow``."""

from __future__ import annotations

import argparse
import itertools
import json
import re
import subprocess
import sys

import pytest

from Deeploy.errors import DeeployError
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.siracusa_runner import cluster_runner
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


MINI = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"


def test_profile_traces_every_tile(capsys):
    """--profileTiling: three phase lines per L1 tile of every tiled layer, as many tiles as the
    generated schedule has, with their ops, and a per-layer summary."""
    out = run_tiled(MINI, 16000, "L2", True, capsys, profile=True)
    manifest = json.loads((DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "l1_16000_L2_db" / _id(MINI) / "network" /
                           "manifest.json").read_text())
    assert manifest["tiles"]
    for entry in manifest["tiles"]:
        lines = [line for line in out.splitlines() if line.startswith(f"[{entry['layer']} L1][{entry['buffering']}]")]
        assert len(lines) == 3 * len(entry["tile_ops"]) == 3 * entry["tiles"], entry["layer"]
        for k, ops in enumerate(entry["tile_ops"]):
            head = f"[{entry['layer']} L1][{entry['buffering']}][{ops} ops][Tile {k}]"
            for phase in ("Input DMA", "Kernel", "Output DMA"):
                assert re.search(re.escape(f"{head} {phase} took ") + r"\d+ cycles", out), (head, phase)
        assert re.search(re.escape(f"[{entry['layer']}] {len(entry['tile_ops'])} tiles") + r".*hidden", out)


def test_infeasible_l1_names_layer_and_smallest_l1(tmp_path):
    """A too small --l1: one error naming the layer, what keeps its tiles large, and the smallest
    --l1 that fits every layer; exit code 1 and no generated network."""
    gen = tmp_path / "gen"
    proc = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t", str(MINI),
                           "--l1", "100", "--gen-dir", str(gen)], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "does not fit L1 = 100 B" in proc.stderr and "stays whole" in proc.stderr, proc.stderr
    need = int(re.search(r"the smallest size that fits every layer is (\d+) B", proc.stderr).group(1))
    assert "Traceback" not in proc.stderr and not (gen / "network").exists()
    ok = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_tiled_siracusa.py"), "-t", str(MINI),
                         "--l1", str(need), "--skipsim", "--gen-dir", str(gen)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def test_plot_memory_allocation(tmp_path, capsys):
    """--plotMemAlloc writes one HTML page with a panel per memory level and the tile slots."""
    args = argparse.Namespace(test=str(MINI), verbose=False, skipgen=False, skipsim=True, gen_dir=str(tmp_path),
                              cores=8, l1=16000, l2=TilingOptions.l2, defaultMemLevel="L3", doublebuffer=True,
                              profileTiling=False, plotMemAlloc=True, timeout=None)
    assert run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(16000, TilingOptions.l2, "L3", True)}) == 0
    page = (tmp_path / "memory_allocation.html").read_text()
    for level in ("L1", "L2", "L3"):
        assert f">{level}" in page
    assert "tile (slot 1/" in page and "L2 tile" in page
