"""Declarative rewriting: a Rule matches a chain of nodes (each the only consumer of the
previous one's first output), a check returns None if the rule applies or the reason it does
not, and a replacement builds the nodes that take the chain's place. One engine applies a
named rule set to a fixed point; in verbose mode it says which rule applied where and why
others did not."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from Deeploy.ir.graph import Graph, Node

__all__ = ["Rule", "RuleSet", "apply_rules"]

Check = Callable[[Graph, list[Node]], "str | None"]
Replace = Callable[[Graph, list[Node]], "list[Node]"]


@dataclass(frozen=True)
class Rule:
    """``pattern`` lists op types along the chain, producer first."""

    name: str
    pattern: tuple[str, ...]
    check: Check
    replace: Replace


@dataclass(frozen=True)
class RuleSet:
    """Named rules applied together by one pass."""

    name: str
    rules: tuple[Rule, ...]


def _chain(graph: Graph, start: Node, pattern: Sequence[str], consumers, outputs) -> list[Node] | None:
    chain = [start]
    for op in pattern[1:]:
        out = chain[-1].outputs[0]
        users = consumers.get(out, [])
        if out in outputs or len(users) != 1 or users[0].op != op:
            return None
        chain.append(users[0])
    return chain


def apply_rules(graph: Graph, rule_set: RuleSet, log: Callable[[str], None] | None = None
                ) -> tuple[Graph, bool]:
    """Apply the rules until none matches; returns (graph, modified)."""
    modified = False
    progress = True
    while progress:
        progress = False
        consumers, outputs = graph.consumers(), set(graph.outputs)
        for node in list(graph.nodes):
            for rule in rule_set.rules:
                if node.op != rule.pattern[0]:
                    continue
                chain = _chain(graph, node, rule.pattern, consumers, outputs)
                if chain is None:
                    continue
                reason = rule.check(graph, chain)
                if reason is not None:
                    if log:
                        log(f"  {rule_set.name}/{rule.name}: not at '{node.name}': {reason}")
                    continue
                replacement = rule.replace(graph, chain)
                at = graph.nodes.index(chain[-1])
                graph.nodes[at:at + 1] = replacement
                for n in chain[:-1]:
                    graph.nodes.remove(n)
                if log:
                    log(f"  {rule_set.name}/{rule.name}: {' -> '.join(repr(n) for n in chain)} "
                        f"=> {', '.join(repr(n) for n in replacement)}")
                modified = progress = True
                break
            if progress:
                break
    return graph, modified
