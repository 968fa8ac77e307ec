#!/usr/bin/env python3
"""Figures of the Neureka NPU (modelled cycles of the QEMU virtual platform):

1. microLlama64_parallel and microLlama64 on 8 cores, tiled at --l1 64000 with data in L2,
   double-buffered: cycles cluster-only (Siracusa), with the NPU (Siracusa_w_neureka) and with
   the NPU and its weight memory (--neureka-wmem; "n/a" if a runner refuses a flag), the
   NPU's speed-up (target on microLlama64_parallel: at least the peer's 1.23x) and the NPU
   layers' input DMA per tile (DMA engine cycles of the loads into L1);
2. per NPU layer of the NPU run: its jobs' modelled cycles (the cycle model's NPU timeline)
   against the spec's throughput formula written out here from ``specs/neureka.md``
   ("Throughput", rough model; within 10% required) for the layer's whole geometry, and its
   utilisation (multiply-accumulates done / peak multiply-accumulates in its busy cycles);
3. `deeploy compile --platform Siracusa_w_neureka --l1 64000` of microLlama128 (a fresh process,
   tiled): wall seconds and the CPU seconds of the process (wall time grows on a busy machine;
   target: under 2 s).

    python benchmarks/neureka.py [--l1 64000] [--networks microLlama64_parallel,microLlama64]

Each run prints the runner's command so it can be repeated by hand. Exits non-zero when a run
fails, a layer's model is more than 10% off the formula or the speed-up misses the target.
"""

from __future__ import annotations

import argparse
import math
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench_dir import BENCH_DIR

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from Deeploy.manifest import read_manifest  # noqa: E402
from Deeploy.targets.npu.spec import MODES  # noqa: E402
from Deeploy.targets.siracusa.npu_timeline import NPU_PEAK_MACS  # noqa: E402
from Deeploy.targets.siracusa.timing import model_cycles, read_records  # noqa: E402

MODELS = REPO / "DeeployTest" / "Tests" / "Models" / "microLlama"
GEN = BENCH_DIR / "neureka"
TARGET_SPEEDUP = 1.23          # the peer's microLlama64_parallel speed-up (spec "published NPU figures")
TOLERANCE = 0.10

# The spec's rough model per (Ko subtile, HoWo subtile) ("Throughput"): sum over Ki subtiles
# [load + Ko_sub * (1 for 1x1, weight bits for 3x3)] + normquant + streamout; load = one access per
# input pixel (36 for 1x1, 64 for 3x3) + about 6; normquant about 30; one store per output pixel
# (36, x4 for 32-bit outputs); depthwise: one channel at a time, 8 cycles each. Subtiles: 6x6
# pixels, 32 output channels (28 depthwise), 32 (1x1) or 28 (3x3) input channels ("Geometry").
ARRAY, KO, KO_DW, KI_1X1, KI_3X3, BITS = 6, 32, 28, 32, 28, 8
LOAD_EXTRA, NORMQUANT = 6, 30


