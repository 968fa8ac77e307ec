"""Regions: a block of the graph that runs as one unit, N times (the decoder layers of a
transformer). The graph stays flat; a ``Region`` names the nodes of each iteration, in the same
body order for every iteration, so later stages can plan, tile and emit the body once and run it
N times with per-iteration pointers.

``Region.mismatch`` says why the iterations are not the same block (op types, attributes,
shapes, dtypes and wiring must agree; constant values may differ), and ``body_inputs`` classifies
what the body reads:

- ``CARRIED``: iteration i reads what iteration i-1 produced at the same body position (the
  first iteration reads the region's entry tensor);
- ``INVARIANT``: the same tensor in every iteration (an outside activation, or a constant whose
  values are identical in every iteration, or the very same constant);
- ``PER_ITERATION``: a constant of the same shape whose values differ per iteration
  (weights, biases, requantisation multipliers): stacked ``[N, ...]`` and indexed by iteration;
  or a distinct graph input per iteration (a layer's KV-cache slice), read through a pointer
  per iteration.
"""

from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass

import numpy as np

from Deeploy.ir.dtypes import DType, widest
from Deeploy.ir.graph import Graph, Node

__all__ = ["Region", "InputKind", "BodyInput", "body_inputs", "node_signature", "node_content",
           "body_attributes"]


@dataclass(frozen=True)
class Region:
    """``instances[i]``: the names of iteration i's nodes in body order. ``values[k]``: the
    attributes of body position k that are numbers its kernel computes with (its op's
    ``OpDef.value_attrs``, given by the pass that finds the region): they may differ between
    iterations; none where not given."""

    name: str
    instances: tuple[tuple[str, ...], ...]
    values: tuple[frozenset[str], ...] = ()

    @property
    def iterations(self) -> int:
        return len(self.instances)

    @property
    def body_size(self) -> int:
        return len(self.instances[0]) if self.instances else 0

    def node_names(self) -> set[str]:
        return {name for instance in self.instances for name in instance}

    def values_at(self, position: int) -> frozenset[str]:
        return self.values[position] if position < len(self.values) else frozenset()

    def mismatch(self, graph: Graph) -> str | None:
        """None if every iteration is the same block, else where and how they differ."""
        if self.iterations < 1 or len({len(i) for i in self.instances}) != 1:
            return f"region '{self.name}': iterations have different node counts"
        known = {n.name for n in graph.nodes}
        missing = sorted(self.node_names() - known)
        if missing:
            return f"region '{self.name}': no node '{missing[0]}' in the graph"
        if len(self.node_names()) != self.iterations * self.body_size:
            return f"region '{self.name}': a node belongs to two iterations"
        instances = _instances(graph, self)
        where = {o: (i, k) for i, nodes in enumerate(instances) for k, n in enumerate(nodes) for o in n.outputs}
        first, carried_from = instances[0], {}
        for i, nodes in enumerate(instances[1:], start=1):
            for k, (ref, node) in enumerate(zip(first, nodes)):
                values = self.values_at(k)
                if node_signature(graph, ref, values) != node_signature(graph, node, values):
                    return (f"region '{self.name}': iteration {i} differs at body position {k}: "
                            f"'{node.name}' ({node.op}) vs '{ref.name}' ({ref.op}) (op, attributes, shapes or dtypes)")
                for slot, (a, b) in enumerate(zip(ref.inputs, node.inputs)):
                    kind = _wiring(a, b, i, where, graph)
                    carried = where[b][1] if kind == InputKind.CARRIED else None   # same source every iteration
                    if carried_from.setdefault((k, slot), carried) != carried:
                        kind = None
                    if kind is None:
                        return (f"region '{self.name}': iteration {i}, '{node.name}' input {slot} ('{b}') is not "
                                f"wired like iteration 0's '{ref.name}' input {slot} ('{a}')")
        return None


class InputKind(enum.Enum):
    CARRIED = "carried"
    INVARIANT = "invariant"
    PER_ITERATION = "per_iteration"


@dataclass(frozen=True)
class BodyInput:
    """Input ``slot`` of the body node at ``position``: its kind, the tensor each iteration reads
    and their common element type (the narrowest holding all of them, for stacking)."""

    position: int
    slot: int
    kind: InputKind
    tensors: tuple[str, ...]
    dtype: DType


def _instances(graph: Graph, region: Region) -> list[list[Node]]:
    by_name = {n.name: n for n in graph.nodes}
    return [[by_name[name] for name in instance] for instance in region.instances]



