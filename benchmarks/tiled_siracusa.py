#!/usr/bin/env python3
"""Figures of the tiled Siracusa flow (modelled cycles of the QEMU virtual platform; compile time
and peak memory of the compiler):

1. microLlama64_parallel on 8 cores: cycles at --l1 64000 and --l1 8000 (double buffering), and
   their ratio;
2. double vs single buffering per layer of the same network at --l1 64000: the speed-up of the
   most memory-bound layers, and the share of DMA time hidden in compute-bound double-buffered
   layers (overall, and in layers of at least 8 tiles, where the first tile's load, which no
   double buffering can hide, weighs little);
3. microLlama64 at --l1 64000 (double buffering): the share of DMA time hidden in layers of at
   least 4 tiles, and the tile loops' overhead share of the cycles (``--profileTiling``'s split);
4. tiled compilation of microLlama128 (8 cores, --l1 64000): seconds and peak memory (a fresh
   process; ru_maxrss).

    python benchmarks/tiled_siracusa.py [--l2 2000000] [--level L2]

Data live in L2 by default with --l2 2000000 (Siracusa's 2 MiB L2: microLlama64_parallel's
weights, KV caches and activations need about 1.1 MB); --level L3 keeps them in L3 instead.
Each run prints the runner's command so it can be repeated by hand.
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
CORPUS = REPO.parent / "shared" / "corpus" / "Models" / "microLlama" / "INT8"
RUNNER = REPO / "DeeployTest" / "testRunner_tiled_siracusa.py"


def run(network: str, gen: str, l1: int, l2: int, level: str, db: bool) -> tuple[int, dict, float]:
    """Cycles, per tiled layer its figures, and the overhead's share of the cycles."""
    cmd = [sys.executable, str(RUNNER), "-t", str(CORPUS / network), "--cores=8", "--l1", str(l1), "--l2", str(l2),
           "--defaultMemLevel", level, "--profileTiling", "--gen-dir", str(BENCH_DIR / gen)]
    cmd += ["--doublebuffer"] if db else []
    print("$", " ".join(cmd[1:]), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO / "DeeployTest").stdout
    if "Errors: 0 out of" not in out:
        sys.exit(f"run failed:\n{out[-3000:]}")
    cycles = int(re.search(r"Runtime: (\d+) cycles", out).group(1))
    profile = json.loads((BENCH_DIR / gen / "profile.json").read_text())
    layers = {e["name"]: dict(tiles=sum(1 for t in e["tiles"] if t["level"] == "L1"), buffering=e["buffering"],
                              cycles=round(e["cycles"]), kernel=round(e["compute"]), busy=round(e["dma"]["busy"]),
                              waited=round(e["dma"]["waited"])) for e in profile["layers"] if "tiles" in e}
    return cycles, layers, profile["overhead"] / profile["cycles"]


def compile_stats(l2: int, level: str) -> tuple[float, float]:
    code = f"""
import resource, time
from pathlib import Path
from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from Deeploy.tiling.network import TilingOptions
d = Path({str(CORPUS / 'microLlama128')!r})
start = time.perf_counter()
graph = load_onnx(d / "network.onnx")
assign_input_types(graph, map_arrays(d / "inputs.npz", load_npz_arrays(d / "inputs.npz"), graph.inputs, graph, "input"))
compile_graph(graph, "Siracusa", {str(BENCH_DIR / "compile128")!r}, cores=8,
              tiling=TilingOptions(64000, {l2}, {level!r}, True))
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    seconds, mb = out.stdout.split()[-2:]
    return float(seconds), float(mb)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--l2", type=int, default=2000000)
    ap.add_argument("--level", choices=("L2", "L3"), default="L2")
    args = ap.parse_args()

    big, _, _ = run("microLlama64_parallel", "l1_64000_db", 64000, args.l2, args.level, True)
    small, _, _ = run("microLlama64_parallel", "l1_8000_db", 8000, args.l2, args.level, True)
    print(f"\nmicroLlama64_parallel, 8 cores, double buffering, data in {args.level}:")
    print(f"  --l1 64000: {big:,} cycles   --l1 8000: {small:,} cycles   ratio {small / big:.3f} "
          f"(+{100 * (small / big - 1):.1f}%)\n")

    _, sb, _ = run("microLlama64_parallel", "l1_64000_sb", 64000, args.l2, args.level, False)
    _, db, _ = run("microLlama64_parallel", "l1_64000_db", 64000, args.l2, args.level, True)
    memory_bound = sorted((k for k in sb if sb[k]["busy"] >= 0.5 * sb[k]["kernel"]),
                          key=lambda k: -sb[k]["busy"] / max(1, sb[k]["kernel"]))
    print("Single vs double buffering at --l1 64000 (most memory-bound layers: DMA busy / kernel in SB):")
    for k in memory_bound[:5]:
        s, d = sb[k], db[k]
        print(f"  {k[-40:]:40s} DMA/kernel {s['busy'] / max(1, s['kernel']):.2f}: SB {s['cycles']:,} "
              f"-> {d['buffering']} {d['cycles']:,} cycles, {100 * (s['cycles'] / d['cycles'] - 1):.1f}% faster")
    compute_bound = [k for k in db if db[k]["buffering"] == "DB" and db[k]["kernel"] > db[k]["busy"]]
    busy = sum(db[k]["busy"] for k in compute_bound)
    waited = sum(db[k]["waited"] for k in compute_bound)
    many = [k for k in compute_bound if db[k]["tiles"] >= 8]
    if busy:
        print(f"  compute-bound double-buffered layers: {len(compute_bound)}; DMA busy {busy:,} cycles, cores "
              f"waited {waited:,}: {100 * (1 - waited / busy):.1f}% hidden (the first tile's load of a layer "
              f"cannot be)")
    if many:
        b, w = sum(db[k]["busy"] for k in many), sum(db[k]["waited"] for k in many)
        print(f"  of them with >= 8 tiles: {len(many)}; {100 * (1 - w / b):.1f}% hidden, worst layer "
              f"{100 * min(1 - db[k]['waited'] / db[k]['busy'] for k in many):.1f}%")

    cycles, layers, overhead = run("microLlama64", "ml64_l1_64000_db", 64000, args.l2, args.level, True)
    many = [v for v in layers.values() if v["tiles"] >= 4]
    busy, waited = sum(v["busy"] for v in many), sum(v["waited"] for v in many)
    hidden = f"{100 * (1 - waited / busy):.1f}% of their DMA hidden" if busy else "no DMA"
    print(f"\nmicroLlama64, --l1 64000, double buffering: {cycles:,} cycles, overhead {100 * overhead:.1f}%; "
          f"{len(many)} layers of >= 4 tiles, {hidden}")

    seconds, mb = compile_stats(args.l2, "L3")
    print(f"\nTiled compile of microLlama128 (8 cores, --l1 64000, double buffering, data in L3): "
          f"{seconds:.2f} s, peak {mb:.0f} MB")


if __name__ == "__main__":
    main()
