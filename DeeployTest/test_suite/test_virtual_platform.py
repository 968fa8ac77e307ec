"""The Siracusa virtual platform: generated linker script, cluster runtime on QEMU, timing plugin
and cycle model, exercised with the matmul demo and the DMA demo (TargetLibraries/Siracusa/examples)
on 1 and 8 cores. Tests that build or run need the toolchain of `bash toolchain/install.sh`."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess

import pytest

from Deeploy.errors import BuildError
from Deeploy.targets import get_platform
from Deeploy.targets.siracusa.linker import (l1_reserved_bytes, link_error_message, linker_script,
                                             memory_map, qemu_ram_bytes)
from Deeploy.resources import timing_plugin
from Deeploy.targets.siracusa.qemu import qemu_command, run_elf
from Deeploy.targets.siracusa.timing import model_cycles, read_records
from DeeployTest.test_suite.conftest import REPO

# the module fixture builds once: the tests stay on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("virtual_platform")

SIRACUSA_LEVELS = get_platform("Siracusa").memory

DEMO_DIR = REPO / "TargetLibraries" / "Siracusa" / "examples"

_missing = [t for t in ("riscv64-unknown-elf-gcc", "qemu-system-riscv32", "cmake") if shutil.which(t) is None]
PLUGIN = timing_plugin(build=False)   # the checkout's toolchain/build/ (toolchain/install.sh)
if not PLUGIN.is_file():
    _missing.append(f"the timing plugin {PLUGIN.relative_to(REPO)}")
needs_toolchain = pytest.mark.skipif(
    bool(_missing), reason=f"virtual-platform toolchain missing ({', '.join(_missing)}): run `bash toolchain/install.sh`")


def _demo_module():
    spec = importlib.util.spec_from_file_location("siracusa_run_demo", DEMO_DIR / "run_demo.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---- linker script (no toolchain needed) -------------------------------------------------------

def test_memory_map_and_script():
    regions = {r.name: r for r in memory_map(SIRACUSA_LEVELS)}
    assert regions["L2"].origin == 0x8000_0000 and regions["L2"].length == 2 << 20
    assert regions["L1"].origin == 0x9000_0000 and regions["L1"].length == 256 << 10
    assert regions["L3"].origin == 0xA000_0000 and regions["L3"].length == 16 << 20
    assert qemu_ram_bytes(SIRACUSA_LEVELS) >= regions["L3"].end - 0x8000_0000 + (1 << 20)
    script = linker_script(SIRACUSA_LEVELS)
    for needle in ("L2   (rwx) : ORIGIN = 0x80000000, LENGTH = 0x200000", "ENTRY(_deeploy_entry)",
                   "*(.l1_bss .l1_bss.*)", "*(.l2_bss .l2_bss.*)", "*(.l2_rodata .l2_rodata.*)",
                   "*(.l3_rodata .l3_rodata.*)", "} > L3 :l3", "__stack = .;"):
        assert needle in script, needle
    assert l1_reserved_bytes() == 8 * 1024 + 7 * 2 * 1024


def test_linker_script_rejects_bad_levels():
    with pytest.raises(ValueError, match="L1"):
        linker_script([("L2", 1 << 20)])
    with pytest.raises(ValueError, match="positive size"):
        linker_script([("L1", None), ("L2", 1 << 20)])
    script = linker_script([("L1", 64 << 10), ("L2", 1 << 20)])   # no L3: its sections go to L2
    assert "L3" not in script.split("SECTIONS")[0] and "} > L2 :rodata" in script


def test_link_error_message():
    ld = ("/usr/bin/ld: deeploy_test section `.l2_bss' will not fit in region `L2'\n"
          "/usr/bin/ld: region `L2' overflowed by 5152 bytes\ncollect2: error: ld returned 1 exit status\n")
    msg = link_error_message(ld, SIRACUSA_LEVELS)
    assert msg.startswith("network does not fit L2 (2097152 bytes): over by 5152 bytes; ")
    assert ".l2_bss" in msg and "\n" not in msg
    assert link_error_message("undefined reference to `foo'", SIRACUSA_LEVELS) is None


# ---- the demo on QEMU ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """Build the demo for 1 and 8 cores and run each twice: {cores: (elf, [run, run])}."""
    if _missing:
        pytest.skip(f"virtual-platform toolchain missing ({', '.join(_missing)}): run `bash toolchain/install.sh`")
    mod = _demo_module()
    base = tmp_path_factory.mktemp("siracusa_demo")
    out = {}
    for n in (1, 8):
        elf = mod.build_demo(base / f"cores{n}", n)
        out[n] = (elf, [run_elf(elf, n, timeout=60, records=base / f"records{n}_{k}.txt") for k in (1, 2)])
    return out


@needs_toolchain
def test_demo_same_checksum_on_1_and_8_cores(demo):
    mod = _demo_module()
    sums = set()
    for n, (_elf, runs) in demo.items():
        for run in runs:
            assert run.exit_code == 0, run.stdout
            assert f"cores {n}" in run.stdout
            sums.add(mod.checksum(run.stdout))
    assert len(sums) == 1


@needs_toolchain
def test_records_are_deterministic(demo):
    for n, (_elf, runs) in demo.items():
        first, second = (r.records.read_bytes() for r in runs)
        assert first == second, f"{n} cores: record files differ between two runs"
        harts = read_records(runs[0].records).by_hart
        assert sorted(harts) == list(range(n))


@needs_toolchain
def test_eight_cores_do_an_eighth_of_the_work(demo):
    one = model_cycles(demo[1][1][0].records)
    eight = model_cycles(demo[8][1][0].records)
    (f1,), (f8,) = one.forks, eight.forks
    assert (f1.cores, f8.cores) == (1, 8) and f1.phases == f8.phases == 2     # one barrier inside
    assert len(set(f8.core_insns)) == 1                                      # 8 rows each: balanced
    ratio = f1.core_insns[0] / max(f8.core_insns)
    assert 7.9 < ratio < 8.1, ratio
    assert f1.core_insns[0] > 1_500_000                                      # 64*64*64 MACs on one core
    assert 7.5 < f1.cycles / f8.cycles < 8.1
    assert one.per_layer()[0] == eight.per_layer()[0]                        # serial initialisation
    assert one.per_layer()[1] / eight.per_layer()[1] > 7.5


@needs_toolchain
def test_fewer_harts_than_cores_is_an_error(demo):
    elf8 = demo[8][0]
    with pytest.raises(BuildError, match="built for 8 cores"):
        run_elf(elf8, 4)
    # the runtime itself refuses too, instead of hanging in the first fork
    cmd = qemu_command(elf8, 4, qemu_ram_bytes(SIRACUSA_LEVELS))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert proc.returncode == 3
    assert "QEMU has only 4 harts" in proc.stdout


@needs_toolchain
def test_overfull_level_fails_at_link_time(tmp_path):
    levels = [("L1", 16 << 10), ("L2", 2 << 20), ("L3", 16 << 20)]      # C (16 KiB) + stacks > 16 KiB
    script = tmp_path / "small_l1.ld"
    script.write_text(linker_script(levels))
    with pytest.raises(RuntimeError) as info:
        _demo_module().build_demo(tmp_path / "build", 8, linker_script=script)
    msg = link_error_message(str(info.value), levels)
    assert msg is not None and msg.startswith("network does not fit L1 (16384 bytes): over by "), msg


# ---- the DMA demo on QEMU ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def dma_demo(tmp_path_factory):
    """Build the DMA demo for 1 and 8 cores and run each twice: {cores: (elf, [run, run])}."""
    if _missing:
        pytest.skip(f"virtual-platform toolchain missing ({', '.join(_missing)}): run `bash toolchain/install.sh`")
    mod = _demo_module()
    base = tmp_path_factory.mktemp("siracusa_dma_demo")
    out = {}
    for n in (1, 8):
        elf = mod.build_demo(base / f"cores{n}", n, target="dma_demo")
        out[n] = (elf, [run_elf(elf, n, timeout=60, records=base / f"records{n}_{k}.txt") for k in (1, 2)])
    return out


@needs_toolchain
def test_dma_demo_matches_the_plain_loop(dma_demo):
    mod = _demo_module()
    sums = set()
    for n, (_elf, runs) in dma_demo.items():
        for run in runs:
            assert run.exit_code == 0, run.stdout
            assert f"cores {n}" in run.stdout
            sums.add(mod.checksum(run.stdout))
            single, double, plain = re.search(r"single-buffered (0x\w+) double-buffered (0x\w+) plain loop (0x\w+)",
                                              run.stdout).groups()
            assert single == double == plain == mod.checksum(run.stdout)
    assert len(sums) == 1


@needs_toolchain
def test_dma_records_are_deterministic_and_complete(dma_demo):
    transfers = {}
    for n, (_elf, runs) in dma_demo.items():
        first, second = (r.records.read_bytes() for r in runs)
        assert first == second, f"{n} cores: record files differ between two runs"
        recs = read_records(runs[0].records)
        assert sorted(recs.by_hart) == list(range(n))
        assert recs.regions == ("L2", "L1", "L3", "other")
        dma = sorted(recs.dma.values(), key=lambda d: d.seq)
        assert all(d.hart == 0 for d in dma)                          # core 0 issues in the demo
        l3 = [d for d in dma if d.engine == 1]
        cluster = [d for d in dma if d.engine == 0]
        # the L3 round trip: 3-D, 16 planes (commands) of 64 rows of 32 bytes, L2 -> L3 -> L2
        assert [(d.commands, d.rows, d.bytes) for d in l3] == [(16, 1024, 32768)] * 2
        assert [(d.read, d.written) for d in l3] == [((32768, 0, 0, 0), (0, 0, 32768, 0)),
                                                    ((0, 0, 32768, 0), (32768, 0, 0, 0))]
        # 16 tiles x (load + store) x 2 variants, each 64 rows of 32 bytes between L2 and L1
        assert len(cluster) == 64 and {(d.commands, d.rows, d.bytes) for d in cluster} == {(1, 64, 2048)}
        assert sum(d.read[0] for d in cluster) == sum(d.written[1] for d in cluster) == 32 * 2048
        assert sum(d.read[1] for d in cluster) == sum(d.written[0] for d in cluster) == 32 * 2048
        # every wait names the transfer it waited for, in issue order
        waits = sorted(recs.waits.values(), key=lambda w: w.seq)
        assert sum(w.retired for w in waits if w.engine == 0) == 64
        assert [w.transfer for w in waits if w.engine == 1] == [0, 1]
        transfers[n] = [(d.engine, d.commands, d.rows, d.read, d.written) for d in dma]
    assert transfers[1] == transfers[8]                               # the same transfers on 1 and 8 cores


@needs_toolchain
def test_dma_copies_are_not_core_work(dma_demo):
    for n, (_elf, runs) in dma_demo.items():
        recs = read_records(runs[0].records)
        h0 = recs.by_hart[0]
        lo = next(r for r in h0 if r.marker == 0x101)                 # the L3 round trip: 64 KiB copied
        hi = next(r for r in h0 if r.marker == 0x102)
        assert hi.insns - lo.insns < 50
        assert all(a == b for a, b in zip(lo.counters[1:], hi.counters[1:]))   # no core memory access
        res = model_cycles(runs[0].records)
        l3 = [d for d in res.dma if d.engine == 1]
        assert [d.dst for d in l3] == ["L3", "L2"] and [d.src for d in l3] == ["L2", "L3"]
        # serial: each transfer is waited for at once, so the layer lasts the two transfers
        assert abs(res.per_layer()[1] - sum(d.cycles for d in l3)) < 50
        assert l3[0].duration == 1024 * (32 + 8 + 12)                 # per row: HyperBus command + latency


@needs_toolchain
def test_double_buffering_hides_the_dma(dma_demo):
    mod = _demo_module()
    for n, (_elf, runs) in dma_demo.items():
        res = model_cycles(runs[0].records)
        v = mod.dma_variants(res)
        sb, db = v["single-buffered"], v["double-buffered"]
        print(f"\n{n} core(s):\n" + mod.dma_report(res))
        assert sb["transfers"] == db["transfers"] == 32
        assert sb["dma"] == db["dma"] > 0                             # the same transfers
        # single-buffered: every transfer is waited for right after its issue: all exposed
        assert sb["stall"] == sb["dma"]
        # double-buffered: only the first load and the last store are exposed
        one = sb["dma"] / 32
        assert db["stall"] <= 2 * one
        assert db["exposed"] < 0.1
        # the modelled saving is the hidden DMA time (minus/plus a few barriers)
        saved = sb["cycles"] - db["cycles"]
        assert 0.9 * (sb["stall"] - db["stall"]) < saved < 1.1 * (sb["stall"] - db["stall"]) + 16 * 11


MISUSE_C = r"""
#include "deeploy_dma.h"
static char l2_a[64] DEEPLOY_L2, l2_b[64] DEEPLOY_L2, l1_a[64] DEEPLOY_L1;
int main(void) {
#if CASE == 0
  deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, deeploy_dma_copy(DEEPLOY_DMA_CLUSTER, l2_a, l2_b, 64));