def node_signature(graph: Graph, node: Node, values: frozenset[str] = frozenset()) -> tuple:
    """What must agree between a node and its counterpart in every other iteration (hashable);
    its attributes that are values (``values``) are left out."""

    def tensor(name):   # constants' types follow their values, which may differ per iteration
        t = graph.tensors[name] if name else None
        return None if t is None else (t.shape, "constant" if t.is_constant else str(t.dtype))
    attrs = tuple(sorted((k, repr(v.tolist() if isinstance(v, np.ndarray) else v)) for k, v in node.attrs.items()
                         if k not in values))
    return (node.op, node.domain, attrs, tuple(tensor(i) for i in node.inputs), tuple(tensor(o) for o in node.outputs))


def node_content(graph: Graph, node: Node) -> tuple:
    """Everything a node computes from but names (hashable): op, every attribute, its tensors'
    shapes and types, the constants' values (a digest) and which inputs are one tensor. Two
    nodes with equal keys are the same function, whatever their tensors are called."""
    first = {}

    def tensor(name):
        t = graph.tensors[name] if name else None
        if t is None:
            return None
        value = None if t.value is None else (
            t.value.dtype.str, hashlib.blake2b(np.ascontiguousarray(t.value).tobytes(), digest_size=16).digest())
        return t.shape, str(t.dtype), value, first.setdefault(name, len(first))
    attrs = tuple(sorted((k, repr(v.tolist() if isinstance(v, np.ndarray) else v)) for k, v in node.attrs.items()))
    return (node.op, node.domain, attrs, tuple(tensor(i) for i in node.inputs), tuple(tensor(o) for o in node.outputs))


def _wiring(a: str, b: str, i: int, where: dict, graph: Graph) -> InputKind | str | None:
    """How iteration i's input ``b`` corresponds to iteration 0's ``a``: 'internal' (produced in
    its own iteration at the same position), a kind, or None (wired differently)."""
    src_a, src_b = where.get(a), where.get(b)
    if src_a is not None and src_b is not None:
        if src_a[0] == 0 and src_b[0] == i and src_a[1] == src_b[1]:
            return "internal"
        return None
    if src_b is not None:   # iteration i reads iteration i-1's output where iteration 0 reads the entry
        return InputKind.CARRIED if src_b[0] == i - 1 else None
    if src_a is not None:
        return None
    if a == b:
        return InputKind.INVARIANT
    ta, tb = graph.tensors[a], graph.tensors[b] if b else None
    if ta is not None and tb is not None and ta.is_constant and tb.is_constant:
        return InputKind.INVARIANT if np.array_equal(ta.value, tb.value) else InputKind.PER_ITERATION
    if a in graph.inputs and b in graph.inputs:   # a graph input of its own per iteration (a KV-cache slice)
        return InputKind.PER_ITERATION
    return None


def body_inputs(graph: Graph, region: Region) -> list[BodyInput]:
    """What every body input slot reads, for a region ``Region.mismatch`` accepts."""
    reason = region.mismatch(graph)
    if reason is not None:
        raise ValueError(reason)
    instances = _instances(graph, region)
    where = {o: (i, k) for i, nodes in enumerate(instances) for k, n in enumerate(nodes) for o in n.outputs}
    found = []
    for k, ref in enumerate(instances[0]):
        for slot, name in enumerate(ref.inputs):
            if not name or name in where:
                continue
            reads = tuple(nodes[k].inputs[slot] for nodes in instances)
            kinds = {_wiring(name, b, i, where, graph) for i, b in enumerate(reads[1:], start=1)}
            kind = (InputKind.CARRIED if InputKind.CARRIED in kinds else
                    InputKind.PER_ITERATION if InputKind.PER_ITERATION in kinds else InputKind.INVARIANT)
            found.append(BodyInput(k, slot, kind, reads, widest(*(graph.tensors[t].dtype for t in reads))))
    return found


def body_attributes(graph: Graph, region: Region) -> dict[tuple[int, str], tuple]:
    """The value attributes (``Region.values``) that differ between iterations: (body position,
    attribute name) -> the value of each iteration, to be passed per iteration like the
    per-iteration inputs."""
    instances = _instances(graph, region)
    found = {}
    for k, ref in enumerate(instances[0]):
        for attr in sorted(region.values_at(k) & set(ref.attrs)):
            values = tuple(nodes[k].attrs.get(attr) for nodes in instances)
            if any(repr(v) != repr(values[0]) for v in values[1:]):
                found[(k, attr)] = values
    return found
