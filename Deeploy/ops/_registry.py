"""The operator registry: one ``OpDef`` per ONNX op type, registered once by its module."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ir.dtypes import DType
from Deeploy.ir.graph import Graph, Node, Tensor

__all__ = ["OpDef", "Cost", "Trait", "register", "get_op", "op_named", "registered_ops", "ops_with", "OutSpec"]

OutSpec = tuple[tuple[int, ...], DType]


@dataclass(frozen=True)
class Cost:
    """Work of one node: arithmetic operations (a MAC counts 2) and bytes read plus written."""

    ops: int
    bytes: int


def _default_cost(params: Any, ins: Sequence[Tensor | None], outs: Sequence[Tensor]) -> Cost:
    moved = sum(t.nbytes for t in ins if t is not None and t.shape is not None)
    moved += sum(t.nbytes for t in outs)
    return Cost(ops=sum(t.size for t in outs), bytes=moved)


class Trait(enum.Enum):
    """What passes, tiling and tests may assume of an op, so rules target traits, not names."""

    STANDARD = "standard"              # an ONNX standard op: onnxruntime runs it with our meaning
    ELEMENTWISE = "elementwise"        # output element i comes from input element i (after broadcasting)
    BROADCASTING = "broadcasting"      # binary, its two inputs broadcast onto the output (numpy rules)
    REDUCTION = "reduction"            # reduces over axes
    ROWWISE = "rowwise"                # normalises the last axis row by row
    DATA_MOVEMENT = "data_movement"    # moves elements, computes nothing
    VIEW = "view"                      # the output is the input's buffer reinterpreted: zero copy
    SHAPE_ONLY = "shape_only"          # the output depends on the inputs' shapes only: folds at compile time
    LOWERED = "lowered"                # a pass rewrites it into other ops (passes/qdq.py, passes/variadic.py): no kernel of its own
    CHANNELS_LAST = "channels_last"    # has a channels-last form (attribute channels_last): passes/layout.py moves it there
    TWO_STAGE = "two_stage"            # a float reduction over several axes may reduce the last of them first (passes/reductions.py)
    GEMM = "gemm"                      # a (batched) matrix product: its params give batch, m and n
    FLOAT_ONLY = "float_only"          # computes on float tensors only: a graph holding it is a float network
    QUANT_TRANSPARENT = "quant_transparent"  # outputs are input values (moved, selected or their max): commutes with a per-tensor quantizer (passes/qdq.py)
    QDQ_JOINT = "qdq_joint"            # Quantize/DequantizeLinear: on constants, folds after the QDQ lowering read it


@dataclass(frozen=True)
class OpDef:
    """Everything the compiler knows about one operator.

    parse:     (node, graph) -> typed params; raises OpError on bad attributes or inputs
    infer:     (params, input tensors) -> [(shape, dtype)] per output
    reference: (params, input arrays as int64) -> output arrays, bit-exact
    cost:      (params, input tensors, output tensors) -> Cost
    traits:    what rules may assume of it (``Trait``)
    tiling:    its tiling family: how an output tile maps to its operands' tiles and how the node
               is restricted to one tile (``Deeploy/tiling/families.py``); None: not tileable
    magnitude: how far the op can grow values: (params, largest |value| of each input, input
               tensors, output dtypes) -> largest |value| of each output; None: no larger than
               its first input (data movement, Relu, pools, means)
    examples:  its test records: rng -> one-node cases (``Deeploy/ops/examples.py``)
    fuse_slots: None, or the op fuses with a following RequantShift into ``Requantized<op>``
               whose mul and add follow this many input slots (absent optional inputs as '')
    value_attrs: attributes that are numbers the kernel computes with, not structure
               (quantisation coefficients): the iterations of a loop region may differ in them
    updates:   None, or the input slot whose next value the op's output is (an optimizer step): a
               constant there becomes a variable of the network (``Graph.state``)
    """

    name: str
    parse: Callable[[Node, Graph], Any]
    infer: Callable[[Any, Sequence[Tensor | None]], list[OutSpec]]
    reference: Callable[[Any, Sequence[np.ndarray | None]], list[np.ndarray]]
    cost: Callable[[Any, Sequence[Tensor | None], Sequence[Tensor]], Cost] = _default_cost
    traits: frozenset[Trait] = frozenset()
    tiling: str | None = None
    fuse_slots: int | None = None
    magnitude: Callable[[Any, Sequence[int], Sequence[Tensor | None], Sequence[DType]], list[int]] | None = None
    examples: Callable[[np.random.Generator], list] | None = None
    value_attrs: frozenset[str] = frozenset()
    updates: int | None = None

    @property
    def alias(self) -> bool:
        return Trait.VIEW in self.traits

    def has(self, trait: Trait) -> bool:
        return trait in self.traits


_REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    if op.name in _REGISTRY:
        raise RuntimeError(f"operator {op.name} registered twice")
    _REGISTRY[op.name] = op
    return op


def get_op(node: Node) -> OpDef:
    try:
        return _REGISTRY[node.op]
    except KeyError:
        raise OpError(node, "no operator definition") from None


def op_named(name: str) -> OpDef:
    return _REGISTRY[name]


def registered_ops() -> dict[str, OpDef]:
    return dict(_REGISTRY)


def ops_with(trait: Trait) -> frozenset[str]:
    """Names of the registered ops having ``trait``."""
    return frozenset(name for name, op in _REGISTRY.items() if trait in op.traits)
