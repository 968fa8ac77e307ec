"""Ops are known by what they are, not by their names: the passes' rules follow the op's traits
(an op declaring a trait is treated like every other op with it), and a platform's bindings may
only name registered ops (a misspelt key fails when the target builds its platform)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from Deeploy.frontend import infer_graph
from Deeploy.ir import FLOAT32, INT8, Graph, Node, Tensor
from Deeploy.ops import _registry, op_named
from Deeploy.passes.layout import convs_to_channels_last
from Deeploy.passes.reductions import split_float_reductions
from Deeploy.platform import Platform
from Deeploy.targets import get_platform
from DeeployTest.test_suite.conftest import REPO


def _alias(monkeypatch, name: str, like: str) -> None:
    """Registers ``name`` for this test only: the op ``like`` under another name."""
    monkeypatch.setitem(_registry._REGISTRY, name, replace(op_named(like), name=name))


def _one_node(op: str, inputs: dict[str, Tensor], out_shape, attrs: dict) -> Graph:
    tensors = {**inputs, "y": Tensor("y")}
    graph = Graph("g", tensors, [Node("n", op, list(inputs), ["y"], attrs)],
                  [n for n, t in inputs.items() if t.value is None], ["y"])
    infer_graph(graph)
    assert graph.tensors["y"].shape == out_shape
    return graph


def test_the_layout_pass_moves_every_op_with_a_channels_last_form(monkeypatch):
    _alias(monkeypatch, "MyConv", "Conv")
    w = Tensor("w", (4, 3, 3, 3), INT8, np.ones((4, 3, 3, 3), np.int8))
    graph = _one_node("MyConv", {"x": Tensor("x", (1, 3, 8, 8), INT8), "w": w}, (1, 4, 6, 6),
                      {"kernel_shape": [3, 3]})
    out, changed = convs_to_channels_last(graph)
    assert changed and next(n for n in out.nodes if n.name == "n").attrs["channels_last"] == 1


def test_the_reduction_split_takes_every_two_stage_reduction(monkeypatch):
    _alias(monkeypatch, "MyReduceMean", "ReduceMean")
    graph = _one_node("MyReduceMean", {"x": Tensor("x", (2, 16, 16), FLOAT32)}, (2, 1, 1),
                      {"axes": [1, 2], "keepdims": 1})
    out, changed = split_float_reductions(graph)
    assert changed and [n.op for n in out.nodes] == ["MyReduceMean", "MyReduceMean"]


def test_a_misspelt_binding_key_fails_when_the_platform_is_built():
    generic = get_platform("Generic")
    with pytest.raises(RuntimeError, match=r"platform Generic: bindings name 'Cnov', which is no registered op "
                                           r"\(did you mean 'Conv'\?\)"):
        replace(generic, bindings={**generic.bindings, "Cnov": generic.bindings["Conv"]})
    with pytest.raises(RuntimeError, match="bindings name 'Zzyzx', which is no registered op$"):
        Platform("Mine", (), generic.memory, {"Zzyzx": generic.bindings["Conv"]})


def test_a_target_registers_its_own_ops_when_imported():
    """The generic layers never name the NPU job; importing its target registers it."""
    code = ("from Deeploy.ops import registered_ops\n"
            "import Deeploy.compiler\n"
            "before = 'NeurekaConv' in registered_ops()\n"
            "import Deeploy.targets.siracusa_w_neureka\n"
            "print(before, 'NeurekaConv' in registered_ops())\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
