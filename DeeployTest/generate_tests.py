#!/usr/bin/env python3
"""Regenerate the project's own test networks under DeeployTest/Tests.

    python DeeployTest/generate_tests.py                 # everything
    python DeeployTest/generate_tests.py 'Kernels/Conv/*' Models/miniMobileNetv2
    python DeeployTest/generate_tests.py --list

Every test folder holds network.onnx + inputs.npz + outputs.npz in the format of QuantLib-style
integer exports (see ../shared/specs/integer-ops.md). Generation is deterministic: each test has a
fixed seed derived from its path, and the files are byte-identical on every run. Standard ONNX
nodes are checked against onnxruntime, custom integer ops use the compiler's numpy references.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from DeeployTest.generators import all_tests  # noqa: E402
from DeeployTest.generators.golden import remove_stale, write_test  # noqa: E402
from DeeployTest.generators.registry import seed_of  # noqa: E402

TESTS_DIR = Path(__file__).resolve().parent / "Tests"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("patterns", nargs="*", help="glob patterns of test paths below Tests/ (default: all)")
    p.add_argument("--out", type=Path, default=TESTS_DIR, help="root folder (default DeeployTest/Tests)")
    p.add_argument("--list", action="store_true", help="list the tests and exit")
    p.add_argument("--no-ort", action="store_true", help="skip the onnxruntime cross-check")
    p.add_argument("-q", "--quiet", action="store_true")
    args = p.parse_args(argv)

    tests = all_tests()
    selected = [t for path, t in tests.items()
                if not args.patterns or any(fnmatch.fnmatch(path, pat) or path.startswith(pat.rstrip("/") + "/")
                                            or path == pat for pat in args.patterns)]
    if args.list:
        for t in selected:
            print(t.path)
        return 0
    if not selected:
        print("no test matches", " ".join(args.patterns), file=sys.stderr)
        return 1

    start = time.perf_counter()
    failures, total_bytes = [], 0
    for t in selected:
        t0 = time.perf_counter()
        try:
            net = t.build(np.random.default_rng(seed_of(t.path)))
            info = write_test(net, args.out / t.path, ort_check=not args.no_ort)
            if info["data_bytes"] > t.max_data_bytes:
                raise RuntimeError(f"{info['data_bytes']} B of input/output data, limit {t.max_data_bytes} B")
        except Exception as exc:  # report every failing generator, then fail
            failures.append(t.path)
            print(f"FAIL {t.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        total_bytes += info["bytes"]
        if not args.quiet:
            print(f"{t.path:50s} {info['nodes']:4d} nodes  {info['bytes'] / 1024:7.1f} KiB  "
                  f"golden: {info['golden']:11s} ort-checked {info['ort_checked']:3d}  "
                  f"{time.perf_counter() - t0:5.2f} s")
    if not args.patterns and not failures:
        keep = {(args.out / t.path).resolve() for t in tests.values()}
        for folder in remove_stale(args.out, keep):
            print("removed stale test", folder)
    print(f"{len(selected) - len(failures)} tests written to {args.out} ({total_bytes / 1024:.0f} KiB) in "
          f"{time.perf_counter() - start:.1f} s" + (f", {len(failures)} FAILED" if failures else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
