"""The CORE-V PULP extension on the QEMU cluster and its accounting by the timing plugin, both ways
QEMU runs it: the image rewritten into RV32IM stubs (Deeploy/targets/pulp/stubs.py, the default)
and every word through the runtime's trap-and-emulate (TargetLibraries/Siracusa/src/
deeploy_xpulp_emu.c), with TargetLibraries/Siracusa/examples/xpulp_check.c: every operation of
deeploy_xpulp.h against a C reference on random operands on all 8 cores, hardware loops
(one-instruction bodies, nesting, immediate forms, a body ending in a compressed instruction), then
two measured stretches on core 0 whose plugin counts are known exactly."""

from __future__ import annotations

import importlib.util
import struct

import pytest

from Deeploy.elf import sections
from Deeploy.errors import BuildError
from Deeploy.runtime.abi import LAYER_BASE, LAYER_END
from Deeploy.targets.pulp.stubs import rewrite, stubs_enabled
from Deeploy.targets.siracusa.qemu import run_elf
from Deeploy.targets.siracusa.records import read_records
from DeeployTest.test_suite.conftest import REPO
from DeeployTest.test_suite.test_virtual_platform import DEMO_DIR, _missing, needs_toolchain


@pytest.fixture(scope="module")
def check_elf(tmp_path_factory):
    if _missing:
        pytest.skip(f"virtual-platform toolchain missing ({', '.join(_missing)})")
    spec = importlib.util.spec_from_file_location("siracusa_run_demo", DEMO_DIR / "run_demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build_demo(tmp_path_factory.mktemp("xpulp") / "build", 8, target="xpulp_check")


_RUNS = {}


def _run(elf, mode):
    if mode not in _RUNS:
        _RUNS[mode] = run_elf(elf, 8, timeout=120, records=elf.with_name(f"records.{mode}.txt"),
                              stubs=mode == "stubs")
    return _RUNS[mode]


@pytest.fixture(scope="module", params=["traps", "stubs"])
def check_run(request, check_elf):
    return _run(check_elf, request.param)


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


@needs_toolchain
def test_stubs_and_traps_give_identical_plugin_records(check_elf):
    """Every record of every hart (instructions, accesses per region, classes, banks) is the same
    whether QEMU runs the stubs or traps on every word (each line names its hart and sequence
    number; only the interleaving of the harts' lines may differ)."""
    traps, stubs = _run(check_elf, "traps"), _run(check_elf, "stubs")
    assert traps.stdout == stubs.stdout
    assert sorted(traps.records.read_text().splitlines()) == sorted(stubs.records.read_text().splitlines())


@needs_toolchain
def test_a_calibration_program_has_the_same_records_both_ways(tmp_path):
    """gemm_4x2_i8 of the RTL calibration (benchmarks/fidelity/programs/dsp/: a hardware loop of
    post-increment loads and dot products) passes its own check and gives the same records whether
    its words run as stubs or through the emulator."""
    spec = importlib.util.spec_from_file_location("fidelity", REPO / "benchmarks" / "fidelity.py")
    fidelity = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fidelity)
    fidelity.build(tmp_path, ["gemm_4x2_i8"])
    elf = tmp_path / "gemm_4x2_i8_qemu"
    runs = {mode: run_elf(elf, 1, timeout=120, records=tmp_path / f"records.{mode}.txt", stubs=mode == "stubs")
            for mode in ("traps", "stubs")}
    assert [r.exit_code for r in runs.values()] == [0, 0]
    assert rewrite(elf).sites and not rewrite(elf).fallbacks
    traps, stubs = (r.records.read_text().splitlines() for r in runs.values())
    assert sorted(traps) == sorted(stubs)


@needs_toolchain
def test_the_rewrite_covers_the_measured_loops_and_leaves_a_compressed_loop_end_to_the_traps(check_elf):
    """The measured stretches run without a trap (their cv words and their loops' setups are
    sites); the loop whose body ends in a compressed instruction stays with the emulator (and the
    program still passes: the tests above)."""
    done = rewrite(check_elf)
    assert [reason for _, reason in done.fallbacks] == [
        "hardware loop 0: its last instruction is not a 32-bit one (compressed body: use .option norvc)"]
    kinds = [(w & 0x7F, (w >> 12) & 7) for w in done.sites.values()]
    assert kinds.count((0x7B, 1)) >= 5 + 4        # 4 x cv.sdotsp.b (layer 0), 1 (layer 1), dsp_loop's 4
    assert kinds.count((0x2B, 4)) >= 6            # hardware-loop setups
    _run(check_elf, "stubs")
    assert rewrite(check_elf).sites == done.sites    # the ELF keeps its CORE-V words: QEMU ran a copy


def test_the_environment_switches_the_stubs_off(monkeypatch):
    monkeypatch.delenv("DEEPLOY_XPULP_STUBS", raising=False)
    assert stubs_enabled()
    monkeypatch.setenv("DEEPLOY_XPULP_STUBS", "0")
    assert not stubs_enabled()


@needs_toolchain
def test_a_stub_reserve_too_small_is_one_clear_error(check_elf, tmp_path):
    """An image whose .deeploy_xpulp_stubs cannot hold its stubs: a BuildError naming the reserve and
    the ways out, nothing written."""
    data = bytearray(check_elf.read_bytes())
    shoff, = struct.unpack_from("<I", data, 0x20)
    shentsize, _, _ = struct.unpack_from("<HHH", data, 0x2E)
    k = [s.name for s in sections(bytes(data))].index(".deeploy_xpulp_stubs")
    struct.pack_into("<I", data, shoff + k * shentsize + 0x14, 64)    # sh_size
    small = tmp_path / "small"
    small.write_bytes(bytes(data))
    with pytest.raises(BuildError, match=r"need more than the 64 bytes .deeploy_xpulp_stubs reserves: raise "
                                         r"XPULP_STUB_BYTES .* or run with DEEPLOY_XPULP_STUBS=0"):
        run_elf(small, 8, timeout=60, records=tmp_path / "records.txt")
    assert not (tmp_path / "small.stubs").exists() and not (tmp_path / "records.txt").exists()
