#!/usr/bin/env python3
"""Fidelity of the Siracusa cycle model.

    python benchmarks/fidelity.py [--build-dir DIR] [--only NAME ...]
    python benchmarks/fidelity.py --networks

Default: the RTL calibration. Every program of benchmarks/fidelity/programs/ (the inner loops of
the kernel families and targeted instruction mixes, each checking its own result) is built for the
CV32E40P reference core (toolchain/rtl, Verilator) and for the QEMU cluster with one core; the
measured region's cycles on the RTL (mcycle) are printed beside the cycles the model computes from
the timing plugin's records of the QEMU run, and their deviation. The last line is
``rtl calibration: <N> programs, max deviation <X>%``. Programs of programs/dsp/ use the PULP DSP
extension and run only once its QEMU emulation (TargetLibraries/Siracusa/inc/deeploy_xpulp.h)
exists; until then they are listed as skipped.

``--networks``: beside each ratio the peer publishes (GVSoC, cores with XpulpV2), this model's
ratio before (``v1``: 1 cycle per instruction + memory latency) and after (``v2``: instruction
classes, TCDM bank and L2 path contention), both evaluated on the same timing-plugin records of
one run per configuration. Runs (8 cores unless stated): microLlama128 untiled on 1 and 8 cores;
microLlama64_parallel tiled (--l2 2000000, data in L2) at --l1 64000 and --l1 8000 with double
buffering, and at --l1 64000 with single buffering.
"""

from __future__ import annotations

import argparse
import subprocess
from dataclasses import replace
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.targets.pulp.rtl import run_rtl  # noqa: E402
from Deeploy.targets.siracusa.execute import last_run  # noqa: E402
from Deeploy.targets.siracusa.qemu import run_elf  # noqa: E402
from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING, TIMING_MODELS, model_cycles  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "Models" / "microLlama" / "INT8"
TILED = ["--l2", "2000000", "--defaultMemLevel", "L2"]
RUNS = {   # name: (runner, network, cores, extra flags)
    "ml128_1": ("testRunner_siracusa.py", "microLlama128", 1, []),
    "ml128_8": ("testRunner_siracusa.py", "microLlama128", 8, []),
    "ml64p_l1_64000": ("testRunner_tiled_siracusa.py", "microLlama64_parallel", 8,
                       TILED + ["--l1", "64000", "--doublebuffer"]),
    "ml64p_l1_8000": ("testRunner_tiled_siracusa.py", "microLlama64_parallel", 8,
                      TILED + ["--l1", "8000", "--doublebuffer"]),
    "ml64p_single": ("testRunner_tiled_siracusa.py", "microLlama64_parallel", 8, TILED + ["--l1", "64000"]),
}
# (what, numerator run, denominator run, peer's cycles as (numerator, denominator) or None)
RATIOS = (
    ("microLlama128 untiled, 1 vs 8 cores (speed-up)", "ml128_1", "ml128_8", (16.1e6, 3.1e6)),
    ("microLlama64_parallel tiled, L1 64000 vs 8000", "ml64p_l1_64000", "ml64p_l1_8000", (35.3e6, 47.5e6)),
    ("microLlama64_parallel, single vs double buffering", "ml64p_single", "ml64p_l1_64000", None),
)
GAP = ("What still separates the ratios: untiled, every core reads its operands from L2 at a derived "
       "14-cycle latency (not measured: the RTL reference is the core with a zero-wait memory), which "
       "lengthens the parallel compute relative to serial code and raises our multi-core speed-up; the "
       "L2/L3 DMA figures are derived too, the instruction cache (not modelled) adds misses on GVSoC, "
       "and the divider's operand-dependent time is an average.")


