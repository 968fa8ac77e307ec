"""Binding: every node gets a kernel of the platform that accepts its op, types and
attributes. Unsupported nodes are all reported together."""

from __future__ import annotations

from dataclasses import dataclass

from Deeploy.errors import BindingError, UnsupportedOpError
from Deeploy.ir.dtypes import INT32, DType
from Deeploy.ir.graph import Graph, Node
from Deeploy.targets.platform import Engine, Kernel, Platform

__all__ = ["Layer", "bind", "check_supported", "kernel_scratch_bytes"]


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


def check_supported(graph: Graph, platform: Platform) -> None:
    """Fail early, naming every node whose op has no definition, or no kernel on ``platform`` while
    it does not fold at compile time (``passes/constant_folding.folds``)."""
    from Deeploy.ops import registered_ops
    from Deeploy.passes.constant_folding import folds
    known, constant, missing = registered_ops(), set(), []
    for n in graph.nodes:
        if n.op not in known:
            missing.append((n.op, n.name))
        elif folds(n, graph, lambda name: name in constant or graph.is_constant(name), joints=False):
            constant.update(filter(None, n.outputs))
        elif not platform.bindings.get(n.op):
            missing.append((n.op, n.name))
    if missing:
        raise UnsupportedOpError(platform.name, missing)


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


def bind(graph: Graph, platform: Platform, cores: int = 1) -> list[Layer]:
    """One Layer per node, in execution order; scratch is reserved for ``cores`` cores."""
    layers, unsupported, rejected = [], [], []
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
                layers.append(Layer(node, kernel, platform.engine(kernel.engine), _type_args(kernel, node, graph), total,
                                    offset))
                break
            reasons.append(f"{kernel.name}: {reason}")
        else:
            types = ", ".join(str(graph.tensors[i].dtype) for i in node.inputs if i)
            rejected.append(f"{node.op} ('{node.name}', inputs {types}): " + "; ".join(reasons))
    if unsupported:
        raise UnsupportedOpError(platform.name, unsupported)
    if rejected:
        raise BindingError(f"platform {platform.name} has no kernel for: " + " | ".join(rejected))
    return layers
