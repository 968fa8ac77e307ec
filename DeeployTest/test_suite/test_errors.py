"""Bad input gets one clear line naming the culprit, a non-zero exit and no half-written output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from DeeployTest.test_suite.conftest import DEEPLOY_TEST


def _model(nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def _vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _deeploy(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "Deeploy.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def _assert_one_line_error(proc, *needles):
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert "Traceback" not in proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


def test_unsupported_ops_are_all_listed(tmp_path: Path):
    nodes = [helper.make_node("Foo", ["x"], ["a"], name="foo1"),
             helper.make_node("Transpose", ["a"], ["b"], name="transpose"),
             helper.make_node("Bar", ["b"], ["c"], name="bar1"),
             helper.make_node("Foo", ["c"], ["y"], name="foo2")]
    onnx.save(_model(nodes, [_vi("x", [1, 4])], [_vi("y", [4, 1])]), tmp_path / "m.onnx")
    out = tmp_path / "out"
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", out, "--input-type", "x=int8")
    _assert_one_line_error(proc, "Foo", "'foo1'", "'foo2'", "Bar", "'bar1'")
    assert "transpose" not in proc.stderr
    assert not out.exists()


def test_malformed_onnx_names_the_file(tmp_path: Path):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07this is not protobuf")
    proc = _deeploy("compile", bad, "-o", tmp_path / "out")
    _assert_one_line_error(proc, "broken.onnx")
    assert not (tmp_path / "out").exists()


def test_bad_attribute_names_the_node_and_keeps_old_output(tmp_path: Path):
    w = numpy_helper.from_array(np.ones((4, 2, 3, 3), np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="the_conv", group=3)
    onnx.save(_model([conv], [_vi("x", [1, 4, 8, 8])], [_vi("y", [1, 4, 6, 6])], [w]), tmp_path / "m.onnx")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous result")
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", out, "--input-type", "x=int8")
    _assert_one_line_error(proc, "the_conv", "Conv", "group=3")
    assert (out / "keep.txt").read_text() == "previous result"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.onnx", "out"]


def test_non_integer_constant_compiles_as_a_float_network(tmp_path: Path):
    c = numpy_helper.from_array(np.array([0.5, 1.0], np.float32), "c")
    node = helper.make_node("Add", ["x", "c"], ["y"], name="add")
    onnx.save(_model([node], [_vi("x", [2])], [_vi("y", [2])], [c]), tmp_path / "m.onnx")
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    assert "FAdd_f32_f32_f32" in (tmp_path / "out" / "Network.c").read_text()


def test_float_only_op_on_an_integer_network_is_one_line_error(tmp_path: Path):
    node = helper.make_node("Exp", ["x"], ["y"], name="exp")
    onnx.save(_model([node], [_vi("x", [2])], [_vi("y", [2])]), tmp_path / "m.onnx")
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", tmp_path / "out", "--input-type", "x=int8")
    _assert_one_line_error(proc, "'exp'", "float tensors only")


def _runner(test_dir: Path):
    return subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_generic.py"), "-t", str(test_dir),
                           "--gen-dir", str(test_dir / "gen")], capture_output=True, text=True)


def _add_test(tmp_path: Path) -> Path:
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    onnx.save(_model([node], [_vi("a", [2, 3]), _vi("b", [2, 3])], [_vi("y", [2, 3])]), tmp_path / "network.onnx")
    return tmp_path


def test_missing_npz_names_the_file(tmp_path: Path):
    proc = _runner(_add_test(tmp_path))
    _assert_one_line_error(proc, "inputs.npz")


def test_mismatched_npz_names_input_and_expected_shape(tmp_path: Path):
    d = _add_test(tmp_path)
    np.savez(d / "inputs.npz", np.zeros((2, 3)), np.zeros((3, 3)))
    np.savez(d / "outputs.npz", np.zeros((2, 3)))
    proc = _runner(d)
    _assert_one_line_error(proc, "'b'", "[3, 3]", "[2, 3]")


def test_too_few_npz_arrays(tmp_path: Path):
    d = _add_test(tmp_path)
    np.savez(d / "inputs.npz", np.zeros((2, 3)))
    np.savez(d / "outputs.npz", np.zeros((2, 3)))
    _assert_one_line_error(_runner(d), "inputs.npz", "1 arrays", "2 inputs")


def test_wrong_golden_fails_the_run(tmp_path: Path):
    d = _add_test(tmp_path)
    a, b = np.arange(6).reshape(2, 3), np.ones((2, 3))
    np.savez(d / "inputs.npz", a, b)
    wrong = a + b
    wrong[1, 2] += 1
    np.savez(d / "outputs.npz", wrong)
    proc = _runner(d)
    assert proc.returncode == 1
    assert "Errors: 2 out of 12" in proc.stdout  # one wrong element, checked in each of two runs