def records(tmp: Path, name: str) -> Path:
    runner, network, cores, extra = RUNS[name]
    gen = tmp / name
    cmd = [sys.executable, runner, "-t", str(CORPUS / network), f"--cores={cores}", "--gen-dir", str(gen), *extra]
    proc = subprocess.run(cmd, cwd=REPO / "DeeployTest", capture_output=True, text=True)
    if proc.returncode or "Errors: 0 out of" not in proc.stdout:
        raise SystemExit(f"run failed: {' '.join(cmd)}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    found = sorted(gen.rglob("*records*.txt"))
    if not found:
        raise SystemExit(f"no timing records under {gen}")
    return found[0]


def network_cycles(path: Path, model: str, **changes: float) -> float:
    timing = replace(TIMING_MODELS[model], **changes)
    return sum(layer.cycles for layer in last_run(model_cycles(path, timing)).layers)


def networks() -> int:
    with tempfile.TemporaryDirectory(prefix="deeploy_fidelity_") as tmp:
        paths = {name: records(Path(tmp), name) for name in RUNS}
        cycles = {(name, m): network_cycles(p, m) for name, p in paths.items() for m in TIMING_MODELS}
        what_if = {x: network_cycles(paths["ml128_1"], "v2", l2_path_cycles=x) /
                   network_cycles(paths["ml128_8"], "v2", l2_path_cycles=x) for x in (2.0, 3.0, 4.0)}
    print("modelled cycles (v1 -> v2):")
    for name in RUNS:
        print(f"  {name:16s} {cycles[(name, 'v1')]:>12,.0f} -> {cycles[(name, 'v2')]:>12,.0f}")
    print(f"\n{'ratio':52s} {'peer':>7s} {'v1':>7s} {'v2':>7s}")
    for what, num, den, peer in RATIOS:
        p = f"{peer[0] / peer[1]:.2f}" if peer else "n/a"
        r = [cycles[(num, m)] / cycles[(den, m)] for m in ("v1", "v2")]
        print(f"{what:52s} {p:>7s} {r[0]:7.2f} {r[1]:7.2f}")
    print(f"\nL2 contention (v2): each core access occupies the cluster's L2 path "
          f"{SIRACUSA_TIMING.l2_path_cycles:g} cycle; a blocking core issues at most one L2 access per "
          f"{1 + SIRACUSA_TIMING.l2_latency:g} cycles, so 8 cores need at most "
          f"{8 * SIRACUSA_TIMING.l2_path_cycles / (1 + SIRACUSA_TIMING.l2_latency):.0%} of the path and "
          f"microLlama128's speed-up moves only from {cycles[('ml128_1', 'v1')] / cycles[('ml128_8', 'v1')]:.2f} to "
          f"{cycles[('ml128_1', 'v2')] / cycles[('ml128_8', 'v2')]:.2f} (mostly the instruction classes).")
    print("what if the path were slower (l2_path_cycles -> microLlama128 1 vs 8 cores): " +
          ", ".join(f"{x:g} -> {r:.2f}" for x, r in what_if.items()))
    print("\n" + GAP)
    return 0


# ---- RTL calibration ----------------------------------------------------------------------------
PROGRAMS = REPO / "benchmarks" / "fidelity"
DSP_HEADER = REPO / "TargetLibraries" / "Siracusa" / "inc" / "deeploy_xpulp.h"
GOAL = 2.0   # percent
# The RTL's memory answers every access in one cycle (toolchain/rtl/tb.cpp), the QEMU build keeps its
# data in L2: the model of the core alone charges every region as L1 (no extra latency).
CORE_ONLY = replace(SIRACUSA_TIMING, l2_latency=0.0, l3_latency=0.0, other_latency=0.0)


class Program(NamedTuple):
    name: str
    rtl_cycles: int           # mcycle over the measured region
    model_cycles: float       # the model on the QEMU run's records (layer 0)
    counters: dict[str, int]  # the RTL's counters over the region (Deeploy/targets/pulp/rtl.py)

    @property
    def deviation(self) -> float:
        """(model - RTL) / RTL in percent."""
        return 100.0 * (self.model_cycles - self.rtl_cycles) / self.rtl_cycles


def program_names() -> tuple[list[str], list[str]]:
    """(the programs to run, the DSP programs skipped because their emulation is missing)."""
    plain = sorted(p.stem for p in (PROGRAMS / "programs").glob("*.c"))
    dsp = sorted(p.stem for p in (PROGRAMS / "programs" / "dsp").glob("*.c"))
    return (plain + dsp, []) if DSP_HEADER.is_file() else (plain, dsp)


def build(build_dir: Path, names: list[str]) -> None:
    """Configure and build the programs' RTL and QEMU ELFs into build_dir."""
    targets = [f"{n}_{kind}" for n in names for kind in ("rtl", "qemu")]
    for cmd in (["cmake", "-S", str(PROGRAMS), "-B", str(build_dir), "-G", "Ninja"],
                ["cmake", "--build", str(build_dir), "-j", "2", "--target", *targets]):
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")


def kernel_code(elf: Path) -> tuple[int, list[tuple[int, str]]]:
    """(address mod 4, [(bytes, mnemonic)]) of the instructions of the ELF's measured function."""
    proc = subprocess.run(["riscv64-unknown-elf-objdump", "-d", str(elf)], capture_output=True, text=True, check=True)
    start, code, inside = None, [], False
    for line in proc.stdout.splitlines():
        if line.endswith(">:"):
            inside = line.split("<", 1)[1].startswith("kernel")
            if inside and start is None:
                start = int(line.split()[0], 16) % 4
        elif inside and line.count("\t") >= 2:
            raw, insn = line.split("\t")[1:3]
            code.append((len(raw.replace(" ", "")) // 2, insn.split()[0] if insn.split() else ""))
    if start is None:
        raise SystemExit(f"{elf}: no measured function (kernel)")
    return start, code


def measure(build_dir: Path, name: str) -> Program:
    """Run one built program on the RTL and on QEMU; SystemExit if either fails its own check or
    if the two builds' measured functions differ in instructions, sizes or alignment."""
    if kernel_code(build_dir / f"{name}_rtl") != kernel_code(build_dir / f"{name}_qemu"):
        raise SystemExit(f"{name}: the RTL and QEMU builds' kernel functions differ (instructions or alignment)")
    rtl = run_rtl(build_dir / f"{name}_rtl")
    if not rtl.passed or "cycles" not in rtl.counters:
        raise SystemExit(f"{name}: the RTL run failed (exit code {rtl.exit_code}): {rtl.stdout[-500:]}")
    qemu = run_elf(build_dir / f"{name}_qemu", 1, timeout=120, records=build_dir / f"{name}.records.txt")
    if qemu.exit_code:
        raise SystemExit(f"{name}: the QEMU run failed its check (exit code {qemu.exit_code}): {qemu.stdout[-500:]}")
    layers = model_cycles(qemu.records, CORE_ONLY).per_layer()
    return Program(name, rtl.counters["cycles"], layers[0], rtl.counters)


def calibrate(build_dir: Path, names: list[str]) -> list[Program]:
    build(build_dir, names)
    return [measure(build_dir, n) for n in names]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--networks", action="store_true", help="the network ratios beside the peer's instead")
    p.add_argument("--build-dir", type=Path, help="build directory (default: a temporary one)")
    p.add_argument("--only", nargs="+", metavar="NAME", help="run only these programs")
    p.add_argument("-v", "--verbose", action="store_true", help="print the RTL's event counters too")
    a = p.parse_args()
    if a.networks:
        return networks()
    names, skipped = program_names()
    if a.only:
        unknown = sorted(set(a.only) - set(names) - set(skipped))
        if unknown:
            raise SystemExit(f"unknown programs: {', '.join(unknown)} (see benchmarks/fidelity/programs/)")
        names = [n for n in names if n in a.only]
    with tempfile.TemporaryDirectory(prefix="deeploy_fidelity_") as tmp:
        rows = calibrate(a.build_dir or Path(tmp), names)
    print(f"{'program':28s} {'RTL':>10s} {'model':>10s} {'deviation':>9s}")
    for r in rows:
        print(f"{r.name:28s} {r.rtl_cycles:10d} {r.model_cycles:10.0f} {r.deviation:+8.2f}%")
        if a.verbose:
            print("    " + " ".join(f"{k}={v}" for k, v in r.counters.items() if v))
    for n in skipped:
        print(f"skipped {n}: needs the PULP DSP extension's QEMU emulation ({DSP_HEADER.relative_to(REPO)})")
    worst = max((abs(r.deviation) for r in rows), default=0.0)
    print(f"rtl calibration: {len(rows)} programs, max deviation {worst:.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
