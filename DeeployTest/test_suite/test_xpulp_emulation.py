"""The CORE-V PULP extension on the QEMU cluster (trap-and-emulate in the runtime,
TargetLibraries/Siracusa/src/deeploy_xpulp_emu.c) and its accounting by the timing plugin, with
TargetLibraries/Siracusa/examples/xpulp_check.c: every operation of deeploy_xpulp.h against a C
reference on random operands on all 8 cores, hardware loops (one-instruction bodies, nesting,
immediate forms), then two measured stretches on core 0 whose plugin counts are known exactly."""

from __future__ import annotations

import importlib.util

import pytest

from Deeploy.runtime.abi import LAYER_BASE, LAYER_END
from Deeploy.targets.siracusa.qemu import run_elf
from Deeploy.targets.siracusa.records import read_records
from DeeployTest.test_suite.test_virtual_platform import DEMO_DIR, _missing, needs_toolchain


@pytest.fixture(scope="module")
def check_run(tmp_path_factory):
    if _missing:
        pytest.skip(f"virtual-platform toolchain missing ({', '.join(_missing)})")
    spec = importlib.util.spec_from_file_location("siracusa_run_demo", DEMO_DIR / "run_demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    base = tmp_path_factory.mktemp("xpulp")
    elf = mod.build_demo(base / "build", 8, target="xpulp_check")
    return run_elf(elf, 8, timeout=120, records=base / "records.txt")


@needs_toolchain
def test_every_operation_matches_its_reference_on_8_cores(check_run):
    assert check_run.exit_code == 0, check_run.stdout
    assert "xpulp ok" in check_run.stdout


def _deltas(records, hart, first, last):
    """Counter deltas of hart between its records with markers first and last: {column: delta}."""
    recs = read_records(records)
    by_marker = {r.marker: r for r in recs.by_hart[hart]}
    a, b = by_marker[first].counters, by_marker[last].counters
    names = ["insns"] + [f"{r}_{k}" for r in recs.regions for k in ("ld", "st")] + list(recs.extra)
    return {n: y - x for n, x, y in zip(names, a, b)}


@needs_toolchain
def test_plugin_counts_a_hardware_loop_of_dot_products(check_run):
    """Layer 0: 100 trips of 4 x cv.sdotsp.b in a hardware loop: each emulated instruction counts
    once as simd, the loop-backs nothing (no taken branch, no jump), the handler nothing."""
    d = _deltas(check_run.records, 0, LAYER_BASE, LAYER_BASE + 1)
    assert d["simd"] == 400 and d["hwloop"] == 1
    assert d["taken"] == d["jump"] == d["loaduse"] == 0
    assert 401 <= d["insns"] <= 410, d["insns"]     # the loop, its setup, a few moves
    assert sum(v for k, v in d.items() if k.endswith(("_ld", "_st"))) == 0


@needs_toolchain
def test_plugin_counts_emulated_loads_as_the_cores(check_run):
    """Layer 1: 16 trips of { cv.lw post-increment from L1; cv.sdotsp.b reading it }: 16 L1 loads
    (not the emulator's stack traffic), 16 load-use stalls across the trap, 16 post-increments."""
    d = _deltas(check_run.records, 0, LAYER_BASE + 1, LAYER_END)
    assert d["L1_ld"] == 16 and d["L1_st"] == 0
    assert d["L2_ld"] == d["L2_st"] == 0
    assert d["postinc"] == 16 and d["simd"] == 16 and d["loaduse"] == 16 and d["hwloop"] == 1
    assert 33 <= d["insns"] <= 40, d["insns"]
    assert sum(d[f"bank{b}"] for b in range(16)) == 16
