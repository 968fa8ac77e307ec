"""Binding: every node gets a kernel of the platform that accepts its op, types and
attributes. Unsupported nodes are all reported together."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Protocol, Sequence

from Deeploy.errors import BindingError, UnsupportedOpError
from Deeploy.ir.dtypes import INT32, DType
from Deeploy.ir.graph import Graph, Node
from Deeploy.ops.bounds import memoized
from Deeploy.signature import Signature

__all__ = ["Engine", "HOST", "Kernel", "Layer", "KernelTable", "bind", "check_supported", "kernel_scratch_bytes"]


@dataclass(frozen=True)
class Engine:
    """What runs the layers bound to it. ``cores``: the most cores one call may use; ``forked``:
    every layer is a function its runtime forks on all cores (a cluster) rather than an inline
    call; ``runtime``: the C header of its runtime the generated code includes ('' for none);
    ``tile_sync``: the C function (of that runtime) the double-buffered table loop calls when the
    engine's kernels may return with work in flight (straight-line code waits in the kernel) ('' for kernels that finish before returning;
    ``DEEPLOY_TILE_SYNC_*`` in ``Deeploy/runtime/abi.py``); ``data_mover``: a core of its own, not
    the engine's cores, programs the DMA and runs the tile loops (the runtime's table loop,
    ``deeploy_run_tiled``, never straight-line code or a planned loop on core 0)."""

    name: str
    cores: int = 1
    forked: bool = False
    runtime: str = ""
    tile_sync: str = ""
    data_mover: bool = False


HOST = Engine("serial")   # one core, plain calls


@dataclass(frozen=True)
class Kernel:
    """A type-generic C kernel and how a node calls it.

    ``source`` (in the library's ``kernels/`` folder) defines ``static void KERNEL(...)`` in
    terms of the type macros named in ``types``; each macro is bound to the element type of the
    node's input (then output) at that position, and the generated code instantiates one
    variant per distinct binding. ``signature`` is its typed parameter list, from which the
    call (``call``, a Mako template) and the library's prototype header are generated.
    ``accepts`` returns None if the kernel can run the node, else the reason it cannot.
    ``scratch`` gives the bytes of working memory one core needs per call, a multiple of 8; the
    planner reserves one such slice per core and core ``c`` uses the slice at ``c * bytes``;
    ``shared_scratch`` gives bytes all cores share (the call template's ``shared`` pointer);
    ``extra_types`` binds further type macros computed from the node (e.g. an accumulator).
    ``engine``: the name of the platform engine that runs it (None: the platform's first).
    ``scratch_optional``: the kernel also runs, more slowly, when its call gets no scratch (the
    template's ``scratch``/``shared`` are NULL); a tiled layer drops it when nothing fits with it.
    ``floats``: the float types its operands may have (none: an integer kernel); binding never
    gives a kernel a node with other float operands.
    """

    name: str
    source: str
    signature: Signature
    types: tuple[str, ...] = ()
    accepts: Callable[[Node, Graph], str | None] | None = None
    scratch: Callable[[Node, Graph], int] | None = None
    extra_types: Callable[[Node, Graph], tuple[tuple[str, DType], ...]] | None = None
    shared_scratch: Callable[[Node, Graph], int] | None = None
    engine: str | None = None
    scratch_optional: bool = False
    floats: tuple[DType, ...] = ()

    @property
    def call(self) -> str:
        """The Mako template of the call statement, rendered from the signature."""
        return self.signature.template


class KernelTable(Protocol):
    """What binding reads of a platform (``Deeploy/platform.py``)."""

    name: str
    bindings: Mapping[str, Sequence[Kernel]]

    def engine(self, name: str | None = None) -> Engine: ...



@dataclass(frozen=True)
class Layer:
    """A node with its kernel, the engine that runs it, the kernel's type arguments and its scratch bytes."""

    node: Node
    kernel: Kernel
    engine: Engine
    type_args: tuple[tuple[str, DType], ...]
    scratch: int = 0          # total bytes: one slice per core, then the shared part
    shared_offset: int = 0    # where the shared part starts

    @property
    def variant(self) -> str:
        """C name of the kernel instantiated for these types, e.g. ``Conv2d_s8_s8_s32``."""
        if not self.type_args:
            return self.kernel.name
        return self.kernel.name + "_" + "_".join(t.short for _, t in self.type_args)


def _type_args(kernel: Kernel, node: Node, graph: Graph) -> tuple[tuple[str, DType], ...]:
    tensors = [graph.tensors[i] if i else None for i in node.inputs]
    tensors += [graph.tensors[o] for o in node.outputs]
    args = []
    for macro, tensor in zip(kernel.types, tensors + [None] * len(kernel.types)):
        if macro:
            args.append((macro, tensor.dtype if tensor is not None else INT32))
    if kernel.extra_types:
        args.extend(kernel.extra_types(node, graph))
    return tuple(args)


def check_supported(graph: Graph, platform: KernelTable) -> None:
    """Fail early, naming every node whose op has no definition, or no kernel on ``platform`` while
    it does not fold at compile time (``ops.folding.folds``) and no pass lowers it (``Trait.LOWERED``)."""
    from Deeploy.ops import Trait, registered_ops
    from Deeploy.ops.folding import folds
    known, constant, missing = registered_ops(), set(), []
    for n in graph.nodes:
        if n.op not in known:
            missing.append((n.op, n.name))
        elif folds(n, graph, lambda name: name in constant or graph.is_constant(name), joints=False):
            constant.update(filter(None, n.outputs))
        elif not platform.bindings.get(n.op) and not known[n.op].has(Trait.LOWERED):
            missing.append((n.op, n.name))
    if missing:
        raise UnsupportedOpError(platform.name, missing, supported=list(platform.bindings))


def kernel_scratch_bytes(kernel: Kernel, node: Node, graph: Graph, cores: int) -> tuple[int, int]:
    """Scratch of one call of ``kernel`` on ``node`` (the whole layer or one tile of it): total
    bytes (a slice per core, each rounded up to 8, then the shared part) and where the shared
    part starts."""
    per_core = kernel.scratch(node, graph) if kernel.scratch else 0
    shared = kernel.shared_scratch(node, graph) if kernel.shared_scratch else 0
    offset = -(-per_core // 8) * 8 * cores
    return offset + shared, offset


def _float_reason(kernel: Kernel, node: Node, graph: Graph) -> str | None:
    """Why ``kernel`` cannot take the node's float operands (None if it has none or may)."""
    names = [n for n in list(node.inputs) + list(node.outputs) if n]
    floats = {graph.tensors[n].dtype for n in names if graph.tensors[n].dtype.is_float}
    missing = sorted(str(t) for t in floats - set(kernel.floats))
    if not missing:
        return None
    return f"no {' or '.join(missing)} operands" if kernel.floats else "computes on integers only"


def bind(graph: Graph, platform: KernelTable, cores: int = 1) -> list[Layer]:
    """One Layer per node, in execution order; scratch is reserved for ``cores`` cores."""
    layers, unsupported, rejected = [], [], []
    with memoized(graph):   # binding reads the graph only
        for node in graph.nodes:
            kernels = platform.bindings.get(node.op)
            if not kernels:
                unsupported.append((node.op, node.name))
                continue
            reasons = []
            for kernel in kernels:
                reason = _float_reason(kernel, node, graph)
                if reason is None and kernel.accepts:
                    reason = kernel.accepts(node, graph)
                if reason is None:
                    total, offset = kernel_scratch_bytes(kernel, node, graph, cores)
                    layers.append(Layer(node, kernel, platform.engine(kernel.engine), _type_args(kernel, node, graph),
                                        total, offset))
                    break
                reasons.append(f"{kernel.name}: {reason}")
            else:
                types = ", ".join(str(graph.tensors[i].dtype) for i in node.inputs if i)
                rejected.append(f"{node.op} ('{node.name}', inputs {types}): " + "; ".join(reasons))
    if unsupported:
        raise UnsupportedOpError(platform.name, unsupported, supported=list(platform.bindings))
    if rejected:
        raise BindingError(f"platform {platform.name} has no kernel for: " + " | ".join(rejected))
    return layers
