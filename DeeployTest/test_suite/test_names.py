"""Names: what the compiler makes (transposes, copies, NPU constants) never takes a name the
network already has, node names are unique after loading, and a graph built in Python with a
repeated node name is refused. The networks run on 8 cores under QEMU, bit-exact against the
reference interpreter's goldens."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.errors import GraphError
from Deeploy.frontend import load_onnx
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ir.dtypes import INT8
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.testUtils.runner import RunnerPlatform, run_test

NEEDS_QEMU = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def _run(net: Net | None, tmp_path: Path, capsys, platform: str, folder: str) -> None:
    """Writes ``net`` (unless None: written already) into ``tmp_path/test`` and runs it."""
    if net is not None:
        write_test(net, tmp_path / "test")
    args = argparse.Namespace(test=str(tmp_path / "test"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cores=8, profileUntiled=False, timeout=None)
    code = run_test(args, RunnerPlatform(platform, folder), {"cores": 8})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out


@NEEDS_QEMU
def test_requantshift_named_like_the_layout_transpose(tmp_path, capsys):
    """A RequantShift 'a_in_hwc' (with an output table: scalar mul and add, 8-bit input) feeding
    Conv 'a': the layout pass named the conv's input transpose 'a_in_hwc' too, the planner placed
    the RequantShift's table at the transpose's step, over a tensor live when the table is filled."""
    rng = np.random.default_rng(0)
    net = Net("rq_named_in_hwc")
    x = net.node("Relu", [net.input("x", rng.integers(-128, 128, size=(1, 8, 16, 16)))])
    r = net.rqs(x, 3, -5, 2, name="a_in_hwc")
    y = net.node("Conv", [r, net.const(rng.integers(-5, 6, size=(8, 8, 3, 3)), "w")],
                 {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}, name="a")
    z = net.input("z", rng.integers(-128, 128, size=(1, 4)))
    for _ in range(3):           # a side branch: the transpose runs a few layers after the RequantShift
        z = net.node("Relu", [z])
    net.output(net.calib_rqs(y), z)
    _run(net, tmp_path, capsys, "Siracusa", "TEST_SIRACUSA")


@NEEDS_QEMU
def test_tensor_named_like_the_npu_bias(tmp_path, capsys):
    """A constant 'c.npu_bias' beside a requantised Conv 'c' the NPU runs: the NPU lowering wrote
    its bias into the tensor of that name, so the Add reading the constant read the bias."""
    rng = np.random.default_rng(0)
    net = Net("npu_bias_named")
    x = net.input("x", rng.integers(-128, 128, size=(1, 8, 16, 16)))
    y = net.node("Conv", [x, net.const(rng.integers(-20, 21, size=(8, 8, 1, 1)), "w")], {"kernel_shape": [1, 1]},
                 name="c")
    z = net.input("z", rng.integers(-128, 128, size=(4, 8)))
    b = net.const(rng.integers(-50, 50, size=(8,)), "c.npu_bias")
    net.output(net.calib_rqs(y, axis=1), net.calib_rqs(net.node("Add", [z, b])))
    _run(net, tmp_path, capsys, "Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA")


@NEEDS_QEMU
def test_repeated_node_names_and_node_named_like_a_tensor(tmp_path, capsys):
    """An ONNX file naming two nodes 'n' (and a third 'n_1'), one like the input tensor 'x' and
    leaving one unnamed: the loader keeps every name given first and gives the others fresh ones
    that no node has, and the network runs bit-exactly."""
    rng = np.random.default_rng(1)
    net = Net("repeated_names")
    x = net.input("x", rng.integers(-128, 128, size=(1, 8, 16, 16)))
    r = net.rqs(net.node("Relu", [x], name="n"), 3, -5, 2, name="m")
    y = net.node("Conv", [r, net.const(rng.integers(-5, 6, size=(8, 8, 3, 3)), "w")],
                 {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}, name="n_1")
    net.output(net.node("Relu", [net.calib_rqs(y, name="q")], name="x"))
    for proto, name in zip(net.nodes, ["n", "n", "", "n_1", "x"]):
        proto.name = name
    write_test(net, tmp_path / "test")
    names = [n.name for n in load_onnx(tmp_path / "test" / "network.onnx").nodes]
    assert names == ["n", "n_2", "Conv_2", "n_1", "x"], names
    _run(None, tmp_path, capsys, "Siracusa", "TEST_SIRACUSA")


def test_graph_with_a_repeated_node_name_is_refused(tmp_path):
    """A graph built in Python naming two nodes alike: one GraphError naming the node, nothing
    written (later stages key layers by node name)."""
    tensors = {n: Tensor(n, (4,), INT8) for n in ("x", "y", "z")}
    graph = Graph("g", tensors, [Node("n", "Relu", ["x"], ["y"]), Node("n", "Relu", ["y"], ["z"])], ["x"], ["z"])
    with pytest.raises(GraphError, match="two nodes are named 'n'"):
        compile_graph(graph, "Generic", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_fresh_names_avoid_every_node_and_tensor_name():
    """``Graph.fresh`` never returns a name a node or tensor has, nor one it gave out before."""
    graph = Graph("g", {"x": Tensor("x"), "a_in_hwc": Tensor("a_in_hwc")}, [Node("a_in_hwc_1", "Relu", ["x"], ["a_in_hwc"])],
                  ["x"], ["a_in_hwc"])
    assert graph.fresh("a_in_hwc") == "a_in_hwc_2"
    assert graph.fresh("a_in_hwc") == "a_in_hwc_3"
    assert graph.fresh("x") == "x_1" and graph.fresh("y") == "y"
    assert graph.add_constant("x", np.array([1, 2])) == "x_2"
