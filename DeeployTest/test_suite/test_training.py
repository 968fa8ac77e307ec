"""Training steps: an MLP's forward pass, cross-entropy loss, hand-written backward pass and SGD
updates. The weights are the network's variables: mutable buffers initialised once and updated
by every RunNetwork(); three successive runs must give the outputs of three training steps of a
numpy reference (Generic, Siracusa untiled and tiled)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.compiler import compile_graph
from Deeploy.errors import FrontendError, OpError
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from DeeployTest.test_suite.test_compiler_defects import run_generic, run_siracusa

STEPS = 3
LR = 0.5
N, D, H, C = 4, 6, 8, 3
QEMU = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None
                          or shutil.which("riscv64-unknown-elf-gcc") is None, reason="RISC-V toolchain or QEMU missing")


def _params(rng):
    return {"W1": rng.normal(0, 0.5, (D, H)), "b1": rng.normal(0, 0.1, H),
            "W2": rng.normal(0, 0.5, (H, C)), "b2": rng.normal(0, 0.1, C)}


def _numpy_steps(params, x, labels, steps=STEPS):
    """Per step: (loss, updated W1, b1, W2, b2) of plain SGD on the mean cross-entropy, in float64."""
    p = {k: v.astype(np.float64) for k, v in params.items()}
    x = x.astype(np.float64)
    out = []
    for _ in range(steps):
        h = 1.0 / (1.0 + np.exp(-(x @ p["W1"] + p["b1"])))
        logits = h @ p["W2"] + p["b2"]
        z = logits - logits.max(axis=1, keepdims=True)
        prob = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
        loss = -np.log(prob[np.arange(N), labels]).mean()
        dlogits = prob.copy()
        dlogits[np.arange(N), labels] -= 1.0
        dlogits /= N
        dpre = (dlogits @ p["W2"].T) * h * (1.0 - h)
        grads = {"W1": x.T @ dpre, "b1": dpre.sum(axis=0), "W2": h.T @ dlogits, "b2": dlogits.sum(axis=0)}
        p = {k: p[k] - np.float32(LR) * grads[k] for k in p}
        out.append([np.float32(loss)] + [p[k].astype(np.float32) for k in ("W1", "b1", "W2", "b2")])
    return out


def _mlp_training(folder: Path, seed: int = 0) -> Path:
    """network.onnx, inputs.npz and outputs.npz, outputs_2.npz, ... (one per training step)."""
    rng = np.random.default_rng(seed)
    params = {k: v.astype(np.float32) for k, v in _params(rng).items()}
    x = rng.normal(0, 1, (N, D)).astype(np.float32)
    labels = rng.integers(0, C, N).astype(np.int64)
    node = helper.make_node
    nodes = [node("MatMul", ["x", "W1"], ["xw"]), node("Add", ["xw", "b1"], ["pre"]), node("Sigmoid", ["pre"], ["h"]),
             node("MatMul", ["h", "W2"], ["hw"]), node("Add", ["hw", "b2"], ["logits"]),
             node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss", "log_prob"], reduction="mean"),
             node("SoftmaxCrossEntropyLossGrad", ["dy", "log_prob", "labels"], ["dlogits"], domain="com.microsoft"),
             node("Transpose", ["h"], ["hT"], perm=[1, 0]), node("MatMul", ["hT", "dlogits"], ["dW2"]),
             node("ReduceSum", ["dlogits", "axis0"], ["db2"], keepdims=0),
             node("Transpose", ["W2"], ["W2T"], perm=[1, 0]), node("MatMul", ["dlogits", "W2T"], ["dh"]),
             node("Sub", ["one", "h"], ["1mh"]), node("Mul", ["h", "1mh"], ["dsig"]),
             node("Mul", ["dh", "dsig"], ["dpre"]),
             node("Transpose", ["x"], ["xT"], perm=[1, 0]), node("MatMul", ["xT", "dpre"], ["dW1"]),
             node("ReduceSum", ["dpre", "axis0"], ["db1"], keepdims=0),
             node("SGD", ["W1", "dW1"], ["W1_new"], lr=LR), node("SGD", ["b1", "db1"], ["b1_new"], lr=LR),
             node("SGD", ["W2", "dW2"], ["W2_new"], lr=LR), node("SGD", ["b2", "db2", "lr"], ["b2_new"])]
    consts = {**params, "dy": np.array(1.0, np.float32), "one": np.array(1.0, np.float32),
              "axis0": np.array([0], np.int64), "lr": np.array(LR, np.float32)}
    vi = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "mlp_sgd",
                              [vi("x", TensorProto.FLOAT, [N, D]), vi("labels", TensorProto.INT64, [N])],
                              [vi("loss", TensorProto.FLOAT, [])] + [vi(f"{k}_new", TensorProto.FLOAT, list(v.shape))
                                                                     for k, v in params.items()],
                              [numpy_helper.from_array(v, k) for k, v in consts.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13),
                                                    helper.make_opsetid("com.microsoft", 1)])
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "network.onnx")
    np.savez(folder / "inputs.npz", x=x, labels=labels)
    for k, step in enumerate(_numpy_steps(params, x, labels)):
        np.savez(folder / ("outputs.npz" if k == 0 else f"outputs_{k + 1}.npz"),
                 **dict(zip(["loss", "W1_new", "b1_new", "W2_new", "b2_new"], step)))
    return folder


def _expect_steps(out: str) -> None:
    elements = 1 + D * H + H + H * C + C
    assert re.search(rf"Errors: 0 out of {STEPS * elements}\b", out), out


def test_training_steps_on_generic(tmp_path, capsys):
    test = _mlp_training(tmp_path / "mlp_sgd")
    _expect_steps(run_generic(test, capsys))
    source = (test / "gen_generic" / "network" / "Network.c").read_text()
    assert re.search(r"^static float c_W2\[", source, re.M), "the weights are mutable variables"
    assert "static const float c_W2" not in source


@QEMU
@pytest.mark.parametrize("tiled", (False, True), ids=("untiled", "tiled"))
def test_training_steps_on_siracusa(tmp_path, capsys, tiled):
    test = _mlp_training(tmp_path / "mlp_sgd")
    _expect_steps(run_siracusa(test, capsys, l1=4096 if tiled else None, double_buffer=tiled))


def _load(tmp_path):
    graph = load_onnx(_mlp_training(tmp_path / "mlp_sgd") / "network.onnx")
    assign_input_types(graph, {"x": np.zeros((N, D), np.float32), "labels": np.zeros(N, np.int64)})
    return graph


def test_updated_weights_are_variables_not_folded(tmp_path):
    graph = _load(tmp_path)
    assert graph.state == {"W1": "W1_new", "b1": "b1_new", "W2": "W2_new", "b2": "b2_new"}
    result = compile_graph(graph, "Generic", tmp_path / "out")
    assert any(n.op == "Transpose" and n.inputs == ["W2"] for n in result.graph.nodes), \
        "the transposed weight must be computed each run, not folded from the initial value"


def test_weight_updated_twice_is_refused(tmp_path):
    folder = _mlp_training(tmp_path / "mlp_sgd")
    model = onnx.load(folder / "network.onnx")
    model.graph.node.append(helper.make_node("SGD", ["W1", "dW1"], ["W1_again"], lr=0.1, name="again"))
    model.graph.output.append(helper.make_tensor_value_info("W1_again", TensorProto.FLOAT, [D, H]))
    onnx.save(model, folder / "network.onnx")
    with pytest.raises(FrontendError, match=r"'W1' is updated by two optimizer steps.*'again'"):
        load_onnx(folder / "network.onnx")


def test_sgd_without_learning_rate_is_refused(tmp_path):
    folder = _mlp_training(tmp_path / "mlp_sgd")
    model = onnx.load(folder / "network.onnx")
    sgd = next(n for n in model.graph.node if n.op_type == "SGD")
    del sgd.attribute[:]
    onnx.save(model, folder / "network.onnx")
    graph = load_onnx(folder / "network.onnx")
    assign_input_types(graph, {"x": np.zeros((N, D), np.float32), "labels": np.zeros(N, np.int64)})
    with pytest.raises(OpError, match="learning rate"):
        infer_graph(graph)
