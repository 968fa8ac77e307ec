"""Declarative platform descriptions: memory levels, the kernel library, op -> kernel
bindings and the lowering pass list. The compiler core reads these; it never branches on a
platform's name. A target builds its ``Platform`` from the parts re-exported here (``Engine``,
``Kernel``: ``Deeploy/binding.py``; ``MemoryLevel``: ``Deeploy/memory/levels.py``)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from Deeploy.binding import HOST, Engine, Kernel
from Deeploy.errors import BuildError
from Deeploy.memory.levels import MemoryLevel
from Deeploy.ops import registered_ops
from Deeploy.resources import target_libraries

if TYPE_CHECKING:
    from Deeploy.tiling.params import PlatformTiling

__all__ = ["Engine", "Kernel", "MemoryLevel", "Platform", "TargetRunner", "HOST_RUNNER", "TARGET_LIBRARIES", "HOST"]

TARGET_LIBRARIES = target_libraries()


@dataclass(frozen=True)
class Platform:
    """Everything target-specific the compiler needs, as data."""

    name: str
    libraries: tuple[str, ...]                     # folders under TargetLibraries/: kernels/, inc/, src/
    memory: Sequence[MemoryLevel]
    bindings: dict[str, Sequence[Kernel]]          # op type -> kernels, first match wins
    passes: Sequence[Callable] = field(default_factory=tuple)
    default_level: str = "L2"
    cmake_platform: str = "Generic"                # cmake/<name>.cmake
    engines: tuple[Engine, ...] = (HOST,)          # the first runs kernels that name none
    timing: object | None = None                   # cycle-model parameters of a virtual platform
    tiling: PlatformTiling | None = None           # tiling cost-model parameters (tiled platforms)
    tiled_only: str = ""                           # why it compiles only tiled ('': untiled too)
    linker_script: Callable[[Sequence[MemoryLevel]], str] | None = None  # link.ld of a compiled output
    # (memory, program, cores) -> the command running a program built for it (a compiled output's
    # `run` target); None: the program runs on the host
    run_command: Callable[[Sequence[MemoryLevel], str, str], list[str]] | None = None
    reference_section: str = ""                    # section of a testbench's reference data ('': .rodata)
    # dimensions, element counts, byte sizes and window attributes stay below 2^address_bits: the
    # target's address space and the generated C's sizes and indices (uint32_t, also on the host)
    address_bits: int = 32
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
    # (graph, memory plan) -> None, or a DeeployError when the planned network cannot fit the
    # target's memory (checked when compiling, before anything is written); None: no check
    check_plan: Callable[..., None] | None = None

    def __post_init__(self) -> None:
        """Every binding key is a registered op (a target registers its own ops before it builds
        its platform): a misspelt key fails when the target is imported."""
        known = registered_ops()
        for op in self.bindings:
            if op not in known:
                near = get_close_matches(op, known, n=1)
                raise RuntimeError(f"platform {self.name}: bindings name '{op}', which is no registered op"
                                   + (f" (did you mean '{near[0]}'?)" if near else ""))

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


def run_on_host(program: Path, options: argparse.Namespace, gen: Path | None, timeout: float,
                compiled: object | None = None) -> tuple[int, str]:
    """The program run on the host: (exit code, output); its standard error passed through."""
    try:
        proc = subprocess.run([str(program)], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{program} timed out after {timeout:.0f} s") from None
    if proc.stderr.strip():
        print(proc.stderr, end="", file=sys.stderr)
    return proc.returncode, proc.stdout


@dataclass(frozen=True)
class TargetRunner:
    """How a target builds, launches and reads back a compiled program (a target package's
    ``runner`` module defines ``RUNNER``; without one the host runs it). ``options`` are the
    run's flags (an ``argparse.Namespace``: a flag it lacks is off); ``gen`` is the folder of a
    test runner's generation (the output in ``gen/network``, the build in ``gen/build``), None
    for ``deeploy run``; ``compiled`` the ``CompileResult``, None when the code was not compiled
    in this process."""

    # (options, gen) -> the CMake definitions of the build (may write files into gen)
    build_options: Callable[[argparse.Namespace, Path], list[str]] = lambda options, gen: []
    # (program, options, gen, timeout in s, compiled) -> (exit code, output)
    execute: Callable[..., tuple[int, str]] = run_on_host
    # a failed build's output -> one line saying why (e.g. an over-full memory level), or None
    explain_build_error: Callable[[str], str | None] = lambda output: None
    # (compiled, options, gen) after a test runner's compile: e.g. reports beside the code
    after_compile: Callable[[object, argparse.Namespace, Path], None] = lambda compiled, options, gen: None
    timeout: float = 300.0                         # a run's default limit, in s


HOST_RUNNER = TargetRunner()
