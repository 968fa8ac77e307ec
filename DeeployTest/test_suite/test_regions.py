"""Regions of repeated blocks in the IR: structural identity of the iterations (op types,
attributes, shapes, dtypes, wiring; constant values may differ), the classification of what the
body reads, graph verification and snapshots."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from Deeploy.errors import GraphError
from Deeploy.frontend import infer_graph
from Deeploy.ir import INT8, InputKind, Region, body_inputs
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ir.onnx_export import to_onnx
from Deeploy.reference import run_reference

N, D = 3, 4


def _blocks(n: int = N, same_bias: bool = True, tweak=None) -> tuple[Graph, Region]:
    """x -> [MatMul(W_i) -> Add(bias) -> RequantShift -> Add(residual) -> RequantShift] x n -> y."""
    rng = np.random.default_rng(0)
    tensors = {"x": Tensor("x", (1, D), INT8)}
    nodes, instances, h = [], [], "x"

    def const(name, value):
        tensors[name] = Tensor(name, value.shape, None, np.asarray(value, dtype=np.int64))
        return name

    bias = const("bias", rng.integers(-9, 9, (D,)))
    for i in range(n):
        w = const(f"w{i}", rng.integers(-8, 8, (D, D)))
        b = bias if same_bias else const(f"b{i}", rng.integers(-9, 9, (D,)))
        mul, add = const(f"mul{i}", np.array(3 + i)), const(f"add{i}", np.array(0))
        names = [f"mm{i}", f"bias{i}", f"rq{i}", f"res{i}", f"rqo{i}"]
        outs = [f"m{i}", f"s{i}", f"r{i}", f"a{i}", f"h{i}"]
        block = [Node(names[0], "MatMul", [h, w], [outs[0]]), Node(names[1], "Add", [outs[0], b], [outs[1]]),
                 Node(names[2], "RequantShift", [outs[1], mul, add], [outs[2]],
                      {"div": 256, "n_levels_out": 256, "signed": 1}),
                 Node(names[3], "Add", [outs[2], h], [outs[3]]),
                 Node(names[4], "RequantShift", [outs[3], mul, add], [outs[4]],
                      {"div": 2, "n_levels_out": 256, "signed": 1})]
        if tweak:
            tweak(i, block)
        for o in outs:
            tensors[o] = Tensor(o)
        nodes += block
        instances.append(tuple(names))
        h = outs[4]
    graph = Graph("blocks", tensors, nodes, ["x"], [h])
    for t in graph.tensors.values():
        if t.is_constant:
            t.dtype = INT8 if t.value.min() >= -128 and t.value.max() <= 127 else None
    infer_graph(graph)
    return graph, Region("layers", tuple(instances))


def test_identical_blocks_form_a_region_and_inputs_are_classified():
    graph, region = _blocks()
    assert region.mismatch(graph) is None
    kinds = {(b.position, b.slot): b.kind for b in body_inputs(graph, region)}
    assert kinds == {(0, 0): InputKind.CARRIED,          # the hidden state of the previous layer
                     (0, 1): InputKind.PER_ITERATION,    # each layer's weights
                     (1, 1): InputKind.INVARIANT,        # one bias shared by all
                     (2, 1): InputKind.PER_ITERATION,    # requant multipliers 3, 4, 5
                     (2, 2): InputKind.INVARIANT,        # adds: all zero (equal values)
                     (3, 1): InputKind.CARRIED,          # the residual
                     (4, 1): InputKind.PER_ITERATION,
                     (4, 2): InputKind.INVARIANT}
    carried = next(b for b in body_inputs(graph, region) if (b.position, b.slot) == (0, 0))
    assert carried.tensors == ("x", "h0", "h1")


def test_bias_values_differing_per_layer_are_per_iteration():
    graph, region = _blocks(same_bias=False)
    kinds = {(b.position, b.slot): b.kind for b in body_inputs(graph, region)}
    assert kinds[(1, 1)] == InputKind.PER_ITERATION


def test_differing_attribute_is_named():
    def tweak(i, block):
        if i == 2:
            block[2].attrs["div"] = 128
    graph, region = _blocks(tweak=tweak)
    reason = region.mismatch(graph)
    assert reason is not None and "iteration 2 differs at body position 2" in reason and "'rq2'" in reason


def test_differing_wiring_is_named():
    def tweak(i, block):
        if i == 1:   # the residual skips a layer: reads x instead of h0
            block[3].inputs[1] = "x"
    graph, region = _blocks(tweak=tweak)
    reason = region.mismatch(graph)
    assert reason is not None and "'res2' input 1 ('h1') is not wired like iteration 0's 'res0' input 1 ('x')" in reason


def test_verify_rejects_a_stale_region_and_keeps_a_good_one():
    graph, region = _blocks()
    graph.regions = [region]
    graph.verify()
    assert run_reference(graph, {"x": np.arange(D).reshape(1, D)})     # a region changes no semantics
    graph.regions = [region, Region("again", region.instances[:1])]
    with pytest.raises(GraphError, match="shares nodes"):
        graph.verify()
    graph.regions = [Region("gone", (("mm0", "nope"), ("mm1", "bias1")))]
    with pytest.raises(GraphError, match="no node 'nope'"):
        graph.verify()


def test_copies_keep_regions_and_snapshots_show_them():
    graph, region = _blocks()
    graph.regions = [region]
    assert graph.copy().regions == [region]
    props = {n.name: {p.key: p.value for p in n.metadata_props} for n in to_onnx(graph).graph.node}
    assert props["rq1"] == {"deeploy.region": "layers[1].2"}
    assert isinstance(to_onnx(graph), onnx.ModelProto)
