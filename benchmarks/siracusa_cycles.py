#!/usr/bin/env python3
"""Modelled Siracusa cycles (QEMU + timing plugin) on 1 and 8 cores, their ratio, and a
determinism check (the same binary run twice must print the same cycles).

    python benchmarks/siracusa_cycles.py [--test ../shared/corpus/Models/microLlama/INT8/microLlama128]

The peer reports 16.1M (1 core) vs 3.1M (8 cores) cycles, 5.2x, for microLlama128 on its simulator.
Absolute cycles are those of our model (CV32E40P costs measured on its RTL, the PULP DSP kernels; untiled
runs read L2 at a derived 14-cycle latency), so compare ratios first; float models run
the same way (e.g. --test DeeployTest/Tests/Models/Float/Llama).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "DeeployTest" / "testRunner_siracusa.py"


def cycles(test: str, cores: int, skipgen: bool = False) -> int:
    cmd = [sys.executable, str(RUNNER), "-t", test, f"--cores={cores}",
           "--gen-dir", str(REPO / "DeeployTest" / "TEST_SIRACUSA" / "benchmark" / f"{Path(test).name}_{cores}")]
    proc = subprocess.run(cmd + (["--skipgen"] if skipgen else []), capture_output=True, text=True)
    found = re.search(r"Runtime: (\d+) cycles", proc.stdout)
    if proc.returncode or not found:
        raise SystemExit(f"run failed ({' '.join(cmd)}):\n{proc.stdout}\n{proc.stderr}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--test", default=str(REPO.parent / "shared" / "corpus" / "Models" / "microLlama" / "INT8"
                                              / "microLlama128"))
    args = parser.parse_args()
    one, eight = cycles(args.test, 1), cycles(args.test, 8)
    again = cycles(args.test, 8, skipgen=True)
    print(f"{Path(args.test).name}: 1 core {one:,} cycles, 8 cores {eight:,} cycles, "
          f"ratio {one / eight:.2f} (peer: 5.2)")
    print(f"determinism: second run of the same 8-core binary {'identical' if again == eight else 'DIFFERENT'}"
          f" ({again:,} cycles)")


if __name__ == "__main__":
    main()
