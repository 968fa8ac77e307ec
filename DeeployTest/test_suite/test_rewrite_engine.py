"""The rewrite engine: DAG patterns (several producers, e.g. ``DQ(x), DQ(w) -> Conv -> Q``), the
rule that matched nodes other than the root feed only the match, and passes that never edit the
graph they are given (every Siracusa pass on real networks)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.passes._engine import Pattern, Rule, RuleSet, apply_rules, chain
from Deeploy.targets.siracusa.platform import SIRACUSA_PASSES
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST

QDQ_CONV = Pattern("Q", (Pattern("Conv", (Pattern("DQ"), Pattern("DQ"))),))


def _graph(extra_reader: bool = False) -> Graph:
    """x, w -> DQ, DQ -> Conv -> Q -> y (plus, optionally, a second reader of DQ(w))."""
    names = ["x", "w", "xd", "wd", "c", "y", "z"]
    tensors = {n: Tensor(n, (4,)) for n in names}
    nodes = [Node("dq_x", "DQ", ["x"], ["xd"]), Node("dq_w", "DQ", ["w"], ["wd"]),
             Node("conv", "Conv", ["xd", "wd"], ["c"]), Node("q", "Q", ["c"], ["y"])]
    outputs = ["y"]
    if extra_reader:
        nodes.append(Node("other", "Relu", ["wd"], ["z"]))
        outputs.append("z")
    return Graph("g", tensors, nodes, ["x", "w"], outputs)


def _fingerprint(graph: Graph) -> str:
    h = hashlib.sha256()
    for n in graph.nodes:
        h.update(repr((n.name, n.op, n.inputs, n.outputs, sorted(n.attrs), n.domain)).encode())
    for name, t in sorted(graph.tensors.items()):
        h.update(repr((name, t.shape, str(t.dtype))).encode())
        if t.value is not None:
            h.update(np.ascontiguousarray(t.value).tobytes())
    h.update(repr((graph.inputs, graph.outputs)).encode())
    return h.hexdigest()


def _fuse_qdq(seen: list):
    def replace(graph: Graph, matched: list[Node]) -> list[Node]:
        seen.append([n.name for n in matched])
        dq_x, dq_w, conv, q = matched
        return [Node("qconv", "QConv", [dq_x.inputs[0], dq_w.inputs[0]], q.outputs)]
    return RuleSet("qdq", (Rule("qdq_conv", QDQ_CONV, lambda g, m: None, replace),))


def test_dag_pattern_matches_several_producers_and_returns_a_new_graph():
    graph, seen = _graph(), []
    before = _fingerprint(graph)
    new, modified = apply_rules(graph, _fuse_qdq(seen))
    assert modified and new is not graph
    assert seen == [["dq_x", "dq_w", "conv", "q"]]
    assert [(n.op, n.inputs, n.outputs) for n in new.nodes] == [("QConv", ["x", "w"], ["y"])]
    assert _fingerprint(graph) == before, "the input graph was edited"


def test_producer_read_outside_the_match_blocks_it():
    graph, seen = _graph(extra_reader=True), []
    new, modified = apply_rules(graph, _fuse_qdq(seen))
    assert not modified and new is graph and seen == []


def test_positional_inputs_must_match():
    graph = _graph()
    graph.nodes[0].op = "Relu"                      # DQ(x) is now Relu(x): no match
    new, modified = apply_rules(graph, _fuse_qdq([]))
    assert not modified and new is graph


def test_chain_matches_at_any_input_position_and_explains_rejections():
    tensors = {n: Tensor(n, (4,)) for n in ("x", "b", "m", "s")}
    graph = Graph("g", tensors, [Node("mm", "MatMul", ["x", "x"], ["m"]), Node("add", "Add", ["b", "m"], ["s"])],
                  ["x", "b"], ["s"])
    log: list[str] = []
    rules = RuleSet("t", (Rule("no", chain("MatMul", "Add"), lambda g, m: "not today", lambda g, m: []),))
    new, modified = apply_rules(graph, rules, log.append)
    assert not modified and new is graph
    assert log == ["  t/no: not at 'add': not today"]


NETWORKS = [DEEPLOY_TEST / "Tests/Models/ResNet8", DEEPLOY_TEST / "Tests/Models/CCT",
            CORPUS / "Models/miniMobileNetv2", CORPUS / "Models/microLlama/INT8/microLlama64_parallel"]


@pytest.mark.parametrize("test_dir", [p for p in NETWORKS if (p / "network.onnx").is_file()], ids=lambda p: p.name)
def test_passes_never_edit_their_input(test_dir):
    graph = load_onnx(test_dir / "network.onnx")
    inputs = map_arrays(test_dir / "inputs.npz", load_npz_arrays(test_dir / "inputs.npz"), graph.inputs, graph, "input")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    changed = 0
    for fn in SIRACUSA_PASSES:
        before = _fingerprint(graph)
        new, modified = fn(graph)
        assert _fingerprint(graph) == before, f"{fn.__name__} edited its input graph"
        assert (new is not graph) == modified, fn.__name__
        if modified:
            new.remove_unused()
            new.verify()
            infer_graph(new)
            changed += 1
        graph = new
    assert changed >= 2
