#!/usr/bin/env python3
"""Modelled cycles of every integer model of the external corpus on Siracusa: untiled on 8 cores,
and tiled on 8 cores (--l1 64000 --l2 2000000 --doublebuffer). Prints one table row per model.

    python benchmarks/corpus_cycles.py                    # this checkout
    python benchmarks/corpus_cycles.py --root /path/to/other/checkout --tag before

``--root`` runs another checkout's runners (same corpus), so two versions can be compared in one
go; the modelled cycles are deterministic, so the comparison is exact.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "corpus" / "Models"
MODELS = ("microLlama/INT8/microLlama128", "microLlama/INT8/microLlama64", "microLlama/INT8/microLlama64_parallel",
          "miniMobileNetv2")
RUNS = (("untiled", "testRunner_siracusa.py", []),
        ("tiled", "testRunner_tiled_siracusa.py", ["--l1", "64000", "--l2", "2000000", "--doublebuffer"]))


def cycles(root: Path, runner: str, model: str, extra: list[str], gen: Path) -> str:
    proc = subprocess.run([sys.executable, runner, "-t", str(CORPUS / model), "--cores=8", "--gen-dir", str(gen),
                           *extra], cwd=root / "DeeployTest", capture_output=True, text=True)
    errors = re.search(r"Errors: (\d+) out of", proc.stdout)
    runtime = re.search(r"Runtime: (\d+) cycles", proc.stdout)
    if proc.returncode or not errors or errors.group(1) != "0" or not runtime:
        return "failed"
    return runtime.group(1)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", type=Path, default=REPO, help="checkout whose runners to use (default: this one)")
    p.add_argument("--tag", default="", help="label printed in every row")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="deeploy_cycles_") as tmp:
        print(f"{'model':24s} {'run':8s} {'cycles':>12s} {args.tag}")
        for model in MODELS:
            for label, runner, extra in RUNS:
                gen = Path(tmp) / f"{label}_{Path(model).name}"
                print(f"{Path(model).name:24s} {label:8s} {cycles(args.root, runner, model, extra, gen):>12s} {args.tag}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
