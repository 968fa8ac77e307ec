"""Declarative rewriting without mutation.

A ``Rule`` matches a ``Pattern``: a DAG of op types rooted at the last node it replaces, e.g.
``Pattern("Q", (Pattern("Conv", (Pattern("DQ"), Pattern("DQ"))),))`` for ``DQ(x), DQ(w) -> Conv
-> Q``, or ``chain("MatMul", "Add")`` for ``MatMul -> Add``. Every matched node but the root
feeds matched nodes only and is no graph output. A check returns None if the rule applies, else
the reason; a replacement builds the nodes that take the matched nodes' place. One engine applies
a named rule set to a fixed point on a copy of the graph: the graph it is given is never edited,
and comes back as is when no rule applied. In verbose mode it says which rule applied where and
why others did not.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

from Deeploy.ir.graph import Graph, Node

__all__ = ["Pattern", "chain", "Rule", "RuleSet", "apply_rules", "on_copy"]

Check = Callable[[Graph, list[Node]], "str | None"]
Replace = Callable[[Graph, list[Node]], "list[Node]"]


@dataclass(frozen=True)
class Pattern:
    """A node of type ``op`` whose inputs match ``inputs`` by position (None, or positions beyond
    the tuple: any tensor) and, if ``via`` is set, one of whose inputs (any position) is produced
    by a node matching ``via``."""

    op: str
    inputs: tuple["Pattern | None", ...] = ()
    via: "Pattern | None" = None


def chain(*ops: str) -> Pattern:
    """``chain("A", "B", "C")``: A's output feeds B, B's feeds C (at any input position)."""
    pattern = Pattern(ops[0])
    for op in ops[1:]:
        pattern = Pattern(op, via=pattern)
    return pattern


@dataclass(frozen=True)
class Rule:
    """``replace`` receives the matched nodes producers first, the root last."""

    name: str
    pattern: Pattern
    check: Check
    replace: Replace


@dataclass(frozen=True)
class RuleSet:
    """Named rules applied together by one pass."""

    name: str
    rules: tuple[Rule, ...]


def _match(pattern: Pattern, node: Node, producers: dict[str, Node], found: list[Node]) -> bool:
    """Match ``pattern`` at ``node``, appending the matched nodes to ``found`` (post-order)."""
    if node.op != pattern.op:
        return False
    for k, sub in enumerate(pattern.inputs):
        if sub is None:
            continue
        src = producers.get(node.inputs[k]) if k < len(node.inputs) and node.inputs[k] else None
        if src is None or not _match(sub, src, producers, found):
            return False
    if pattern.via is not None:
        for name in node.inputs:
            src = producers.get(name) if name else None
            mark = len(found)
            if src is not None and _match(pattern.via, src, producers, found):
                break
            del found[mark:]
        else:
            return False
    if node not in found:
        found.append(node)
    return True


def _closed(matched: list[Node], consumers: dict[str, list[Node]], outputs: set[str]) -> bool:
    """Every matched node but the root feeds matched nodes only and exposes no graph output."""
    inside = {id(n) for n in matched}
    for n in matched[:-1]:
        for o in n.outputs:
            if o in outputs or any(id(u) not in inside for u in consumers.get(o, [])):
                return False
    return True


def apply_rules(graph: Graph, rule_set: RuleSet, log: Callable[[str], None] | None = None
                ) -> tuple[Graph, bool]:
    """Apply the rules until none matches; returns (new graph, True) or (``graph``, False).
    The first node, in order, at which a rule applies is replaced; the scan then resumes at the
    first node the replacement can affect (a matched node or the producer of an input of the
    matched or new nodes): the nodes before it matched nothing and still match nothing."""
    work, modified = graph.copy(), False
    slots = [[n] for n in work.nodes]   # the nodes in order; new nodes take their root's slot
    slot_of = {id(n): k for k, n in enumerate(work.nodes)}
    producers, consumers, outputs = work.producers(), work.consumers(), set(work.outputs)
    rules: dict[str, list[Rule]] = {}   # by the op of their pattern's root, in order
    for rule in rule_set.rules:
        rules.setdefault(rule.pattern.op, []).append(rule)
    k = 0
    while k < len(slots):
        found = None
        for node in slots[k]:
            for rule in rules.get(node.op, ()):
                matched: list[Node] = []
                if not _match(rule.pattern, node, producers, matched) or not _closed(matched, consumers, outputs):
                    continue
                reason = rule.check(work, matched)
                if reason is None:
                    found = rule, matched
                    break
                if log:
                    log(f"  {rule_set.name}/{rule.name}: not at '{node.name}': {reason}")
            if found:
                break
        if found is None:
            k += 1
            continue
        rule, matched = found
        replacement = rule.replace(work, matched)
        for n in replacement:   # new nodes stay in the module the matched nodes came from
            n.scopes = n.scopes or matched[-1].scopes
        root = slot_of[id(matched[-1])]
        k = min([slot_of[id(n)] for n in matched] + [slot_of[id(producers[i])] for n in matched + replacement
                                                       for i in n.inputs if i in producers])
        for n in matched:
            j = slot_of.pop(id(n))
            if n is not matched[-1]:
                slots[j] = [m for m in slots[j] if m is not n]
            for o in n.outputs:
                if producers.get(o) is n:
                    del producers[o]
            for i in dict.fromkeys(n.inputs):
                if i:
                    consumers[i] = [u for u in consumers[i] if u is not n]
        at = next(j for j, m in enumerate(slots[root]) if m is matched[-1])
        slots[root][at:at + 1] = replacement
        for n in replacement:
            slot_of[id(n)] = root
            producers.update((o, n) for o in n.outputs)
            for i in dict.fromkeys(n.inputs):
                if i:
                    consumers.setdefault(i, []).append(n)
        if log:
            log(f"  {rule_set.name}/{rule.name}: {', '.join(repr(n) for n in matched)} "
                f"=> {', '.join(repr(n) for n in replacement)}")
        modified = True
    work.nodes = [n for slot in slots for n in slot]
    return (work, True) if modified else (graph, False)


def on_copy(edit: Callable[[Graph, Callable[[str], None] | None], bool]):
    """A pass made from an in-place ``edit`` (returning whether it changed anything) of a private
    copy: the new graph, or the very graph it was given when nothing changed."""
    @functools.wraps(edit)
    def run(graph: Graph, log: Callable[[str], None] | None = None) -> tuple[Graph, bool]:
        work = graph.copy()
        return (work, True) if edit(work, log) else (graph, False)
    return run
