#!/usr/bin/env python3
"""Kernel throughput under the calibrated cycle model of the Siracusa virtual platform, and the
host's instruction counts.

1. GEMM sweep: an int8 MatMul with a constant int8 B and its RequantShift (one GemmRQ layer) per
   shape M x K x N, tiled at a large --l1 so the kernel runs once on operands in L1; the kernel
   phase's modelled cycles give MAC/cycle per core (MACs / cycles / cores); then the same for
   microLlama's attention MatMuls of two activations (batched, heads of 4);
2. element-wise requantised ops (int8 Add and Mul of two inputs, scalar and per-channel
   RequantShift) on operands in L1: the kernel phase's modelled cycles per element and core;
3. convolution sweep: an int8 Conv (uint8 image, int8 weights) and its per-channel RequantShift
   (one ConvHWC_RQ layer) per shape, 3x3 / 1x1 / strided / depthwise, on operands in L1 as above:
   MAC/cycle per core of the kernel phase;
4. microLlama64_parallel tiled (8 cores, --l1 64000 --l2 2000000 --doublebuffer): cycles per op
   type (share of the network, MAC/cycle per core for GEMM layers), and MAC/cycle of the network;
5. host: RunNetwork instructions (callgrind) of the Generic target against the peer's figures.

    python benchmarks/kernels.py [--cores 8] [--shapes 64x64x64,16x4x4] [--skip-eltwise] [--skip-conv]
                                  [--skip-host] [--skip-network]

Each Siracusa run prints the runner's command so it can be repeated by hand.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np
import onnx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from DeeployTest.generators.builder import Net  # noqa: E402
from DeeployTest.generators.golden import write_test  # noqa: E402
from DeeployTest.generators.layers import conv_rq, image  # noqa: E402
from DeeployTest.generators.linear import _matmul  # noqa: E402
from generic_instructions import CASES, case_dir, run_network_instructions  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus"
RUNNER = REPO / "DeeployTest" / "testRunner_tiled_siracusa.py"
NETWORK = CORPUS / "Models" / "microLlama" / "INT8" / "microLlama64_parallel"
SHAPES = ("64x64x64", "64x64x256", "64x256x64", "16x4x4", "64x4x64", "64x64x4", "8x64x64", "1x64x256",
          "32x48x64", "17x33x9")   # M x K x N
ATTENTION_SHAPES = ((16, 64, 4, 64), (64, 16, 4, 4), (16, 64, 64, 4))   # batch x M x K x N: Q K^T, rotation, scores x V
# (input channels, image height = width, output channels, kernel, stride, depthwise)
CONV_SHAPES = ((32, 16, 32, 3, 1, False), (16, 16, 32, 3, 2, False), (32, 16, 64, 1, 1, False),
               (64, 8, 64, 3, 1, False), (3, 32, 16, 3, 1, False), (32, 16, 32, 3, 1, True),
               (32, 16, 32, 3, 2, True), (64, 8, 64, 3, 1, True))


def run_tiled(test: Path, gen: Path, cores: int, l1: int, l2: int, double_buffer: bool) -> dict:
    """The profile of one tiled run (fails on wrong outputs)."""
    cmd = [sys.executable, str(RUNNER), "-t", str(test), f"--cores={cores}", "--l1", str(l1), "--l2", str(l2),
           "--profileTiling", "--gen-dir", str(gen)] + (["--doublebuffer"] if double_buffer else [])
    print("$", " ".join(cmd[1:]), flush=True)
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO / "DeeployTest").stdout
    if "Errors: 0 out of" not in out:
        sys.exit(f"run failed:\n{out[-3000:]}")
    return json.loads((gen / "profile.json").read_text())


def gemm_kernel_cycles(m: int, k: int, n: int, cores: int, work: Path, batch: int = 0) -> float:
    """Modelled cycles of the kernel phase of one GemmRQ call on M x K @ K x N int8 operands in
    L1 (a MatMul with constant int8 B and a scalar RequantShift, tiled at a large --l1; with
    ``batch``, [batch, M, K] x [batch, K, N] of two activations)."""
    name = f"{batch}x{m}x{k}x{n}" if batch else f"{m}x{k}x{n}"
    test = work / f"gemm_{name}"
    shapes = ((batch, m, k), (batch, k, n)) if batch else ((m, k), (k, n))
    write_test(_matmul(np.random.default_rng(0), *shapes, const_b=not batch, rq=True), test)
    profile = run_tiled(test, work / f"gen_{name}_{cores}", cores, 200000, 2000000, False)
    layer = next(e for e in profile["layers"] if e["op"] in ("RequantizedMatMul", "RequantizedGemm"))
    return sum(t["kernel"] for t in layer["tiles"] if t["level"] == "L1")


def gemm_sweep(shapes: list[tuple[int, int, int]], cores: int, work: Path) -> None:
    print(f"\n== GemmRQ kernel, {cores} cores, operands in L1 (kernel phase cycles)")
    print(f"{'M x K x N':>14s} {'MACs':>9s} {'cycles':>9s} {'MAC/cycle':>10s} {'per core':>9s}")
    for m, k, n in shapes:
        cycles = gemm_kernel_cycles(m, k, n, cores, work)
        macs = m * k * n
        print(f"{f'{m} x {k} x {n}':>14s} {macs:9,d} {cycles:9,.0f} {macs / cycles:10.3f} "
              f"{macs / cycles / cores:9.3f}")
    print(f"\n== GemmRQ of two activations (microLlama's attention, heads of 4), {cores} cores, operands in L1")
    print(f"{'B x M x K x N':>18s} {'MACs':>9s} {'cycles':>9s} {'MAC/cycle':>10s} {'per core':>9s}")
    for b, m, k, n in ATTENTION_SHAPES:
        cycles = gemm_kernel_cycles(m, k, n, cores, work, batch=b)
        macs = b * m * k * n
        print(f"{f'{b} x {m} x {k} x {n}':>18s} {macs:9,d} {cycles:9,.0f} {macs / cycles:10.3f} "
              f"{macs / cycles / cores:9.3f}")


ELTWISE = (("Add", (1, 32, 256), None), ("Add", (1, 32, 256), 1), ("Mul", (1, 32, 256), None),
           ("Mul", (1, 32, 256), 1))   # op, shape of both int8 inputs, RequantShift axis (None: scalar)


def eltwise_kernel_cycles(op: str, shape: tuple[int, ...], axis: int | None, cores: int, work: Path) -> float:
    """Modelled cycles of the kernel phase of one requantised int8 ``op`` of two inputs of ``shape``
    in L1 (tiled at a large --l1)."""
    from DeeployTest.generators.registry import s8
    rng = np.random.default_rng(0)
    net = Net(op)
    y = net.node(op, [net.input("input_0", s8(rng, shape)), net.input("input_1", s8(rng, shape))])
    net.output(net.calib_rqs(y, axis=axis, offset_rng=rng))
    name = f"{op.lower()}_{'x'.join(map(str, shape))}_{'c' if axis is not None else 's'}"
    write_test(net, work / name)
    profile = run_tiled(work / name, work / f"gen_{name}_{cores}", cores, 200000, 2000000, False)
    layer = next(e for e in profile["layers"] if e["op"] == f"Requantized{op}")
    return sum(t["kernel"] for t in layer["tiles"] if t["level"] == "L1")


def eltwise_sweep(cores: int, work: Path) -> None:
    print(f"\n== element-wise requantised int8 ops, {cores} cores, operands in L1 (kernel phase cycles)")
    print(f"{'op':22s} {'elements':>9s} {'cycles':>9s} {'cycles/element/core':>20s}")
    for op, shape, axis in ELTWISE:
        cycles = eltwise_kernel_cycles(op, shape, axis, cores, work)
        n = int(np.prod(shape))
        what = f"{op} ({'per channel' if axis is not None else 'scalar'})"
        print(f"{what:22s} {n:9,d} {cycles:9,.0f} {cycles * cores / n:20.2f}")


def conv_sweep(cores: int, work: Path) -> None:
    print(f"\n== ConvHWC_RQ kernel (uint8 image, int8 weights, 'same' padding), {cores} cores, operands in L1 "
          "(kernel phase cycles)")
    print(f"{'conv':>26s} {'MACs':>9s} {'cycles':>9s} {'MAC/cycle':>10s} {'per core':>9s}")
    for c, hw, k, ks, stride, dw in CONV_SHAPES:
        rng = np.random.default_rng(0)
        net = Net("Conv")
        x = net.input("input", image(rng, (1, c, hw, hw)))
        net.output(conv_rq(net, rng, x, k, ks, stride=stride, group=c if dw else 1, name="conv"))
        name = f"{'dw ' if dw else ''}{ks}x{ks}{f' s{stride}' if stride > 1 else ''} {hw}x{hw}x{c}->{k}"
        test = work / f"conv_{c}_{hw}_{k}_{ks}_{stride}_{int(dw)}"
        write_test(net, test)
        profile = run_tiled(test, work / f"gen_{test.name}_{cores}", cores, 200000, 2000000, False)
        layer = next(e for e in profile["layers"] if e["op"] == "RequantizedConv")
        cycles = sum(t["kernel"] for t in layer["tiles"] if t["level"] == "L1")
        out = (hw + 2 * (ks // 2) - ks) // stride + 1
        macs = out * out * k * ks * ks * (1 if dw else c)
        print(f"{name:>26s} {macs:9,d} {cycles:9,.0f} {macs / cycles:10.3f} {macs / cycles / cores:9.3f}")


def layer_macs(model_path: Path) -> dict[str, int]:
    """Multiply-accumulates of each MatMul/Gemm node, by node name (the layers keep the names)."""
    model = onnx.shape_inference.infer_shapes(onnx.load(model_path))
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.input) + list(model.graph.output)}
    shapes.update({i.name: list(i.dims) for i in model.graph.initializer})
    macs = {}
    for node in model.graph.node:
        if node.op_type in ("MatMul", "Gemm"):
            a, out = shapes[node.input[0]], shapes[node.output[0]]
            trans_a = any(at.name == "transA" and at.i for at in node.attribute)
            k = a[-2] if trans_a else a[-1]
            macs[node.name] = int(np.prod(out)) * k
    return macs


def network_breakdown(work: Path) -> None:
    profile = run_tiled(NETWORK, work / "network", 8, 64000, 2000000, True)
    macs = layer_macs(NETWORK / "network.onnx")
    by_op = defaultdict(lambda: [0.0, 0, 0])
    for e in profile["layers"]:
        entry = by_op[e["op"]]
        entry[0] += e["cycles"]
        entry[1] += 1
        entry[2] += macs.get(e["name"], 0)
    total = profile["cycles"]
    print(f"\n== {NETWORK.name} tiled, 8 cores, --l1 64000 --l2 2000000 --doublebuffer: {total:,.0f} cycles")
    print(f"{'op':28s} {'layers':>6s} {'cycles':>12s} {'share':>6s} {'MACs':>11s} {'MAC/cycle/core':>15s}")
    for op, (cycles, count, op_macs) in sorted(by_op.items(), key=lambda kv: -kv[1][0]):
        rate = f"{op_macs / cycles / 8:15.3f}" if op_macs else ""
        print(f"{op:28s} {count:6d} {cycles:12,.0f} {cycles / total:6.1%} {op_macs:11,d} {rate}")
    all_macs = sum(macs.values())
    gemm_cycles = sum(c for c, _, m in by_op.values() if m)
    print(f"network: {all_macs:,d} MACs, {all_macs / total:.2f} MAC/cycle (8 cores); GEMM layers "
          f"{all_macs / gemm_cycles / 8:.3f} MAC/cycle per core")


def host_counts(work: Path) -> None:
    print("\n== Generic host: RunNetwork instructions (callgrind)")
    print(f"{'network':40s} {'instructions':>13s} {'peer':>10s} {'ratio':>6s}")
    for k, (case, peer) in enumerate(CASES):
        n = run_network_instructions(case_dir(case, CORPUS), work / f"host{k}")
        print(f"{case:40s} {n:13,d} {peer / 1e6:9.2f}M {n / peer:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=int, default=8, help="cores of the GEMM sweep (1..8)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="M x K x N shapes of the sweep, comma-separated")
    parser.add_argument("--skip-eltwise", action="store_true", help="no element-wise requantised ops")
    parser.add_argument("--skip-conv", action="store_true", help="no convolution sweep")
    parser.add_argument("--skip-network", action="store_true", help="no microLlama64_parallel breakdown")
    parser.add_argument("--skip-host", action="store_true", help="no host instruction counts")
    args = parser.parse_args()
    try:
        shapes = [tuple(int(v) for v in s.lower().split("x")) for s in args.shapes.split(",") if s]
        if any(len(s) != 3 or min(s) < 1 for s in shapes):
            raise ValueError
    except ValueError:
        sys.exit(f"--shapes: expected comma-separated MxKxN with positive sizes, got '{args.shapes}'")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        gemm_sweep(shapes, args.cores, work)
        if not args.skip_eltwise:
            eltwise_sweep(args.cores, work)
        if not args.skip_conv:
            conv_sweep(args.cores, work)
        if not args.skip_network:
            network_breakdown(work)
        if not args.skip_host:
            host_counts(work)


if __name__ == "__main__":
    main()
