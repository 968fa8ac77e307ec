"""Declarative platform descriptions: memory levels, the kernel library, op -> kernel
bindings and the lowering pass list. The compiler core reads these; it never branches on a
platform's name."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from Deeploy.ir.dtypes import DType
from Deeploy.resources import target_libraries
from Deeploy.ir.graph import Graph, Node
from Deeploy.targets.signature import Signature

if TYPE_CHECKING:
    from Deeploy.tiling.params import PlatformTiling

__all__ = ["Engine", "Kernel", "MemoryLevel", "Platform", "TARGET_LIBRARIES", "HOST"]

TARGET_LIBRARIES = target_libraries()


@dataclass(frozen=True)
class Engine:
    """What runs the layers bound to it. ``cores``: the most cores one call may use; ``forked``:
    every layer is a function its runtime forks on all cores (a cluster) rather than an inline
    call; ``runtime``: the C header of its runtime the generated code includes ('' for none);
    ``tile_sync``: the C function (of that runtime) the double-buffered tile loop calls when the
    engine's kernels may return with work in flight ('' for kernels that finish before returning;
    ``DEEPLOY_TILE_SYNC_*`` in ``Deeploy/runtime/abi.py``)."""

    name: str
    cores: int = 1
    forked: bool = False
    runtime: str = ""
    tile_sync: str = ""


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


@dataclass(frozen=True)
class MemoryLevel:
    """A memory the planner places buffers in; ``size`` None means unbounded. ``data_attr`` and
    ``const_attr`` are the C attributes (macros of the runtime) placing variables in it;
    ``reserved`` bytes of it belong to the runtime (stacks, its own state)."""

    name: str
    size: int | None
    alignment: int = 4
    data_attr: str = ""
    const_attr: str = ""
    reserved: int = 0             # bytes the platform's runtime keeps in this level
    reserved_for: str = ""        # what they hold (for messages)


@dataclass(frozen=True)
class Platform:
    """Everything target-specific the compiler needs, as data."""

    name: str
    libraries: tuple[str, ...]                     # folders under TargetLibraries/ with kernels/
    memory: Sequence[MemoryLevel]
    bindings: dict[str, Sequence[Kernel]]          # op type -> kernels, first match wins
    passes: Sequence[Callable] = field(default_factory=tuple)
    default_level: str = "L2"
    cmake_platform: str = "Generic"                # cmake/<name>.cmake
    engines: tuple[Engine, ...] = (HOST,)          # the first runs kernels that name none
    timing: object | None = None                   # cycle-model parameters of a virtual platform
    tiling: PlatformTiling | None = None           # tiling cost-model parameters (tiled platforms)
    linker_script: Callable[[Sequence[MemoryLevel]], str] | None = None  # link.ld of a compiled output
    reference_section: str = ""                    # section of a testbench's reference data ('': .rodata)
    # dimensions, element counts, byte sizes and window attributes stay below 2^address_bits: the
    # target's address space and the generated C's sizes and indices (uint32_t, also on the host)
    address_bits: int = 32
    # runs a built program: (path, timeout in s) -> (exit code, output); None: the host runs it
    execute: Callable[[Path, float], tuple[int, str]] | None = None
    # the platform with user options applied (e.g. NPU exclusions); None: it takes no options
    configure: Callable[..., "Platform"] | None = None
    # decides which constants live in a weight memory once the memory plan exists, changing the
    # plan; (graph, layers, plan, platform, tiling options or None, cores, log) -> notes
    place_weights: Callable[..., list[str]] | None = None
    # where a rolled region's per-iteration constants go when they are streamed (stored in another
    # level than the arena's): (graph, layers, platform) -> {tensor: (level, alignment) of the
    # double buffer, or None: not streamed}; the rest stream into the arena
    stream_into: Callable[..., dict] | None = None

    @property
    def kernel_dirs(self) -> tuple[Path, ...]:
        return tuple(TARGET_LIBRARIES / lib / "kernels" for lib in self.libraries)

    @property
    def max_cores(self) -> int:
        return max(e.cores for e in self.engines)

    def engine(self, name: str | None = None) -> Engine:
        """The engine called ``name``, or the platform's first."""
        for engine in self.engines:
            if name is None or engine.name == name:
                return engine
        raise KeyError(name)

    def level(self, name: str) -> MemoryLevel:
        for level in self.memory:
            if level.name == name:
                return level
        raise KeyError(name)
