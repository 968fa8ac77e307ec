#!/usr/bin/env python3
"""Build the virtual-platform demos for 1 and 8 cores, run them under QEMU with the timing
plugin (twice each, to check determinism) and print checksums, instruction counts and
modelled cycles: the matmul demo (forks, barriers), the DMA demo (single- vs double-buffered
copy-compute-copy through L1; modelled DMA time exposed vs hidden) and the FPU demo (what 8 cores
gain on floating-point, integer and division code with shared and with private FPUs).

    python TargetLibraries/Siracusa/examples/run_demo.py [--build-dir DIR] [--slowdown]

``--slowdown`` also times a longer run (the matmul repeated 50 times) with and without the plugin.
Needs the toolchain of ``bash toolchain/install.sh``.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))

from Deeploy.targets.siracusa.qemu import run_elf  # noqa: E402
from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING, TimingResult, model_cycles, read_records  # noqa: E402


def build_demo(build_dir: Path, num_cores: int, repeat: int = 1, linker_script: Path | None = None,
               target: str = "matmul_demo") -> Path:
    """Configure and build one demo (matmul_demo or dma_demo) with NUM_CORES = num_cores; returns the ELF."""
    cmd = ["cmake", "-S", str(HERE), "-B", str(build_dir), f"-DNUM_CORES={num_cores}", f"-DDEMO_REPEAT={repeat}",
           f"-DLINKER_SCRIPT={linker_script or ''}"]
    for c in (cmd, ["cmake", "--build", str(build_dir), "--target", target]):
        proc = subprocess.run(c, capture_output=True, text=True)
        if proc.returncode:
            raise RuntimeError(f"{' '.join(c)} failed:\n{proc.stdout}{proc.stderr}")
    return build_dir / target


# layers of dma_demo.c
DMA_LAYER_L3, DMA_LAYER_SINGLE, DMA_LAYER_DOUBLE = 1, 2, 3


def dma_variants(result: TimingResult) -> dict[str, dict[str, float]]:
    """Per variant of the DMA demo ("single-buffered", "double-buffered"): its modelled cycles,
    transfers, DMA time (cycles the engine was busy with them: setup and data), cycles the cores
    stalled in waits, and the exposed share of the DMA time (stall / DMA time)."""
    out = {}
    for name, layer in (("single-buffered", DMA_LAYER_SINGLE), ("double-buffered", DMA_LAYER_DOUBLE)):
        (lt,) = [x for x in result.layers if x.layer == layer]
        transfers, waits = result.dma_between(lt.start, lt.start + lt.cycles)
        dma = sum(t.busy for t in transfers)
        stall = sum(w.stall for w in waits)
        out[name] = {"cycles": lt.cycles, "transfers": len(transfers), "dma": dma, "stall": stall,
                     "exposed": stall / dma if dma else 0.0}
    return out


def dma_report(result: TimingResult) -> str:
    v = dma_variants(result)
    lines = []
    for name, d in v.items():
        lines.append(f"{name}: {d['cycles']:.0f} cycles; {d['transfers']} transfers, DMA time {d['dma']:.0f} "
                     f"cycles, cores stalled {d['stall']:.0f} cycles: {100 * d['exposed']:.1f}% of the DMA time "
                     f"exposed, {100 * max(0.0, 1 - d['exposed']):.1f}% hidden behind compute")
    sb, db = v["single-buffered"], v["double-buffered"]
    lines.append(f"double buffering saves {sb['cycles'] - db['cycles']:.0f} cycles "
                 f"({sb['cycles'] / db['cycles']:.3f}x)")
    return "\n".join(lines)


def checksum(stdout: str) -> str:
    m = re.search(r"checksum (0x[0-9a-f]+)", stdout)
    if not m:
        raise RuntimeError(f"the demo printed no checksum: {stdout!r}")
    return m.group(1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build-dir", default=str(REPO / "build" / "siracusa_demo"))
    p.add_argument("--slowdown", action="store_true", help="also measure the plugin's slowdown")
    a = p.parse_args()
    base = Path(a.build_dir)
    results = {}
    for n in (1, 8):
        elf = build_demo(base / f"cores{n}", n)
        runs = [run_elf(elf, n, timeout=60, records=base / f"cores{n}" / f"records{k}.txt") for k in (1, 2)]
        same = runs[0].records.read_bytes() == runs[1].records.read_bytes()
        res = model_cycles(runs[0].records)
        fork = res.forks[0]
        results[n] = (fork, res)
        print(f"{n} core(s): exit {runs[0].exit_code}, checksum {checksum(runs[0].stdout)}, "
              f"records identical across runs: {same}")
        print(f"  instructions in the fork per core: {list(fork.core_insns)}")
        print(f"  whole program, hart 0: {read_records(runs[0].records).final(0).insns} instructions")
        print("  " + res.summary().replace("\n", "\n  "))
    f1, f8 = results[1][0], results[8][0]
    print(f"fork instructions: 1 core {f1.core_insns[0]}, 8 cores max {max(f8.core_insns)} per core "
          f"({f1.core_insns[0] / max(f8.core_insns):.2f}x); modelled fork cycles {f1.cycles:.0f} vs "
          f"{f8.cycles:.0f} ({f1.cycles / f8.cycles:.2f}x)")
    for n in (1, 8):
        elf = build_demo(base / f"cores{n}", n, target="dma_demo")
        runs = [run_elf(elf, n, timeout=60, records=base / f"cores{n}" / f"dma_records{k}.txt") for k in (1, 2)]
        same = runs[0].records.read_bytes() == runs[1].records.read_bytes()
        res = model_cycles(runs[0].records)
        print(f"DMA demo, {n} core(s): exit {runs[0].exit_code}, checksum {checksum(runs[0].stdout)}, "
              f"records identical across runs: {same}")
        print("  " + runs[0].stdout.strip().splitlines()[-1])
        print("  " + res.summary().replace("\n", "\n  "))
        print("  " + dma_report(res).replace("\n", "\n  "))
    runs = {n: run_elf(build_demo(base / f"cores{n}", n, target="fpu_demo"), n, timeout=60,
                       records=base / f"cores{n}" / "fpu_records.txt") for n in (1, 8)}
    print(f"FPU demo: {runs[8].stdout.strip()}")
    for name, model in (("shared FPUs", SIRACUSA_TIMING), ("private FPUs", replace(SIRACUSA_TIMING, fpus=0))):
        one, eight = (model_cycles(runs[n].records, model).per_layer() for n in (1, 8))
        print(f"  {name}: 8 cores vs 1: " + ", ".join(f"{kind} {one[k]:.0f} / {eight[k]:.0f} = {one[k] / eight[k]:.2f}x"
                                                        for k, kind in enumerate(("fmadd.s", "add", "fdiv.s"))))
    if a.slowdown:
        for n in (1, 8):
            elf = build_demo(base / f"slow{n}", n, repeat=50)
            times = {}
            for plugin in (False, True):
                t0 = time.perf_counter()
                r = run_elf(elf, n, timeout=600, plugin=plugin, records=base / f"slow{n}" / "records.txt")
                times[plugin] = time.perf_counter() - t0
                assert r.exit_code == 0, r
            print(f"slowdown ({n} core(s), matmul x50): {times[False]:.2f} s without the plugin, "
                  f"{times[True]:.2f} s with it: {times[True] / times[False]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
