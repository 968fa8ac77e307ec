"""The compiler's graph: named tensors, nodes in execution order, graph inputs and outputs.

A deliberately small IR: integer types are first-class (ONNX files of this family declare
integer tensors as FLOAT), node attributes are typed by the op definitions, and every pass
sees a graph that ``verify`` accepts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Container, Iterable

import numpy as np

from Deeploy.errors import GraphError
from Deeploy.ir.dtypes import DType, dtype_of_values

__all__ = ["Tensor", "Node", "Graph", "NAME_SCOPES_KEY", "fresh_name"]

NAME_SCOPES_KEY = "pkg.torch.onnx.name_scopes"   # node metadata of torch.onnx.export(dynamo=True): repr of a list


def fresh_name(base: str, taken: Container[str]) -> str:
    """``base``, or ``base_<k>`` with the least k, that is not in ``taken``."""
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


@dataclass
class Tensor:
    """A value of the graph: an activation (no ``value``) or a constant (``value`` set, stored in
    the tensor's own dtype once it has one: read it as int64 before doing integer arithmetic)."""

    name: str
    shape: tuple[int, ...] | None = None
    dtype: DType | None = None
    value: np.ndarray | None = None

    def __post_init__(self):
        if self.value is not None and self.dtype is not None:
            self.value = np.asarray(self.value).astype(self.dtype.numpy, copy=False)

    def set_value(self, value: np.ndarray, dtype: DType | None = None) -> None:
        """Make this tensor the constant ``value`` of type ``dtype``, by default typed by its values."""
        self.dtype = dtype or dtype_of_values(value)
        self.value = np.asarray(value).astype(self.dtype.numpy, copy=False)

    @property
    def is_constant(self) -> bool:
        return self.value is not None

    @property
    def size(self) -> int:
        return math.prod(self.shape) if self.shape is not None else 0   # exact: no int64 wrap

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.nbytes


@dataclass
class Node:
    """One operator application. ``attrs`` holds the raw ONNX attributes, ``params`` the typed
    attributes the op definition parsed from them (set during shape inference)."""

    name: str
    op: str
    inputs: list[str]
    outputs: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)
    domain: str = ""
    params: Any = None
    scopes: tuple[str, ...] = ()   # module path from the exporter's pkg.torch.onnx.name_scopes, outermost first

    def __repr__(self) -> str:
        return f"{self.op}('{self.name}')"


