"""Proven value ranges of activations (Deeploy/ops/bounds.py): an int32 tensor computed from
narrower ones is bounded by its producer (the op's magnitude rule on its inputs' ranges, through
data movement), so a RequantShift of a sum of two int8 tensors accumulates in int32. The cases put
the operands at their extremes (-128 + -128, 127 * 127...) with multipliers that bring
x * mul + add right below 2^31, so an accumulator chosen too narrow would overflow and miss the
goldens; an int32 graph input, which nothing narrows, keeps the int64 accumulator."""

from __future__ import annotations

import numpy as np
import pytest

from Deeploy.binding import bind
from Deeploy.frontend.type_inference import infer_graph
from Deeploy.ir.dtypes import INT8, INT32
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ops.bounds import value_range
from Deeploy.targets import get_platform
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.test_suite.kernel_cases import case_batch, lowered, needs_qemu, run_generic, run_siracusa

_SHIFT = 24


def _extremes(rng, shape):
    """int8 values with both ends of the range in every row."""
    v = rng.integers(-128, 128, size=shape)
    v[..., 0], v[..., 1] = -128, 127
    return v


def _add_rqs(mul):
    """An Add of two int8 tensors (|sum| <= 256), requantised with ``mul``; b broadcasts along
    a middle axis, so the Add stays unfused on Siracusa too."""
    def build(rng):
        net = Net("RequantShift")
        a = net.input("input_0", _extremes(rng, (2, 3, 8)))
        b = net.input("input_1", _extremes(rng, (2, 1, 8)))
        s = net.node("Add", [a, b], name="sum")
        net.output(net.rqs(s, mul, -(1 << 20), _SHIFT, name="rqs"))
        return net
    return build


def _wide_input_rqs(rng):
    """An int32 graph input: its type's range, so x * mul may exceed int32."""
    net = Net("RequantShift")
    x = net.input("input_0", rng.integers(-70000, 70000, size=(3, 8)))
    net.output(net.rqs(x, 3, 7, 2, name="rqs"))
    return net


def _mul_transpose_rqs(rng):
    """int8 * int8 (|product| <= 16384) through a Transpose, requantised near 2^31."""
    net = Net("RequantShift")
    a = net.input("input_0", _extremes(rng, (4, 6)))
    b = net.input("input_1", _extremes(rng, (4, 6)))
    p = net.node("Mul", [a, b], name="prod")
    t = net.node("Transpose", [p], {"perm": [1, 0]}, name="turn")
    net.output(net.rqs(t, 130000, 12345, _SHIFT, name="rqs"))
    return net


FITS = 8_300_000          # 256 * mul + 2^20 + 2^24 < 2^31
CASES = [("add_fits_int32", _add_rqs(FITS), "s32"), ("int32_input_needs_int64", _wide_input_rqs, "s64"),
         ("mul_transpose_fits_int32", _mul_transpose_rqs, "s32")]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case(request, tmp_path):
    name, build, acc = request.param
    folder = tmp_path / name
    write_test(build(np.random.default_rng(5)), folder)
    return folder, acc


def test_sum_and_product_ranges(tmp_path):
    write_test(_add_rqs(FITS)(np.random.default_rng(5)), tmp_path / "add")
    graph = lowered(tmp_path / "add", "Generic")
    assert value_range(graph, "sum_output_0") == (-256, 256)
    assert value_range(graph, "input_0") == (-128, 127)
    write_test(_wide_input_rqs(np.random.default_rng(5)), tmp_path / "wide")
    graph = lowered(tmp_path / "wide", "Generic")
    assert value_range(graph, "input_0") == (-2**31, 2**31 - 1)
    write_test(_mul_transpose_rqs(np.random.default_rng(5)), tmp_path / "mul")
    graph = lowered(tmp_path / "mul", "Generic")
    assert value_range(graph, "prod_output_0") == (-16384, 16384)
    turned = next(n for n in graph.nodes if n.op == "Transpose").outputs[0]
    assert value_range(graph, turned) == (-16384, 16384)


def test_inference_sees_a_changed_graph():
    """Inference computes each bound once per pass (ops/bounds.memoized): the next pass over a
    changed graph sees the change. |x @ w| <= 4 * 128 * |w|, and the Transpose passes it on."""
    graph = Graph("g", {"x": Tensor("x", (2, 4), INT8), "w": Tensor("w", (4, 3), INT8, np.full((4, 3), 2)),
                        "y": Tensor("y"), "z": Tensor("z")},
                  [Node("mm", "MatMul", ["x", "w"], ["y"]), Node("t", "Transpose", ["y"], ["z"], {"perm": [1, 0]})],
                  ["x"], ["z"])
    infer_graph(graph)
    assert graph.nodes[0].params.sum_bound == 1024 and value_range(graph, "z") == (-1024, 1024)
    graph.tensors["w"].set_value(np.full((4, 3), 100), INT8)
    infer_graph(graph)
    assert graph.nodes[0].params.sum_bound == 51200 and value_range(graph, "z") == (-51200, 51200)


def test_binding_sees_a_changed_graph(tmp_path):
    """Binding computes each bound once (ops/bounds.memoized): binding the graph again after a
    change sees it. A multiplier of 2^24 on the sum (|sum| <= 256) needs the int64 accumulator."""
    write_test(_add_rqs(FITS)(np.random.default_rng(5)), tmp_path / "add")
    graph = lowered(tmp_path / "add", "Generic")
    rqs = next(n for n in graph.nodes if n.op == "RequantShift")

    def variant():
        return next(layer.variant for layer in bind(graph, get_platform("Generic"), 8) if layer.node is rqs)
    assert variant().endswith("_s32")
    graph.tensors[rqs.inputs[1]].set_value(np.array([1 << 24]), INT32)
    assert variant().endswith("_s64")


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_accumulator_follows_the_bound(case, platform):
    folder, acc = case
    layers = bind(lowered(folder, platform), get_platform(platform), 8)
    variants = [layer.variant for layer in layers if layer.node.op == "RequantShift"]
    assert variants and all(v.endswith("_" + acc) for v in variants), variants


batch_dir = case_batch([c[:2] for c in CASES], 5)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
def test_siracusa(batch_dir, capsys):
    run_siracusa(batch_dir, 8, capsys)
