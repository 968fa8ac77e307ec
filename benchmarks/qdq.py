#!/usr/bin/env python3
"""Float network vs its onnxruntime ``quantize_static`` QDQ version, tiled on Siracusa (8 cores,
modelled cycles of the QEMU virtual platform): a small CNN (three convolutions and a GEMM head)
and a transformer block (linear layers, softmax attention, layer norm, Gelu in its Erf form), each
at --l1 64000 and a small L1. Prints the layers the QDQ version keeps in float (what onnxruntime
also runs in float), whether its outputs are bit-exact with onnxruntime's, the cycles of both and
the ratio float / QDQ.

    python benchmarks/qdq.py [--small-l1 20000]

The QDQ models use per-channel 7-bit weights (``reduce_range``: bit-exact with onnxruntime on x86
without VNNI). Each run prints the runner's command so it can be repeated by hand.
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
from pathlib import Path

from bench_dir import BENCH_DIR

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

REPO = Path(__file__).resolve().parents[1]
RUNNER = REPO / "DeeployTest" / "testRunner_tiled_siracusa.py"
WORK = BENCH_DIR / "qdq"


def _model(nodes, inits, x_shape, y_shape) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _weight(rng, name, shape, scale=None):
    scale = scale or 1.0 / np.sqrt(np.prod(shape[1:]))
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def cnn(rng) -> tuple[onnx.ModelProto, list[int]]:
    """Conv 16->32 3x3 -> Relu -> Conv 32->32 3x3 -> Relu -> Conv 32->32 1x1 stride 2 -> Relu ->
    Flatten -> Gemm to 10, on a 16x16 image."""
    shape = [1, 16, 16, 16]
    inits = [_weight(rng, "w1", [32, 16, 3, 3]), _weight(rng, "b1", [32], 0.1), _weight(rng, "w2", [32, 32, 3, 3]),
             _weight(rng, "b2", [32], 0.1), _weight(rng, "w3", [32, 32, 1, 1]), _weight(rng, "b3", [32], 0.1),
             _weight(rng, "wg", [10, 32 * 8 * 8]), _weight(rng, "bg", [10], 0.1)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], strides=[2, 2]),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("Flatten", ["r3"], ["f"]),
             helper.make_node("Gemm", ["f", "wg", "bg"], ["y"], transB=1)]
    return _model(nodes, inits, shape, [1, 10]), shape


def block(rng) -> tuple[onnx.ModelProto, list[int]]:
    """A transformer block on 32 tokens of width 64: LayerNorm -> Q, K, V linear layers ->
    softmax(Q K^T / 8) V -> output linear layer -> residual Add -> MLP (64 -> 128 -> Gelu -> 64),
    Gelu as exporters before opset 20 write it: x * 0.5 * (1 + Erf(x / sqrt(2)))."""
    t, d, h = 32, 64, 128
    inits = [numpy_helper.from_array(np.ones(d, np.float32), "g"), numpy_helper.from_array(np.zeros(d, np.float32), "be"),
             numpy_helper.from_array(np.array(0.125, np.float32), "inv_sqrt_d")]
    inits += [numpy_helper.from_array(np.array(v, np.float32), n) for n, v in (("sqrt2", np.sqrt(2)), ("one", 1),
                                                                              ("half", 0.5))]
    for name, (k, n) in dict(wq=(d, d), wk=(d, d), wv=(d, d), wo=(d, d), w1=(d, h), w2=(h, d)).items():
        inits += [_weight(rng, name, [k, n], 1 / np.sqrt(k)), _weight(rng, "b" + name[1:], [n], 0.1)]
    nodes = [helper.make_node("LayerNormalization", ["x", "g", "be"], ["n"], axis=-1)]
    for name in ("q", "k", "v"):
        nodes += [helper.make_node("MatMul", ["n", f"w{name}"], [f"{name}m"]),
                  helper.make_node("Add", [f"{name}m", f"b{name}"], [name])]
    nodes += [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 2, 1]),
              helper.make_node("MatMul", ["q", "kt"], ["s"]),
              helper.make_node("Mul", ["s", "inv_sqrt_d"], ["ss"]),
              helper.make_node("Softmax", ["ss"], ["p"], axis=-1),
              helper.make_node("MatMul", ["p", "v"], ["a"]),
              helper.make_node("MatMul", ["a", "wo"], ["om"]), helper.make_node("Add", ["om", "bo"], ["o"]),
              helper.make_node("Add", ["x", "o"], ["r"]),
              helper.make_node("MatMul", ["r", "w1"], ["h1m"]), helper.make_node("Add", ["h1m", "b1"], ["h1"]),
              helper.make_node("Div", ["h1", "sqrt2"], ["gd"]), helper.make_node("Erf", ["gd"], ["ge"]),
              helper.make_node("Add", ["ge", "one"], ["ga"]), helper.make_node("Mul", ["h1", "ga"], ["gm"]),
              helper.make_node("Mul", ["gm", "half"], ["h1r"]),
              helper.make_node("MatMul", ["h1r", "w2"], ["h2m"]), helper.make_node("Add", ["h2m", "b2"], ["y"])]
    return _model(nodes, inits, [1, t, d], [1, t, d]), [1, t, d]


class _Data(CalibrationDataReader):
    def __init__(self, rng, shape):
        self.batches = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

    def get_next(self):
        return next(self.batches, None)


def folders(name: str, build, work: Path) -> tuple[Path, Path]:
    """Test folders (network.onnx, inputs.npz, outputs.npz from onnxruntime) of the float network
    and its QDQ version."""
    rng = np.random.default_rng(0)
    model, shape = build(rng)
    made = []
    for kind in ("float", "qdq"):
        folder = work / f"{name}_{kind}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / "network.onnx"
        if kind == "float":
            onnx.save(model, path)
        else:
            quantize_static(str(made[0] / "network.onnx"), str(path), _Data(rng, shape), quant_format=QuantFormat.QDQ,
                            per_channel=True, reduce_range=True, weight_type=QuantType.QInt8,
                            activation_type=QuantType.QInt8)
        x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        y = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        np.savez(folder / "inputs.npz", x=x)
        np.savez(folder / "outputs.npz", y=y)
        made.append(folder)
    return made[0], made[1]


def float_layers(folder: Path, work: Path) -> str:
    """The layers ``deeploy compile -v`` lists as float, counted by op."""
    out = subprocess.run([sys.executable, "-c", "import sys; from Deeploy.cli import main; sys.exit(main())", "compile",
                          str(folder / "network.onnx"), "--platform", "Siracusa", "-o", str(work / "gen" / "float_layers"),
                          "-v"], capture_output=True, text=True, cwd=REPO).stdout
    listed = next((line.split(":", 1)[1] for line in out.splitlines() if line.startswith("  float:")), None)
    if listed is None:
        sys.exit(f"compile failed:\n{out[-3000:]}")
    ops = collections.Counter(re.findall(r"\((\w+)\)", listed))
    return ", ".join(f"{op} x{n}" for op, n in sorted(ops.items())) or "none"


def cycles(folder: Path, l1: int, work: Path) -> tuple[int, str]:
    """The run's cycles, and how its outputs compare with onnxruntime's."""
    cmd = [sys.executable, str(RUNNER), "-t", str(folder), "--cores=8", "--l1", str(l1),
           "--gen-dir", str(work / "gen" / f"{folder.name}_{l1}")]
    print("$", " ".join(cmd[1:]), flush=True)
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO / "DeeployTest")
    out = run.stdout
    runtime, errors = re.search(r"Runtime: (\d+) cycles", out), re.search(r"Errors: (\d+) out of (\d+)", out)
    if runtime is None or errors is None:
        sys.exit(f"run failed:\n{(out + run.stderr)[-3000:]}")
    exact = errors.group(1) == "0" and re.search(r"worst abs error 0\.000e0", out)
    return int(runtime.group(1)), "bit-exact" if exact else f"{errors.group(0)} beyond the tolerance vs onnxruntime"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--small-l1", type=int, default=20000)
    ap.add_argument("--networks", default="cnn,block", help="comma-separated: cnn, block")
    ap.add_argument("--work", type=Path, default=WORK, help=f"folder of the test folders and builds (default {WORK})")
    args = ap.parse_args()
    for name in args.networks.split(","):
        float_dir, qdq_dir = folders(name, dict(cnn=cnn, block=block)[name], args.work)
        print(f"{name:6s} QDQ float layers: {float_layers(qdq_dir, args.work)}", flush=True)
        for l1 in (64000, args.small_l1):
            (f, _), (q, note) = cycles(float_dir, l1, args.work), cycles(qdq_dir, l1, args.work)
            print(f"{name:6s} --l1 {l1:6d}: float {f:9d} cycles, QDQ {q:9d} cycles, float / QDQ {f / q:5.2f}x, "
                  f"QDQ {note}", flush=True)


if __name__ == "__main__":
    main()
