#!/usr/bin/env python3
"""Calibration of the Siracusa cycle model: builds the kernels of benchmarks/calibration/ for 8
cores, runs them under QEMU with the timing plugin and prints, per kernel, the modelled cycles
beside the count derived by hand from the loop structure and the CV32E40P manual / platform
description (specs/siracusa-timing.md), and their difference.

    python benchmarks/calibration.py [--build-dir DIR]

Hand counts (N iterations; the numbers below are the manual's, not read from the model):
  taken-branch loop   addi 1 + bnez taken 3, the last bnez not taken (1):   4N - 2
  mulh chain          4 mulh x 5 + addi 1 + bnez 3, last not taken:       24N - 2
  load-use pairs      2 x (lw 1 + stall 1 + add 1) + addi 1 + bnez 3:     10N - 2
  8 cores, one bank   one TCDM bank serves 1 access per cycle, 8 cores x N loads: 8N
  8 cores, 8 banks    no conflict: each core lw 1 + addi 1 + bnez 3:        5N - 2
  8 cores, L2 stream  lw 1 + L2 latency 14 + addi 1 + addi 1 + bnez 3 (the 8 cores need 8 of
                      every 20 cycles of the shared L2 path: no queueing): 20N - 2
  FPU chain           fdiv.s 15 (RTL measurement, benchmarks/fidelity/programs/fpu_fdiv.c) + flw 1 + fadd.s 1
                      + load-use 1 + addi 1 + bnez 3 (loop head word-aligned): 22N - 2
Each modelled figure also holds the few instructions around the loop (call, marker, fork and
join for the 8-core kernels), a fraction of a percent at N = 4096.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.targets.siracusa.qemu import run_elf  # noqa: E402
from Deeploy.targets.siracusa.timing import model_cycles  # noqa: E402

N = 4096             # iterations of every kernel (calibration.c)
TAKEN, NOT_TAKEN, MULH, LOAD_USE, L2_LATENCY = 3, 1, 5, 1, 14   # manual; spec "cluster -> L2 access"
FDIV = 15            # RTL measurement, issue included (benchmarks/fidelity/programs/fpu_fdiv.c): checks the FP classes

# (layer, name, hand-computed cycles)
KERNELS = (
    (0, "taken-branch loop", N * (1 + TAKEN) - TAKEN + NOT_TAKEN),
    (1, "mulh chain", N * (4 * MULH + 1 + TAKEN) - TAKEN + NOT_TAKEN),
    (2, "load-use pairs", N * (2 * (1 + LOAD_USE + 1) + 1 + TAKEN) - TAKEN + NOT_TAKEN),
    (3, "8 cores, same L1 bank", 8 * N),
    (4, "8 cores, different banks", N * (1 + 1 + TAKEN) - TAKEN + NOT_TAKEN),
    (5, "8 cores streaming from L2", N * (1 + L2_LATENCY + 1 + 1 + TAKEN) - TAKEN + NOT_TAKEN),
    (6, "FPU chain (fdiv, flw-use)", N * (FDIV + 1 + 1 + LOAD_USE + 1 + TAKEN) - TAKEN + NOT_TAKEN),
)


def build(build_dir: Path) -> Path:
    for cmd in (["cmake", "-S", str(REPO / "benchmarks" / "calibration"), "-B", str(build_dir), "-DNUM_CORES=8"],
                ["cmake", "--build", str(build_dir), "--target", "calibration"]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout}{proc.stderr}")
    return build_dir / "calibration"


def calibrate(build_dir: Path) -> list[tuple[str, float, int]]:
    """(kernel, modelled cycles, hand-computed cycles) of every calibration kernel."""
    elf = build(build_dir)
    run = run_elf(elf, 8, timeout=120, records=build_dir / "records.txt")
    if run.exit_code:
        raise SystemExit(f"calibration program exited with {run.exit_code}: {run.stdout}")
    layers = model_cycles(run.records).per_layer()
    return [(name, layers[layer], expected) for layer, name, expected in KERNELS]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", type=Path, help="build directory (default: a temporary one)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="deeploy_calibration_") as tmp:
        rows = calibrate(a.build_dir or Path(tmp))
    print(f"{'kernel':28s} {'model':>10s} {'expected':>10s} {'error':>7s}")
    for name, model, expected in rows:
        print(f"{name:28s} {model:10.0f} {expected:10d} {100 * (model - expected) / expected:+6.2f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
