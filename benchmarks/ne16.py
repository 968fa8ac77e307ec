#!/usr/bin/env python3
"""GAP9 with and without NE16 (modelled cycles of the QEMU virtual platform): miniMobileNetv2 and
microLlama64_parallel on 8 cores, tiled at --l1 64000 with data in L2, double-buffered, cluster
only (testRunner_tiled_gap9.py) and with NE16 (testRunner_tiled_gap9_w_ne16.py); both cycle
counts, the speed-up, and the share of the NE16 run spent in NE16 layers (their own spans and the
waits for jobs left in flight over the cluster layers that follow) and in the shifts of int8
inputs to uint8 (from the run's profile). Target: a speed-up on both, at least 1.5x on
microLlama64_parallel (the issue's goal).

    python benchmarks/ne16.py [--l1 64000] [--networks miniMobileNetv2,microLlama64_parallel]

Each run prints the runner's command so it can be repeated by hand. Exits non-zero when a run
fails or a target is missed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

from bench_dir import BENCH_DIR

REPO = Path(__file__).resolve().parents[1]
MODELS = {"miniMobileNetv2": REPO / "DeeployTest" / "Tests" / "Models" / "miniMobileNetv2",
          "microLlama64_parallel": REPO / "DeeployTest" / "Tests" / "Models" / "microLlama" / "microLlama64_parallel"}
GEN = BENCH_DIR / "ne16"
TARGETS = {"microLlama64_parallel": 1.5}     # others: faster than cluster-only


def run(runner: str, network: str, l1: int) -> tuple[int, Path]:
    """The modelled cycles of one run and its generated folder."""
    gen = GEN / runner.removesuffix(".py") / network
    cmd = [sys.executable, str(REPO / "DeeployTest" / runner), "-t", str(MODELS[network]), "--cores=8", "--l1",
           str(l1), "--defaultMemLevel", "L2", "--doublebuffer", "--profileTiling", "--gen-dir", str(gen)]
    print("$", " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO / "DeeployTest")
    out = proc.stdout + proc.stderr
    found = re.search(r"^Runtime: (\d+) cycles$", out, re.M)
    if proc.returncode != 0 or "Errors: 0 out of" not in out or not found:
        print(out[-3000:])
        raise SystemExit(f"{runner} failed on {network}")
    return int(found.group(1)), gen


def ne16_share(gen: Path) -> tuple[int, int]:
    """Cycles of the NE16 layers and of the RequantShifts that shift their int8 inputs to uint8."""
    layers = json.loads((gen / "profile.json").read_text())["layers"]
    jobs = sum(e["cycles"] for e in layers if e["op"] == "Ne16Conv")
    shifts = sum(e["cycles"] for e in layers if e["op"] == "RequantShift" and e["name"].endswith(".npu_unsigned"))
    return round(jobs), round(shifts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--l1", type=int, default=64000)
    ap.add_argument("--networks", default="miniMobileNetv2,microLlama64_parallel")
    args = ap.parse_args()
    failed = False
    rows = []
    for network in args.networks.split(","):
        cluster, _ = run("testRunner_tiled_gap9.py", network, args.l1)
        ne16, gen = run("testRunner_tiled_gap9_w_ne16.py", network, args.l1)
        jobs, shifts = ne16_share(gen)
        speedup = cluster / ne16
        target = TARGETS.get(network, 1.0)
        met = speedup >= target if network in TARGETS else speedup > target
        failed |= not met
        rows.append((network, cluster, ne16, speedup, jobs, shifts, target, met))
    print(f"\n{'network':24} {'cluster only':>14} {'with NE16':>12} {'speed-up':>9}  NE16 layers / int8 shifts  target")
    for network, cluster, ne16, speedup, jobs, shifts, target, met in rows:
        print(f"{network:24} {cluster:>14} {ne16:>12} {speedup:>8.2f}x  {jobs:>11} / {shifts:<11}  "
              f"{'>=' if network in TARGETS else '>'}{target:g}x {'met' if met else 'MISSED'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
