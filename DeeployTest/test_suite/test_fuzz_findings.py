"""Minimal graphs of defects the random-graph fuzz (test_fuzz.py) found, each checked on the
platform where it failed, bit-exactly against the reference; and the zero-sized tensor rule:
the compiler either runs a graph with an empty tensor or rejects it with one clear error."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.errors import DeeployError
from Deeploy.frontend import assign_input_types, load_onnx
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import RunnerPlatform, run_test

NEEDS_QEMU = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def _run_siracusa(net: Net, tmp_path: Path, capsys, cores: int = 8) -> None:
    write_test(net, tmp_path / "test")
    args = argparse.Namespace(test=str(tmp_path / "test"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cores=cores, profileUntiled=False, timeout=None)
    code = run_test(args, RunnerPlatform("Siracusa", "TEST_SIRACUSA"), {"cores": cores})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out


@NEEDS_QEMU
def test_matmul_requant_per_channel_on_a_batch_axis(tmp_path, capsys):
    """MatMul (2,3,2,4) x (4,2) then a RequantShift whose constants vary along axis 1, one of the
    batch dims: fusing them gave a RequantizedMatMul no Siracusa kernel could index (binding error);
    the pair now stays unfused there."""
    rng = np.random.default_rng(0)
    net = Net("matmul_rq_batch_axis")
    x = net.input("x", rng.integers(-128, 128, size=(2, 3, 2, 4)))
    y = net.node("MatMul", [x, net.const(rng.integers(-50, 51, size=(4, 2)), "w")])
    net.output(net.rqs(y, np.array([3, 5, 7]).reshape(3, 1, 1), np.array([1, -2, 3]).reshape(3, 1, 1), 8))
    _run_siracusa(net, tmp_path, capsys)


@NEEDS_QEMU
def test_concat_of_one_input_three_times_tiled(tmp_path, capsys):
    """x int8[11, 12], Concat([x, x, x], axis 0), tiled with --l1 512: the tiler used to pick a tile
    meeting x at several places with different ranges; an input concatenated more than once now
    keeps the concatenated axis whole."""
    from Deeploy.tiling.network import TilingOptions
    rng = np.random.default_rng(0)
    net = Net("concat_same_input")
    x = net.input("x", rng.integers(-128, 128, size=(11, 12)))
    net.output(net.node("Concat", [x, x, x], {"axis": 0}))
    write_test(net, tmp_path / "test")
    args = argparse.Namespace(test=str(tmp_path / "test"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cores=8, l1=512, l2=None, defaultMemLevel="L2",
                              doublebuffer=False, profileTiling=False, plotMemAlloc=False, profileUntiled=False,
                              timeout=None)
    code = run_test(args, RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED"),
                    {"cores": 8, "tiling": TilingOptions(l1=512)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out


ZERO_SIZED = {
    "Add": lambda net, x: net.node("Add", [x, x]),
    "Relu": lambda net, x: net.node("Relu", [x]),
    "Transpose": lambda net, x: net.node("Transpose", [x], {"perm": [1, 0, 2]}),
    "ReduceSum": lambda net, x: net.node("ReduceSum", [x, net.const(np.array([2]), "axes", dtype=np.int64)],
                                         {"keepdims": 1}),
    "Concat": lambda net, x: net.node("Concat", [x, x], {"axis": 1}),
}


@pytest.mark.parametrize("op", sorted(ZERO_SIZED))
def test_zero_sized_tensor(op, tmp_path, capsys):
    """A (2, 0, 3) input: either the Generic build runs and matches the (empty) goldens, or the
    compiler rejects the graph with one error line that names the empty tensor, and writes nothing."""
    net = Net(f"zero_{op}")
    x = net.input("x", np.zeros((2, 0, 3), dtype=np.int64))
    net.output(ZERO_SIZED[op](net, x))
    write_test(net, tmp_path / "test", ort_check=False)
    graph = load_onnx(tmp_path / "test" / "network.onnx")
    assign_input_types(graph, {"x": np.zeros((2, 0, 3), dtype=np.int64)})
    try:
        compile_graph(graph, "Generic", tmp_path / "compiled")
    except DeeployError as exc:
        message = str(exc).strip()
        assert "\n" not in message and "'x'" in message and ("empty" in message or "zero" in message), message
        assert not (tmp_path / "compiled").exists()
        return
    args = argparse.Namespace(test=str(tmp_path / "test"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"))
    code = run_test(args, GENERIC)
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
