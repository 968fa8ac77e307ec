#!/usr/bin/env python3
"""MemPool scaling: runs a network (default the project's microLlama128) on 16 and on 256 cores
through testRunner_mempool.py and prints the modelled cycles, the speed-up, and what the cycle
model attributes to the shared L1 in each run:

- bank conflicts: the cycles fork phases last beyond their slowest core because one of the 1024
  banks had more accesses to serve (``ForkTime.contention``, with the L2 path);
- remote latency: the cycles the run saves when loads from other tiles and groups cost what a
  tile-local load costs (the model again with ``group_cycles = remote_cycles = 0``).

    python benchmarks/mempool.py [-t Tests/Models/microLlama/microLlama128] [--cores 16 256]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.targets.mempool.timing import MEMPOOL_TIMING  # noqa: E402
from Deeploy.targets.siracusa.execute import last_run  # noqa: E402
from Deeploy.targets.siracusa.timing import model_cycles, read_records  # noqa: E402


def modelled(records: Path) -> tuple[float, float, float]:
    """(network cycles, of which bank conflicts, of which remote latency) of the last network run."""
    recs = read_records(records)
    full = last_run(model_cycles(recs, MEMPOOL_TIMING))
    local = last_run(model_cycles(recs, replace(MEMPOOL_TIMING, group_cycles=0.0, remote_cycles=0.0)))
    total = sum(lt.cycles for lt in full.layers)
    start, end = full.layers[0].start, full.layers[-1].start + full.layers[-1].cycles
    conflicts = sum(f.contention for f in full.forks if start <= f.start < end)
    return total, conflicts, total - sum(lt.cycles for lt in local.layers)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("-t", default="Tests/Models/microLlama/microLlama128", help="test folder (from DeeployTest)")
    p.add_argument("--cores", type=int, nargs="+", default=[16, 256])
    a = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="mempool_bench_") as tmp:
        for cores in a.cores:
            gen = Path(tmp) / f"cores{cores}"
            proc = subprocess.run([sys.executable, "testRunner_mempool.py", "-t", a.t, f"--num-threads={cores}",
                                   "--gen-dir", str(gen)], cwd=REPO / "DeeployTest", capture_output=True, text=True)
            if proc.returncode or "Errors: 0 out of" not in proc.stdout:
                print(proc.stdout[-2000:] + proc.stderr[-2000:], file=sys.stderr)
                print(f"error: the run on {cores} cores failed", file=sys.stderr)
                return 1
            rows.append((cores, *modelled(gen / "build" / "records.txt")))
    print(f"{a.t} on MemPool (modelled cycles of one network run)")
    print(f"{'cores':>6} {'cycles':>12} {'bank conflicts':>16} {'remote latency':>16}")
    for cores, total, conflicts, remote in rows:
        print(f"{cores:>6} {total:>12.0f} {conflicts:>9.0f} ({conflicts / total:5.1%}) "
              f"{remote:>9.0f} ({remote / total:5.1%})")
    (c0, t0, _, _), (c1, t1, k1, r1) = rows[0], rows[-1]
    ideal = t0 * c0 / c1
    print(f"speed-up {c0} -> {c1} cores: {t0 / t1:.2f}x (ideal {c1 / c0:.0f}x); of the {t1:.0f} cycles on {c1} cores, "
          f"bank conflicts {k1 / t1:.1%}, remote latency {r1 / t1:.1%}, the rest of the loss to the ideal "
          f"{ideal:.0f} (serial code, forks, barriers, uneven shares) {(t1 - ideal - k1 - r1) / t1:.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
