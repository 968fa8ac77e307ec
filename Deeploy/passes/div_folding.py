"""Division folding: ``TrueIntegerDiv(x) -> RequantShift(mul, add=0)  =>  RequantShift(x, mul*coeff, 0)``
(specs/integer-ops.md: the pair is exactly one RequantShift with the product multiplier)."""

from __future__ import annotations

import numpy as np

from Deeploy.ir.graph import Graph, Node
from Deeploy.passes._engine import Rule, RuleSet, apply_rules, chain

__all__ = ["fold_integer_division", "DIV_FOLDING"]


def _foldable(graph: Graph, chain: list[Node]) -> str | None:
    div, rqs = chain
    if rqs.inputs[0] != div.outputs[0]:
        return "the quotient is not RequantShift's x"
    mul, add = rqs.inputs[1], rqs.inputs[2]
    if not (graph.is_constant(mul) and graph.is_constant(add)):
        return "mul or add is not constant"
    if np.any(graph.tensors[add].value != 0):
        return "add is not zero"
    if graph.tensors[mul].size != 1:
        return "mul is not a scalar"
    if abs(int(graph.tensors[mul].value.reshape(-1)[0]) * div.params.coeff) >= 2**31:
        return "mul * coeff does not fit 32 bits"
    return None


def _fold(graph: Graph, chain: list[Node]) -> list[Node]:
    div, rqs = chain
    mul = np.asarray(graph.tensors[rqs.inputs[1]].value, dtype=np.int64) * div.params.coeff
    name = graph.add_constant(f"{rqs.name}.mul_folded", mul.reshape(graph.tensors[rqs.inputs[1]].shape))
    return [Node(rqs.name, "RequantShift", [div.inputs[0], name, rqs.inputs[2]], rqs.outputs,
                 dict(rqs.attrs), rqs.domain)]


DIV_FOLDING = RuleSet("div_folding", (Rule("true_integer_div_requant", chain("TrueIntegerDiv", "RequantShift"),
                                           _foldable, _fold),))


def fold_integer_division(graph: Graph, log=None) -> tuple[Graph, bool]:
    return apply_rules(graph, DIV_FOLDING, log)
