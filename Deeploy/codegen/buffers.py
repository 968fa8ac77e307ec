"""C names and typed pointer expressions for every tensor of a planned graph."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable

from Deeploy.ir.dtypes import DType
from Deeploy.ir.graph import Graph
from Deeploy.memory.planner import BufferKind, MemoryPlan

__all__ = ["Buf", "BufferNames", "stream_buffer"]


# Constant arrays of the program: constants, and the weights placed in a weight memory.
_STORED = (BufferKind.CONSTANT, BufferKind.WEIGHT)


@dataclass(frozen=True)
class Buf:
    """A tensor as the kernel call templates see it. Reading ``ptr`` (the C expression of a typed
    pointer to its first element) reports the tensor to ``on_use``: its storage is referenced."""

    name: str                 # tensor name in the graph
    expr: str                 # C expression of a typed pointer to its first element
    shape: tuple[int, ...]
    dtype: DType
    on_use: Callable[[str], None] | None = field(default=None, compare=False, repr=False)

    @property
    def ptr(self) -> str:
        if self.on_use is not None:
            self.on_use(self.name)
        return self.expr

    @property
    def size(self) -> int:
        return int(math.prod(self.shape))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.nbytes

    @property
    def ctype(self) -> str:
        return self.dtype.ctype



def stream_buffer(level: str) -> str:
    """The C array holding the streamed double buffers placed in ``level`` (not the arena's)."""
    return f"deeploy_stream_{level}"

class BufferNames:
    """Assigns unique C identifiers to constants and resolves tensors to pointer expressions;
    ``referenced`` collects the constants whose storage a rendered call or table refers to."""

    def __init__(self, graph: Graph, plan: MemoryPlan, arena: str, io_prefix: str = "DeeployNetwork"):
        self.graph, self.plan, self.arena, self.io_prefix = graph, plan, arena, io_prefix
        self._idents: dict[str, str] = {}
        self.referenced: set[str] = set()
        taken: set[str] = set()
        for name in sorted(n for n, p in plan.placements.items() if p.kind in _STORED):
            base = "c_" + (re.sub(r"[^0-9A-Za-z_]", "_", name).strip("_") or "t")   # ASCII C identifier
            while base.startswith(f"{io_prefix}_"):   # never one of the exported names (--name c)
                base = "c" + base
            ident, k = base, 0
            while ident in taken:
                k += 1
                ident = f"{base}_{k}"
            taken.add(ident)
            self._idents[name] = ident

    def constant_ident(self, name: str) -> str:
        return self._idents[name]

    def buf(self, name: str) -> Buf:
        t = self.graph.tensors[name]
        p = self.plan.placements[name]
        ct = t.dtype.ctype
        if p.kind in _STORED:
            return Buf(name, f"(({ct} *){self._idents[name]})", tuple(t.shape), t.dtype, self.referenced.add)
        if p.kind == BufferKind.INPUT:
            ptr = f"(({ct} *){self.io_prefix}_inputs[{p.index}])"
        elif p.kind == BufferKind.OUTPUT:
            ptr = f"(({ct} *){self.io_prefix}_outputs[{p.index}])"
        else:
            ptr = f"(({ct} *)({self.home(p)} + {p.offset}))"
        return Buf(name, ptr, tuple(t.shape), t.dtype)

    def home(self, p) -> str:
        """The array a planned buffer is an offset into: the arena, or a level's stream buffer."""
        return stream_buffer(p.level) if p.kind == BufferKind.STREAMED and p.level != self.plan.level.name \
            else self.arena

    def address(self, name: str) -> str:
        """A constant C expression of the address of the tensor's storage (static initialisers)."""
        p = self.plan.placements[name]
        if p.kind in _STORED:
            self.referenced.add(name)
            return self._idents[name]
        if p.kind in (BufferKind.INPUT, BufferKind.OUTPUT):
            return f"{self.io_prefix}_{p.kind.value}_{p.index}"
        return f"({self.home(p)} + {p.offset})"

    def scratch(self, node_name: str, within: int = 0) -> str:
        offset = self.plan.scratch_offsets.get(node_name)
        return "NULL" if offset is None else f"((void *)({self.arena} + {offset + within}))"
