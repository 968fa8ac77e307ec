"""Declarative platform descriptions: memory levels, the kernel library, op -> kernel
bindings and the lowering pass list. The compiler core reads these; it never branches on a
platform's name. A target builds its ``Platform`` from the parts re-exported here (``Engine``,
``Kernel``: ``Deeploy/binding.py``; ``MemoryLevel``: ``Deeploy/memory/levels.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from Deeploy.binding import HOST, Engine, Kernel
from Deeploy.memory.levels import MemoryLevel
from Deeploy.resources import target_libraries

if TYPE_CHECKING:
    from Deeploy.tiling.params import PlatformTiling

__all__ = ["Engine", "Kernel", "MemoryLevel", "Platform", "TARGET_LIBRARIES", "HOST"]

TARGET_LIBRARIES = target_libraries()


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
    # decides which constants live in a weight memory from the memory plan made without them (the
    # compiler plans again with them: ``Placement.weights``); (graph, layers, plan, platform, tiling
    # options or None, cores, log) -> ({tensor: weight memory level}, notes)
    place_weights: Callable[..., tuple[dict[str, str], list[str]]] | None = None
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
