"""inputs.npz / outputs.npz: arrays matched to the graph's tensors by name (by position only when
unnamed), shapes checked, unreadable files named; expected values always one per output element."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.errors import DeeployError, FrontendError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays


def _graph(tmp_path: Path, out_shape=(5, 25), names=("a", "b")):
    """y = a + b + w, a and b of shape out_shape, w a constant."""
    vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))  # noqa: E731
    w = numpy_helper.from_array(np.full(out_shape, 2, np.float32), "w")
    nodes = [helper.make_node("Add", list(names), ["s"], name="add1"),
             helper.make_node("Add", ["s", "w"], ["y"], name="add2")]
    model = helper.make_model(helper.make_graph(nodes, "g", [vi(n, out_shape) for n in names],
                                                [vi("y", out_shape)], [w]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "network.onnx")
    return load_onnx(tmp_path / "network.onnx")


def _map(tmp_path, graph, role="input", **arrays):
    if role == "output":   # output shapes are known once the graph is inferred
        assign_input_types(graph, {n: np.zeros(graph.tensors[n].shape, np.int64) for n in graph.inputs})
        infer_graph(graph)
    path = tmp_path / f"{role}s.npz"
    np.savez(path, **arrays)
    return map_arrays(path, load_npz_arrays(path), graph.inputs if role == "input" else graph.outputs, graph, role)


def _err(fn, *needles):
    with pytest.raises(FrontendError) as info:
        fn()
    for needle in needles:
        assert needle in str(info.value), (needle, str(info.value))
    return str(info.value)


def test_named_arrays_match_by_name_not_order(tmp_path):
    g = _graph(tmp_path)
    a, b = np.zeros((5, 25)), np.ones((5, 25))
    mapped = _map(tmp_path, g, b=b, a=a)            # stored in the other order
    assert (mapped["a"] == 0).all() and (mapped["b"] == 1).all()


def test_unnamed_arrays_match_by_position(tmp_path):
    g = _graph(tmp_path)
    path = tmp_path / "inputs.npz"
    np.savez(path, np.zeros((5, 25)), np.ones((5, 25)))
    mapped = map_arrays(path, load_npz_arrays(path), g.inputs, g, "input")
    assert (mapped["a"] == 0).all() and (mapped["b"] == 1).all()


def test_some_named_arrays_name_the_missing_tensor(tmp_path):
    g = _graph(tmp_path)
    _err(lambda: _map(tmp_path, g, b=np.zeros((5, 25)), arr_1=np.ones((5, 25))), "inputs.npz", "none for 'a'")


def test_named_like_another_input_at_the_wrong_place_is_refused(tmp_path):
    g = _graph(tmp_path, names=("input_1", "x"))
    _err(lambda: _map(tmp_path, g, input_0=np.zeros((5, 25)), input_1=np.ones((5, 25))),
         "inputs.npz", "'input_1'", "position 1", "'x'")


def test_wrong_names_name_the_missing_tensor(tmp_path):
    g = _graph(tmp_path)
    _err(lambda: _map(tmp_path, g, a=np.zeros((5, 25)), c=np.ones((5, 25))), "inputs.npz", "none for 'b'")


@pytest.mark.parametrize("shape", [(250,), (100,), (25, 5), (5, 5, 5)])
def test_output_of_other_shape_is_refused(tmp_path, shape):
    g = _graph(tmp_path)
    values = np.zeros(shape)
    _err(lambda: _map(tmp_path, g, "output", y=values), "outputs.npz", "'y'", f"{list(shape)}", "[5, 25]")


def test_size1_dims_may_differ(tmp_path):
    g = _graph(tmp_path)
    values = np.arange(125).reshape(1, 5, 1, 25)
    mapped = _map(tmp_path, g, "output", y=values)
    assert mapped["y"].shape == (5, 25) and (mapped["y"].reshape(-1) == np.arange(125)).all()


def test_extra_array_is_refused_unless_a_constant_copy(tmp_path):
    g = _graph(tmp_path)
    a, b = np.zeros((5, 25)), np.ones((5, 25))
    assert set(_map(tmp_path, g, arr_0=a, arr_1=b, arr_2=np.full((5, 25), 2))) == {"a", "b"}   # copy of 'w'
    _err(lambda: _map(tmp_path, g, arr_0=a, arr_1=b, arr_2=np.full((5, 25), 3)), "'arr_2'", "not copies")
    _err(lambda: _map(tmp_path, g, "output", arr_0=a, arr_1=b), "outputs.npz", "'arr_1'")


def test_too_few_arrays(tmp_path):
    g = _graph(tmp_path)
    _err(lambda: _map(tmp_path, g, arr_0=np.zeros((5, 25))), "inputs.npz", "1 arrays", "2 inputs", "b")


@pytest.mark.parametrize("content,needle", [(b"", "empty"), (b"\x93NUMPY garbage" * 20, "not a valid .npz"),
                                            (b"PK\x03\x04garbage", "not a valid .npz")],
                         ids=["empty", "garbage", "broken-zip"])
def test_unreadable_npz_is_named(tmp_path, content, needle):
    path = tmp_path / "inputs.npz"
    path.write_bytes(content)
    message = _err(lambda: load_npz_arrays(path), str(path), needle)
    assert "pickle" not in message


def test_npz_of_python_objects_is_named(tmp_path):
    path = tmp_path / "inputs.npz"
    np.savez(path, np.array([{"a": 1}], dtype=object))
    _err(lambda: load_npz_arrays(path), str(path), "not a valid .npz", "Python objects")


def test_harness_refuses_expected_values_of_another_size(tmp_path):
    """The harness never reads past an expected array, even for an output of unknown declared shape."""
    from DeeployTest.testUtils.harness import write_harness
    g = _graph(tmp_path)
    assign_input_types(g, {"a": np.zeros((5, 25), np.int64), "b": np.zeros((5, 25), np.int64)})
    infer_graph(g)
    inputs = {"a": np.zeros((5, 25), np.int64), "b": np.zeros((5, 25), np.int64)}
    with pytest.raises(DeeployError, match=r"outputs.npz.*'y'.*100.*125"):
        write_harness(g, inputs, [np.zeros(100, np.int64)], tmp_path / "h")
    assert not (tmp_path / "h").exists()


def _exported(folder: Path, leftovers: int = 4) -> Path:
    """A PyTorch-style export listing its initializers as graph inputs (Conv, BatchNormalization,
    Relu, Gemm), with inputs.npz holding every declared input by position plus ``leftovers``
    int64 counters (BatchNorm num_batches_tracked); outputs from a numpy reference."""
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, (1, 2, 5, 5)).astype(np.float32)
    params = {"conv.weight": rng.normal(0, 0.5, (4, 2, 3, 3)), "conv.bias": rng.normal(0, 0.1, 4),
              "bn.weight": 1 + 0.1 * rng.normal(0, 1, 4), "bn.bias": 0.1 * rng.normal(0, 1, 4),
              "bn.running_mean": 0.1 * rng.normal(0, 1, 4), "bn.running_var": 0.5 + rng.random(4),
              "fc.weight": rng.normal(0, 0.5, (3, 36)), "fc.bias": rng.normal(0, 0.1, 3)}
    params = {k: v.astype(np.float32) for k, v in params.items()}
    nodes = [helper.make_node("Conv", ["x", "conv.weight", "conv.bias"], ["c"], kernel_shape=[3, 3]),
             helper.make_node("BatchNormalization", ["c", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var"],
                              ["n"], epsilon=1e-5),
             helper.make_node("Relu", ["n"], ["r"]), helper.make_node("Flatten", ["r"], ["f"]),
             helper.make_node("Gemm", ["f", "fc.weight", "fc.bias"], ["y"], transB=1)]
    vi = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))  # noqa: E731
    graph = helper.make_graph(nodes, "exported", [vi("x", x.shape)] + [vi(k, v.shape) for k, v in params.items()],
                              [vi("y", (1, 3))], [numpy_helper.from_array(v, k) for k, v in params.items()])
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), folder / "network.onnx")
    p = {k: v.astype(np.float64) for k, v in params.items()}
    conv = np.zeros((4, 3, 3))
    for o in range(4):
        for i in range(3):
            for j in range(3):
                conv[o, i, j] = (x[0, :, i:i + 3, j:j + 3] * p["conv.weight"][o]).sum() + p["conv.bias"][o]
    norm = (conv - p["bn.running_mean"][:, None, None]) / np.sqrt(p["bn.running_var"][:, None, None] + 1e-5)
    r = np.maximum(norm * p["bn.weight"][:, None, None] + p["bn.bias"][:, None, None], 0)
    y = r.reshape(1, 36) @ p["fc.weight"].T + p["fc.bias"]
    np.savez(folder / "inputs.npz", x, *params.values(), *[np.array(7, np.int64)] * leftovers)
    np.savez(folder / "outputs.npz", y=y.astype(np.float32))
    return folder


def test_initializers_listed_as_inputs_are_read_positionally(tmp_path, capsys):
    folder = _exported(tmp_path / "exported")
    g = load_onnx(folder / "network.onnx")
    mapped = map_arrays(folder / "inputs.npz", load_npz_arrays(folder / "inputs.npz"), g.inputs, g, "input")
    assert list(mapped) == ["x"] and mapped["x"].shape == (1, 2, 5, 5)
    err = capsys.readouterr().err
    assert err.count("ignored") == 4 and "'arr_9' follows the network's 9 declared inputs" in err, err


def test_initializer_array_with_other_values_is_refused(tmp_path):
    folder = _exported(tmp_path / "exported")
    arrays = load_npz_arrays(folder / "inputs.npz")
    arrays["arr_2"] = arrays["arr_2"] + 1
    g = load_onnx(folder / "network.onnx")
    _err(lambda: map_arrays(folder / "inputs.npz", arrays, g.inputs, g, "input"), "'arr_2'", "'conv.bias'",
         "differs from the initializer")


def test_exported_folder_runs_on_generic(tmp_path, capsys):
    from DeeployTest.test_suite.test_compiler_defects import run_generic
    run_generic(_exported(tmp_path / "exported"), capsys)


@pytest.mark.skipif(__import__("shutil").which("qemu-system-riscv32") is None, reason="QEMU missing")
def test_exported_folder_runs_on_siracusa(tmp_path, capsys):
    from DeeployTest.test_suite.test_compiler_defects import run_siracusa
    run_siracusa(_exported(tmp_path / "exported"), capsys)
