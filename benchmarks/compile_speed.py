#!/usr/bin/env python3
"""Compile time and peak memory of the compiler: CPU seconds (user + sys of the compiling child
process, from resource.getrusage(RUSAGE_CHILDREN)) and its peak RSS, for

1. microLlama128 tiled on Siracusa (8 cores, --l1 64000, double buffering), and
2. a chain of 100k nodes (Add, RequantShift, Relu repeated on int8) on Generic, built here.

    python benchmarks/compile_speed.py [--nodes 100000] [--repeat 3] [-v]

Each compile is `deeploy compile` of this checkout in a fresh process (``-v`` shows its stage times);
microLlama128 is compiled ``--repeat`` times and reported by its median (the machine may be shared),
with its ratios to the peer's compile of the same network (PEER_SECONDS of CPU, PEER_MIB peak RSS).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from DeeployTest.testUtils.chain import write_chain  # noqa: E402

LLAMA = REPO.parent / "shared" / "corpus" / "Models" / "microLlama" / "INT8" / "microLlama128" / "network.onnx"
COMPILE = "import sys; from Deeploy.cli import main; sys.exit(main())"
PEER_SECONDS, PEER_MIB = 34.3, 526   # the peer's tiled compile of microLlama128 (issue 24)


def measure(args: list[str], verbose: bool) -> tuple[float, float]:
    """CPU seconds and peak RSS (MiB) of ``deeploy compile ARGS`` in a child process of its own."""
    code = (f"import resource, subprocess, sys; r = subprocess.run([sys.executable, '-c', {COMPILE!r}, 'compile', "
            f"*{args!r}], capture_output=True, text=True); u = resource.getrusage(resource.RUSAGE_CHILDREN); "
            f"shown = (r.stdout if {verbose} or r.returncode else '') + r.stderr; "
            f"print(shown, end='', file=sys.stderr); "
            f"print(r.returncode, u.ru_utime + u.ru_stime, u.ru_maxrss / 1024)")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env)
    sys.stderr.write(out.stderr)
    code, seconds, mib = out.stdout.split()
    if code != "0":
        sys.exit(f"compile failed: deeploy compile {' '.join(args)}")
    return float(seconds), float(mib)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", type=int, default=100_000, help="length of the chain")
    ap.add_argument("--repeat", type=int, default=3, help="compiles of microLlama128 (their median is reported)")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the compiles' stage times")
    args = ap.parse_args()
    v = ["-v"] if args.verbose else []
    with tempfile.TemporaryDirectory() as tmp:
        runs = sorted(measure([str(LLAMA), "--platform", "Siracusa", "--cores", "8", "--l1", "64000",
                               "--doublebuffer", "-o", f"{tmp}/llama", *v], args.verbose)
                      for _ in range(max(1, args.repeat)))
        seconds, mib = statistics.median(r[0] for r in runs), max(r[1] for r in runs)
        print(f"microLlama128 tiled (Siracusa, 8 cores, --l1 64000 --doublebuffer): {seconds:.2f} s CPU "
              f"(median of {len(runs)}: {', '.join(f'{r[0]:.2f}' for r in runs)}), peak RSS {mib:.0f} MiB; "
              f"the peer: {PEER_SECONDS} s, {PEER_MIB} MiB ({PEER_SECONDS / seconds:.1f}x faster, "
              f"{PEER_MIB / mib:.1f}x less memory)", flush=True)
        chain = write_chain(Path(tmp) / "chain", args.nodes)
        seconds, mib = measure([str(chain), "--platform", "Generic", "-o", f"{tmp}/chain_out", *v], args.verbose)
        print(f"{args.nodes}-node chain (Generic): {seconds:.2f} s CPU, peak RSS {mib:.0f} MiB")


if __name__ == "__main__":
    main()
