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