def spec_cycles(mode: str, ho: int, wo: int, ko: int, ki: int, out_bytes: int) -> int:
    """One job's cycles by the spec's formula."""
    spatial = -(-ho // ARRAY) * -(-wo // ARRAY)
    load = (ARRAY * ARRAY if mode == "1x1" else (ARRAY + 2) ** 2) + LOAD_EXTRA
    tail = NORMQUANT + ARRAY * ARRAY * (4 if out_bytes == 4 else 1)
    total = 0
    for k0 in range(0, ko, KO_DW if mode == "3x3dw" else KO):
        here = min(KO_DW if mode == "3x3dw" else KO, ko - k0)
        if mode == "3x3dw":
            body = load + here * BITS
        else:
            body = -(-ki // (KI_1X1 if mode == "1x1" else KI_3X3)) * (load + here * (1 if mode == "1x1" else BITS))
        total += spatial * (body + tail)
    return total


def run(runner: str, network: str, gen: str, l1: int, extra: list[str]) -> tuple[int | None, str]:
    """(cycles, output) of one runner invocation; cycles None when the runner refused a flag."""
    cmd = [sys.executable, str(REPO / "DeeployTest" / runner), "-t", str(MODELS / network), "--cores=8", "--l1",
           str(l1), "--defaultMemLevel", "L2", "--doublebuffer", "--gen-dir", str(GEN / gen), *extra]
    print("$", " ".join(cmd[1:]), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO / "DeeployTest")
    out = proc.stdout + proc.stderr
    if proc.returncode != 0 and extra and extra[-1] in out and "Errors:" not in out:
        return None, out
    if "Errors: 0 out of" not in out:
        sys.exit(f"run failed:\n{out[-3000:]}")
    return int(re.search(r"Runtime: (\d+) cycles", out).group(1)), out


def npu_layers(gen: Path) -> tuple[list[dict], float]:
    """Per NPU layer (first occurrence) its jobs' cycles, the formula's, MACs and utilisation; and
    the NPU layers' input DMA engine cycles per L1 tile."""
    import onnx
    result = model_cycles(read_records(gen / "build" / "records.txt"))
    manifest = read_manifest(gen / "network")
    model = onnx.load(gen / "deeployStates" / "backend_post_binding.onnx")
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in [*model.graph.value_info, *model.graph.input, *model.graph.output]}
    nodes = {n.name: n for n in model.graph.node if n.op_type == "NeurekaConv"}
    rows, seen, dma_in, n_tiles = [], set(), 0.0, 0
    for lt in result.layers:
        info = manifest.layer_of_marker(0x100 + lt.layer)
        if lt.layer in seen or info is None or info.name not in nodes:
            continue
        seen.add(lt.layer)
        node = nodes[info.name]
        a = {x.name: onnx.helper.get_attribute_value(x) for x in node.attribute}
        mode = MODES[a["mode"]]
        k = 1 if mode == "1x1" else 3
        (h, w), (top, left, bottom, right) = a["plane"], a["pads"]
        ho, wo = h + top + bottom - k + 1, w + left + right - k + 1
        batch = math.prod(shapes[node.input[0]]) // (h * w * a["cin"])
        out_bytes = 1 if a.get("normquant", 0) else 4
        formula = batch * spec_cycles(mode, ho, wo, a["cout"], a["cin"], out_bytes)
        jobs = [j for j in result.npu if lt.start <= j.triggered < lt.start + lt.cycles]
        busy, macs = sum(j.cycles for j in jobs), sum(j.macs for j in jobs)
        rows.append(dict(layer=info.name, mode=mode, jobs=len(jobs), model=busy, formula=formula,
                         util=macs / (busy * NPU_PEAK_MACS) if busy else 0.0))
        entry = next((t for t in manifest.tiles if t.layer == info.name), None)
        if entry is not None:
            dma, _ = result.dma_between(lt.start, lt.start + lt.cycles)
            dma_in += sum(d.end - d.start for d in dma if d.dst == "L1")
            n_tiles += len(entry.tile_ops)
    return rows, dma_in / n_tiles if n_tiles else 0.0


def compile_time(l1: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one `deeploy compile` of microLlama128 for Siracusa_w_neureka."""
    model = MODELS / "microLlama128" / "network.onnx"
    cmd = [sys.executable, "-m", "Deeploy.cli", "compile", "--platform", "Siracusa_w_neureka", "--l1", str(l1),
           "-o", str(GEN / "microLlama128_compile"), str(model)]
    print("$ deeploy", " ".join(cmd[3:]), flush=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"compile failed:\n{proc.stderr[-3000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--l1", type=int, default=64000)
    ap.add_argument("--networks", default="microLlama64_parallel,microLlama64")
    args = ap.parse_args()
    ok, table = True, []
    for net in args.networks.split(","):
        cluster, _ = run("testRunner_tiled_siracusa.py", net, f"{net}_cluster", args.l1, [])
        npu, _ = run("testRunner_tiled_siracusa_w_neureka.py", net, f"{net}_npu", args.l1, [])
        wmem, _ = run("testRunner_tiled_siracusa_w_neureka.py", net, f"{net}_wmem", args.l1, ["--neureka-wmem"])
        rows, dma_tile = npu_layers(GEN / f"{net}_npu")
        wmem_dma = npu_layers(GEN / f"{net}_wmem")[1] if wmem is not None else None
        speedup = cluster / npu
        table.append((net, cluster, npu, wmem, speedup, dma_tile, wmem_dma))
        print(f"\n{net} (8 cores, --l1 {args.l1}, data in L2, double-buffered): {len(rows)} NPU layers")
        print(f"  {'layer':44s} {'mode':5s} {'jobs':>4s} {'model':>8s} {'formula':>8s} {'diff':>6s} {'util':>6s}")
        for r in rows:
            diff = r["model"] / r["formula"] - 1
            ok &= abs(diff) <= TOLERANCE
            print(f"  {r['layer'][:44]:44s} {r['mode']:5s} {r['jobs']:4d} {r['model']:8d} {r['formula']:8d} "
                  f"{100 * diff:+5.1f}% {100 * r['util']:5.1f}%")
        if net == "microLlama64_parallel":
            ok &= speedup >= TARGET_SPEEDUP
    print(f"\n| network | cluster only | with NPU | NPU speed-up | with NPU + weight memory | "
          f"NPU-layer input DMA per tile (NPU / + weight memory) |")
    print("|---|---|---|---|---|---|")
    for net, cluster, npu, wmem, speedup, dma_tile, wmem_dma in table:
        w = f"{wmem}" if wmem is not None else "n/a"
        wd = f"{wmem_dma:.0f}" if wmem_dma is not None else "n/a"
        print(f"| {net} | {cluster} | {npu} | {speedup:.2f}x | {w} | {dma_tile:.0f} / {wd} cycles |")
    wall, cpu = compile_time(args.l1)
    print(f"\nmicroLlama128 for Siracusa_w_neureka, tiled at --l1 {args.l1}: deeploy compile {wall:.2f} s wall, "
          f"{cpu:.2f} s CPU")
    ok &= cpu < 2.0
    if not ok:
        print(f"FAILED: a layer's model is more than {100 * TOLERANCE:.0f}% off the formula, the "
              f"speed-up is below {TARGET_SPEEDUP}x or the compile takes 2 s of CPU or more")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