@dataclass
class Graph:
    """Tensors by name, nodes in execution order, and the graph's input and output names.
    Node names are unique; names the compiler makes come from ``fresh``."""

    name: str
    tensors: dict[str, Tensor]
    nodes: list[Node]
    inputs: list[str]
    outputs: list[str]
    regions: list = field(default_factory=list)   # Regions (ir/region.py): blocks that run as one unit, N times
    float_declared: frozenset[str] = frozenset()   # tensors the file declares float (ONNX FLOAT, DOUBLE, BFLOAT16)
    int_declared: dict[str, DType] = field(default_factory=dict)   # inputs and constants the file declares integer
    onnx_integers: bool = False   # integer ops follow ONNX semantics (onnx_loader.integer_semantics)
    # variables: constant tensor (its initial value) -> the tensor whose value it takes after each run
    # (an optimizer step's output, ``OpDef.updates``); not a compile-time constant
    state: dict[str, str] = field(default_factory=dict)
    # every name the file lists as a graph input, initializers included (sample files follow it)
    declared_inputs: tuple[str, ...] = ()
    opset: int | None = None   # the file's default-domain opset; None (a graph built in code): the current one
    _writers: dict[str, tuple[int, Node]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _issued: set[str] = field(default_factory=set, init=False, repr=False, compare=False)   # names ``fresh`` gave out

    # ---- queries -------------------------------------------------------------------------
    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def producers(self) -> dict[str, Node]:
        return {out: n for n in self.nodes for out in n.outputs}

    def producer(self, name: str) -> Node | None:
        """The node writing ``name``: None for a graph input, a constant or a name no node writes.
        An index of the writers (with their positions) answers it; an entry the node list no longer
        confirms rebuilds the index, so edits of the graph are always seen."""
        hit = self._writers.get(name)
        if hit is None or hit[0] >= len(self.nodes) or self.nodes[hit[0]] is not hit[1] or name not in hit[1].outputs:
            if name in self.inputs or (name in self.tensors and self.tensors[name].is_constant):
                return None
            self._writers = {o: (k, n) for k, n in enumerate(self.nodes) for o in n.outputs if o}
            hit = self._writers.get(name)
        return hit[1] if hit is not None else None

    def consumers(self) -> dict[str, list[Node]]:
        users: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in dict.fromkeys(n.inputs):
                if i:
                    users.setdefault(i, []).append(n)
        return users

    def opset_below(self, version: int) -> bool:
        """Whether the file's standard ops have the meaning of an opset older than ``version``."""
        return self.opset is not None and self.opset < version

    def is_constant(self, name: str) -> bool:
        """A compile-time constant: a tensor with values that no run updates (not in ``state``)."""
        return bool(name) and self.tensors[name].is_constant and name not in self.state

    def constants(self) -> list[Tensor]:
        used = {i for n in self.nodes for i in n.inputs} | set(self.outputs)
        return [t for t in self.tensors.values() if t.is_constant and t.name in used]

    # ---- edits ---------------------------------------------------------------------------
    def add_constant(self, name: str, value: np.ndarray, dtype: DType | None = None) -> str:
        """A new constant under a fresh name from ``name``, typed ``dtype`` or by its values."""
        name = self.fresh(name)
        value = np.asarray(value)
        value = value if value.dtype.kind == "f" else value.astype(np.int64)
        self.tensors[name] = Tensor(name, tuple(value.shape), dtype or dtype_of_values(value), value)
        return name

    def add_tensor(self, name: str, shape: tuple[int, ...] | None = None,
                   dtype: DType | None = None) -> str:
        """A new activation under a fresh name from ``name``."""
        name = self.fresh(name)
        self.tensors[name] = Tensor(name, shape, dtype)
        return name

    def fresh(self, base: str) -> str:
        """The one source of names the compiler makes, for nodes and tensors alike: ``base``, or
        ``base_<k>`` with the least k, that names no tensor or node of the graph and that was not
        given out before (a pass may name nodes before it adds them)."""
        taken = self._issued | set(self.tensors) | set(self.node_names())
        name = fresh_name(base, taken)
        self._issued.add(name)
        return name

    def replace_uses(self, old: str, new: str) -> None:
        """Make every consumer of ``old`` (and the graph outputs) read ``new`` instead."""
        for n in self.nodes:
            n.inputs = [new if i == old else i for i in n.inputs]
        self.outputs = [new if o == old else o for o in self.outputs]

    def remove_dead_nodes(self) -> bool:
        """Drop nodes whose outputs nobody reads or exposes; True if any was dropped."""
        used = set(self.outputs) | set(self.state.values()) | {i for n in self.nodes for i in n.inputs}
        live = [n for n in self.nodes if any(o in used for o in n.outputs)]
        removed = len(live) != len(self.nodes)
        self.nodes = live
        return removed

    def remove_unused(self) -> None:
        """Drop tensors nobody produces, consumes or exposes."""
        used = set(self.inputs) | set(self.outputs) | set(self.state) | set(self.state.values())
        for n in self.nodes:
            used.update(n.inputs)
            used.update(n.outputs)
        self.tensors = {k: v for k, v in self.tensors.items() if k in used}

    def copy(self) -> "Graph":
        """A copy whose tensors, nodes and lists can be edited without touching this graph
        (constant values are shared: they are never written in place)."""
        nodes = [Node(n.name, n.op, list(n.inputs), list(n.outputs), dict(n.attrs), n.domain, n.params, n.scopes)
                 for n in self.nodes]   # every field (the constructors: several times faster than replace())
        tensors = {k: Tensor(t.name, t.shape, t.dtype, t.value) for k, t in self.tensors.items()}
        return Graph(self.name, tensors, nodes, list(self.inputs),
                     list(self.outputs), list(self.regions), self.float_declared, self.int_declared,
                     self.onnx_integers, dict(self.state), self.declared_inputs, self.opset)

    # ---- order and checks ----------------------------------------------------------------
    def topological_sort(self) -> None:
        """Order nodes by levels (a node runs one level after the last producer of its inputs),
        in their present order within a level: stable for sorted graphs."""
        available = {name for name, t in self.tensors.items() if t.is_constant}
        available.update(self.inputs)
        available.add("")
        waiting: dict[str, list[int]] = {}   # tensor not yet available -> the nodes reading it
        missing = [0] * len(self.nodes)      # per node: its inputs not yet available
        ready: list[int] = []
        for k, n in enumerate(self.nodes):
            for i in dict.fromkeys(n.inputs):
                if i not in available:
                    waiting.setdefault(i, []).append(k)
                    missing[k] += 1
            if not missing[k]:
                ready.append(k)
        ordered: list[int] = []
        while ready:
            ordered.extend(ready)
            level, ready = ready, []
            for k in level:
                for o in self.nodes[k].outputs:
                    if o not in available:
                        available.add(o)
                        for user in waiting.pop(o, ()):
                            missing[user] -= 1
                            if not missing[user]:
                                ready.append(user)
            ready.sort()
        if len(ordered) < len(self.nodes):
            done = set(ordered)
            pending = [n for k, n in enumerate(self.nodes) if k not in done]
            produced = {o for m in pending for o in m.outputs}
            unknown = sorted({i for n in pending for i in n.inputs if i not in available and i not in produced})
            culprit = pending[0]
            if unknown:
                raise GraphError(f"node '{culprit.name}' ({culprit.op}) reads tensor "
                                 f"'{unknown[0]}' that is neither a graph input, a constant nor "
                                 "produced by any node")
            raise GraphError(f"the graph has a cycle through node '{culprit.name}' ({culprit.op})")
        self.nodes = [self.nodes[k] for k in ordered]

    def verify(self) -> None:
        """Check the invariants every stage relies on; raises GraphError naming the culprit."""
        produced: set[str] = set(self.inputs) | set(self.state)
        named: set[str] = set()
        for n in self.nodes:
            if n.name in named:
                raise GraphError(f"two nodes are named '{n.name}'")
            named.add(n.name)
        for name in self.inputs:
            if name not in self.tensors:
                raise GraphError(f"graph input '{name}' has no tensor")
        for n in self.nodes:
            for i in n.inputs:
                if i and i not in produced and not self.is_constant(i):
                    raise GraphError(f"node '{n.name}' ({n.op}) reads '{i}' before it is produced")
            for o in n.outputs:
                if o in produced:
                    raise GraphError(f"tensor '{o}' is produced twice (again by node '{n.name}')")
                if o not in self.tensors:
                    raise GraphError(f"node '{n.name}' writes unknown tensor '{o}'")
                produced.add(o)
        for o in self.outputs:
            if o not in produced and not self.is_constant(o):
                raise GraphError(f"graph output '{o}' is never produced")
        for var, update in self.state.items():
            if update not in produced or update in self.state:
                raise GraphError(f"variable '{var}' takes the value of '{update}', which no node produces")
        claimed: set[str] = set()
        for region in self.regions:
            reason = region.mismatch(self)
            if reason is not None:
                raise GraphError(reason)
            if claimed & region.node_names():
                raise GraphError(f"region '{region.name}' shares nodes with another region")
            claimed |= region.node_names()

    def node_names(self) -> Iterable[str]:
        return (n.name for n in self.nodes)