#elif CASE == 1
  deeploy_dma_wait(DEEPLOY_DMA_L3, deeploy_dma_copy(DEEPLOY_DMA_L3, l1_a, l2_b, 64));
#elif CASE == 2
  deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, 1);
#else
  DEEPLOY_MARKER(DEEPLOY_RT_DMA_RETIRE);
#endif
  return 0;
}
"""

MISUSE_CMAKE = """
cmake_minimum_required(VERSION 3.13)
include({repo}/cmake/Siracusa.cmake)
project(DmaMisuse C)
foreach(c 0 1 2 3)
  add_executable(misuse${{c}} misuse.c)
  target_compile_definitions(misuse${{c}} PRIVATE CASE=${{c}})
  deeploy_platform_setup(EXECUTABLES misuse${{c}})
endforeach()
"""


@needs_toolchain
def test_dma_misuse_is_reported(tmp_path):
    (tmp_path / "misuse.c").write_text(MISUSE_C)
    (tmp_path / "CMakeLists.txt").write_text(MISUSE_CMAKE.format(repo=REPO))
    for cmd in (["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "build"), "-DNUM_CORES=1"],
                ["cmake", "--build", str(tmp_path / "build")]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    expected = {0: "cluster DMA copies between L2 and L1: destination in level 2, source in level 2",
                1: "L3 DMA copies between L3 and L2 (or into the weight memory, level 4): destination in level 1",
                2: "core 0 waits for DMA transfer 1 of engine 0, but has issued fewer"}
    for case, msg in expected.items():
        run = run_elf(tmp_path / "build" / f"misuse{case}", 1, timeout=30)
        assert run.exit_code == 3 and msg in run.stdout, run.stdout
    # a DMA marker outside a window: the plugin reports it and the record reader refuses the file
    run = run_elf(tmp_path / "build" / "misuse3", 1, timeout=30)
    assert run.exit_code == 0
    with pytest.raises(ValueError, match="DMA marker outside an issue or wait window"):
        read_records(run.records)
