"""Lowering passes: each rule on an inline model (resulting op types, equivalence with the
reference before the rewrite), and the whole Siracusa pass list on every test network."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.passes.manager import run_passes
from Deeploy.reference import run_reference
from Deeploy.targets.siracusa.platform import SIRACUSA_PASSES
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, network_dirs
from DeeployTest.testUtils.harness import FLOAT_TOLERANCE

RNG = np.random.default_rng(7)


def _const(name, value):
    return numpy_helper.from_array(np.asarray(value, np.float32), name)


def _rqs(x, y, name, mul=3, add=17, div=2**8):
    attrs = {k: numpy_helper.from_array(np.array([v], np.float32)) for k, v in
             (("div", div), ("n_levels_out", 256), ("signed", 1))}
    return (helper.make_node("RequantShift", [x, f"{name}.mul", f"{name}.add"], [y], name=name, **attrs),
            [_const(f"{name}.mul", np.asarray(mul)), _const(f"{name}.add", np.asarray(add))])


def _lower(tmp_path, nodes, inits, x_shape, y_shape, values, log=None, passes=SIRACUSA_PASSES):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    graph = load_onnx(tmp_path / "m.onnx")
    assign_input_types(graph, {"x": values})
    infer_graph(graph)
    before = run_reference(graph, {"x": values})["y"]
    graph = run_passes(graph, passes, log)
    after = run_reference(graph, {"x": values})["y"]
    assert np.array_equal(before, after)
    return [n.op for n in graph.nodes]


def test_conv_chain_fuses_and_runs_channels_last(tmp_path):
    w1, w2 = RNG.integers(-8, 8, (8, 4, 3, 3)), RNG.integers(-8, 8, (8, 8, 1, 1))
    r1, c1 = _rqs("c1", "h", "rq1", mul=RNG.integers(1, 9, (8, 1, 1)), add=0)
    r2, c2 = _rqs("c2", "y", "rq2")
    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]), r1,
             helper.make_node("Conv", ["h", "w2"], ["c2"], name="conv2"), r2]
    ops = _lower(tmp_path, nodes, [_const("w1", w1), _const("w2", w2)] + c1 + c2,
                 [1, 4, 6, 6], [1, 8, 6, 6], RNG.integers(-128, 128, (1, 4, 6, 6)))
    # the transposes between the two convolutions cancel; one remains at each end
    assert ops == ["Transpose", "RequantizedConv", "RequantizedConv", "Transpose"]


def test_transpose_rewrites_do_not_reinfer_the_graph(tmp_path, monkeypatch):
    """Moving and cancelling the Transposes of a chain of channels-last convolutions infers only
    the nodes each rewrite adds, not the whole graph once per rewrite; the result is the
    reference's and every inferred shape and type is the whole-graph inference's."""
    import Deeploy.frontend.type_inference as type_inference
    from Deeploy.passes.layout import simplify_transposes
    whole = []
    monkeypatch.setattr(type_inference, "infer_graph", lambda graph: whole.append(graph) or infer_graph(graph))
    nodes, inits, x = [], [], "x"
    for k in range(6):
        y = "y" if k == 5 else f"h{k}"
        r, c = _rqs(f"c{k}", y, f"rq{k}", mul=RNG.integers(1, 9, (8, 1, 1)), add=0)
        nodes += [helper.make_node("Conv", [x, f"w{k}"], [f"c{k}"], name=f"conv{k}", pads=[1, 1, 1, 1]), r]
        inits += [_const(f"w{k}", RNG.integers(-8, 8, (8, 4 if k == 0 else 8, 3, 3)))] + c
        x = y
    mismatches = []

    def checked(graph, log=None):   # simplify_transposes, then compared with a whole-graph inference
        graph, modified = simplify_transposes(graph, log)
        again = graph.copy()
        infer_graph(again)
        mismatches.extend(n for n, t in graph.tensors.items() if (t.shape, t.dtype) != (again.tensors[n].shape,
                                                                                      again.tensors[n].dtype))
        return graph, modified
    checked.__name__ = "simplify_transposes"
    ops = _lower(tmp_path, nodes, inits, [1, 4, 6, 6], [1, 8, 6, 6], RNG.integers(-128, 128, (1, 4, 6, 6)),
                 passes=[checked if p is simplify_transposes else p for p in SIRACUSA_PASSES])
    assert ops == ["Transpose"] + ["RequantizedConv"] * 6 + ["Transpose"]
    assert not whole and not mismatches


def test_matmul_bias_requant_becomes_one_gemm(tmp_path):
    r, c = _rqs("s", "y", "rq", mul=RNG.integers(1, 9, (16,)), add=RNG.integers(-99, 99, (16,)))
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Add", ["b", "m"], ["s"], name="bias"), r]
    ops = _lower(tmp_path, nodes, [_const("w", RNG.integers(-128, 128, (32, 16))),
                                   _const("b", RNG.integers(-999, 999, (16,)))] + c,
                 [1, 4, 32], [1, 4, 16], RNG.integers(-128, 128, (1, 4, 32)))
    assert ops == ["RequantizedGemm"]


def test_true_integer_div_folds_into_requant(tmp_path):
    r, c = _rqs("q", "y", "rq", mul=5, add=0, div=2**16)
    div = helper.make_node("TrueIntegerDiv", ["x"], ["q"], name="div", Delta=16384, eps=1, eta=200000, y=2)
    ops = _lower(tmp_path, [div, r], c, [1, 64], [1, 64], RNG.integers(-128, 128, (1, 64)))
    assert ops == ["RequantShift"]


def test_rules_that_do_not_apply_say_why(tmp_path):
    r, c = _rqs("q", "y", "rq", mul=5, add=3, div=2**16)  # add != 0: no folding
    div = helper.make_node("TrueIntegerDiv", ["x"], ["q"], name="div", Delta=16384, eps=1, eta=200000, y=2)
    messages = []
    ops = _lower(tmp_path, [div, r], c, [1, 8], [1, 8], RNG.integers(-128, 128, (1, 8)), messages.append)
    assert ops == ["TrueIntegerDiv", "RequantShift"]
    assert any("add is not zero" in m for m in messages)


@pytest.mark.parametrize("b_shape, fused", [((1, 4), True), ((3, 1), False)])
def test_add_broadcasting_over_leading_axes_fuses(tmp_path, b_shape, fused):
    """(1, 4) onto (3, 4) repeats along the leading axis (the fused kernel reads it with a
    period); (3, 1) broadcasts along the last axis and stays unfused."""
    r, c = _rqs("s", "y", "rq")
    nodes = [helper.make_node("Add", ["x", "b"], ["s"], name="add"), r]
    ops = _lower(tmp_path, nodes, [_const("b", RNG.integers(-9, 9, b_shape))] + c, [3, 4], [3, 4],
                 RNG.integers(-128, 128, (3, 4)))
    assert ops == (["RequantizedAdd"] if fused else ["Add", "RequantShift"])


NETWORKS = network_dirs(DEEPLOY_TEST, "Tests/Models") + network_dirs(
    CORPUS, "Kernels/Integer", "Models/miniMobileNetv2", "Models/microLlama/INT8")


@pytest.mark.parametrize("test_dir", NETWORKS, ids=[p.name for p in NETWORKS])
def test_siracusa_passes_keep_goldens(test_dir):
    graph = load_onnx(test_dir / "network.onnx")
    inputs = map_arrays(test_dir / "inputs.npz", load_npz_arrays(test_dir / "inputs.npz"), graph.inputs, graph, "input")
    expected = map_arrays(test_dir / "outputs.npz", load_npz_arrays(test_dir / "outputs.npz"), graph.outputs, graph,
                          "output")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    graph = run_passes(graph, SIRACUSA_PASSES)
    got = run_reference(graph, inputs)
    for name in graph.outputs:
        if got[name].dtype.kind == "f":   # float networks: within the harness's tolerance
            rtol, atol = FLOAT_TOLERANCE[graph.tensors[name].dtype]
            assert np.allclose(got[name], expected[name], rtol=rtol, atol=atol), name
        else:
            assert np.array_equal(got[name], expected[name]), name


@pytest.mark.parametrize("keepdims", [0, 1])
def test_float_mean_with_one_output_reduces_in_two_stages(tmp_path, keepdims):
    """A float ReduceMean over three axes with one output per image: its last axis is reduced
    first (the cores share 384 outputs), the mean stays within the float tolerance; the same
    graph on integer data is left alone (a mean of rounded means is not the rounded mean)."""
    node = helper.make_node("ReduceMean", ["x"], ["y"], name="mean", axes=[1, 2, 3], keepdims=keepdims)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 48, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    for values, split in ((RNG.normal(size=(1, 8, 48, 32)).astype(np.float32), True),
                          (RNG.integers(-128, 128, (1, 8, 48, 32)), False)):
        graph = load_onnx(tmp_path / "m.onnx")
        assign_input_types(graph, {"x": values})
        infer_graph(graph)
        before = run_reference(graph, {"x": values})["y"]
        lowered = run_passes(graph, SIRACUSA_PASSES)
        after = run_reference(lowered, {"x": values})["y"]
        parts = [n for n in lowered.nodes if n.op == "ReduceMean"]
        assert len(parts) == (2 if split else 1)
        if split:
            assert list(parts[0].params.axes) == [3] and lowered.tensors[parts[0].outputs[0]].shape == (1, 8, 48, 1)
            rtol, atol = FLOAT_TOLERANCE[lowered.tensors["y"].dtype]
            assert after.shape == before.shape and np.allclose(after, before, rtol=rtol, atol=atol)
        else:
            assert np.array_equal(after, before)
