"""Bad input gets one clear line naming the culprit, a non-zero exit and no half-written output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
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
    _assert_one_line_error(proc, "Foo", "Bar", "deeploy ops --platform Generic")
    assert "transpose" not in proc.stderr
    assert not out.exists()
    verbose = _deeploy("compile", tmp_path / "m.onnx", "-o", out, "--input-type", "x=int8", "-v")
    assert "Foo (2): 'foo1', 'foo2'; Bar (1): 'bar1'" in verbose.stderr and "transpose" not in verbose.stderr


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


def _relu(x, y, name):
    return helper.make_node("Relu", [x], [y], name=name)


def _one(value=1.0):
    return numpy_helper.from_array(np.full(4, value, np.float32), "c")


# (id, nodes, extra graph inputs, initializers, expected words): graphs onnx.checker rejects
NON_SSA_CASES = [
    ("initializer-also-node-output", [_relu("x", "c", "r"), helper.make_node("Add", ["c", "x"], ["y"], name="a")],
     [], [_one()], ("'c'", "'r'", "initializer")),
    ("two-producers", [_relu("x", "c", "r1"), _relu("x", "c", "r2"), helper.make_node("Add", ["c", "x"], ["y"], name="a")],
     [], [], ("'c'", "'r2'", "'r1'")),
    ("graph-input-also-node-output", [_relu("x", "z", "r"), helper.make_node("Add", ["z", "x"], ["y"], name="a")],
     ["z"], [], ("'z'", "'r'", "graph input")),
    ("constant-node-over-initializer",
     [helper.make_node("Constant", [], ["c"], name="k", value=_one(2.0)), helper.make_node("Add", ["c", "x"], ["y"], name="a")],
     [], [_one()], ("'c'", "'k'", "initializer")),
    ("constant-node-over-node-output",
     [_relu("x", "c", "r"), helper.make_node("Constant", [], ["c"], name="k", value=_one()),
      helper.make_node("Add", ["c", "x"], ["y"], name="a")], [], [], ("'c'", "'k'", "'r'")),
    ("output-named-empty", [_relu("x", "", "r"), _relu("x", "y", "r2")], [], [], ("'r'", "Relu", "output")),
    ("no-outputs", [helper.make_node("Relu", ["x"], [], name="r"), _relu("x", "y", "r2")], [], [], ("'r'", "Relu", "output")),
]


@pytest.mark.parametrize("nodes,extra,inits,needles", [c[1:] for c in NON_SSA_CASES], ids=[c[0] for c in NON_SSA_CASES])
def test_malformed_graph_is_one_line_error(tmp_path: Path, nodes, extra, inits, needles):
    onnx.save(_model(nodes, [_vi(n, [4]) for n in ["x", *extra]], [_vi("y", [4])], inits), tmp_path / "m.onnx")
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", tmp_path / "out")
    _assert_one_line_error(proc, "m.onnx", *needles)
    assert not (tmp_path / "out").exists()


def test_external_data_shorter_than_declared(tmp_path: Path):
    w = numpy_helper.from_array(np.arange(64, dtype=np.float32), "w")
    model = _model([helper.make_node("Add", ["x", "w"], ["y"], name="a")], [_vi("x", [64])], [_vi("y", [64])], [w])
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="m.bin", size_threshold=0)
    model = onnx.load(tmp_path / "m.onnx", load_external_data=False)   # no length: the shape says how much
    entries = [e for e in model.graph.initializer[0].external_data if e.key != "length"]
    del model.graph.initializer[0].external_data[:]
    model.graph.initializer[0].external_data.extend(entries)
    onnx.save(model, tmp_path / "m.onnx")
    (tmp_path / "m.bin").write_bytes((tmp_path / "m.bin").read_bytes()[:100])
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", tmp_path / "out")
    _assert_one_line_error(proc, "m.onnx", "initializer 'w'", "[64]")
    assert not (tmp_path / "out").exists()


def _relu_graph(shape):
    return [_relu("x", "y", "relu")], [_vi("x", shape)], []


def _pad_graph(pad):
    pads = numpy_helper.from_array(np.array([0, pad, 0, 0], np.int64), "p")
    return [helper.make_node("Pad", ["x", "p"], ["y"], name="the_pad")], [_vi("x", [1, 4])], [pads]


def _conv_graph(pad):
    w = numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "w")
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="the_conv", kernel_shape=[1, 1], pads=[pad, 0, pad, 0],
                            strides=[2 * pad, 1])
    return [conv], [_vi("x", [1, 1, 4, 4])], [w]


# (id, graph, platform, expected words): sizes that wrapped in the generated C's uint32_t
SIZE_CASES = [
    ("bytes-2^32", _relu_graph([2**31, 2]), "Generic", ("'x'", "graph input", "2^32")),
    ("elements-2^64", _relu_graph([2**32, 2**32]), "Generic", ("'x'", "[4294967296, 4294967296]")),
    ("bytes-2^32-siracusa", _relu_graph([2**31, 2]), "Siracusa", ("'x'", "Siracusa", "2^32")),
    ("pad-2^40", _pad_graph(2**40), "Generic", ("'y'", "'the_pad'", "2^32")),
    ("conv-pads-2^33", _conv_graph(2**33), "Generic", ("'the_conv'", "pads", "2^32")),
]


@pytest.mark.parametrize("graph,platform,needles", [c[1:] for c in SIZE_CASES], ids=[c[0] for c in SIZE_CASES])
def test_sizes_beyond_the_address_space_are_refused(tmp_path: Path, graph, platform, needles):
    nodes, inputs, inits = graph
    onnx.save(_model(nodes, inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits),
              tmp_path / "m.onnx")
    proc = _deeploy("compile", tmp_path / "m.onnx", "-o", tmp_path / "out", "--platform", platform,
                    "--input-type", "x=int8")
    _assert_one_line_error(proc, *needles)
    assert not (tmp_path / "out").exists()
