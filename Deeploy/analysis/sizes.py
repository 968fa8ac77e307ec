"""Code and memory size of a build, printed by the runners and ``deeploy run``:

    Code: .text N B, .rodata N B, .data N B (network library; program: .text N B, ...)
    Memory: peak L1 N B, L2 N B, L3 N B (memory plan)

Section sizes come from the ELF section headers of the network's static library (its objects:
``Network.c`` and the kernels) and of the whole program (runtime, C library and testbench
included), read here (ELF32/64 and ``ar`` archives of them) so that any toolchain's output is
measured alike. ``.text``: executable sections; ``.rodata``: read-only data sections (``.rodata*``,
``.srodata*`` and the levels' constant sections such as ``.l2_rodata``); ``.data``: initialised
writable data (``.data*``, ``.sdata*``); ``.bss`` is not counted (no bytes in the image).

The peak bytes per memory level come from the memory plan (the manifest's buffers): the largest
sum of the buffers live at one layer step, inputs, outputs, constants and tiles included."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from Deeploy.elf import sections
from Deeploy.manifest import Manifest

__all__ = ["SectionSizes", "section_sizes", "level_peaks", "code_line", "engine_line", "memory_line",
           "network_library"]

_WRITE, _ALLOC, _EXEC = 0x1, 0x2, 0x4
_PROGBITS = 1


@dataclass(frozen=True)
class SectionSizes:
    text: int = 0
    rodata: int = 0
    data: int = 0

    def __add__(self, other: "SectionSizes") -> "SectionSizes":
        return SectionSizes(self.text + other.text, self.rodata + other.rodata, self.data + other.data)

    def __str__(self) -> str:
        return f".text {self.text} B, .rodata {self.rodata} B, .data {self.data} B"


def _elf_sizes(data: bytes) -> SectionSizes:
    text = rodata = rwdata = 0
    for sec in sections(data):
        if not sec.flags & _ALLOC or "deeploy_xpulp" in sec.name:
            continue   # the PULP extension's emulation on QEMU is no code of the chip's program
        if sec.flags & _EXEC:
            text += sec.size
        elif sec.kind == _PROGBITS and "rodata" in sec.name:   # by name: a linker script may make it writable
            rodata += sec.size
        elif sec.kind == _PROGBITS and sec.flags & _WRITE and "data" in sec.name:
            rwdata += sec.size
    return SectionSizes(text, rodata, rwdata)


def _archive_members(data: bytes):
    at = 8
    while at + 60 <= len(data):
        size = int(data[at + 48:at + 58].decode().strip())
        yield data[at + 60:at + 60 + size]
        at += 60 + size + (size & 1)


def section_sizes(path: str | Path) -> SectionSizes:
    """The summed section sizes of an ELF file or of every ELF object in an ``ar`` archive."""
    data = Path(path).read_bytes()
    if data.startswith(b"!<arch>\n"):
        total = SectionSizes()
        for member in _archive_members(data):
            total = total + _elf_sizes(member)
        return total
    return _elf_sizes(data)


def network_library(build_dir: Path) -> Path | None:
    """The network's static library in a build folder (``lib<name>_network.a``), if built."""
    found = sorted(Path(build_dir).glob("lib*network.a"))
    return found[0] if found else None


def code_line(program: Path, library: Path | None = None) -> str:
    """``Code: ...`` of the network library (when given) and of the whole program."""
    whole = section_sizes(program)
    if library is None or not library.is_file():
        return f"Code: {whole} (program {program.name})"
    return f"Code: {section_sizes(library)} (network library; program {program.name}: {whole})"


def level_peaks(manifest: Manifest) -> dict[str, int]:
    """Per memory level, the largest sum of bytes of the buffers live at one layer step."""
    steps = max(len(manifest.layers), 1)
    peaks = {}
    for level in manifest.levels:
        change = [0] * (steps + 1)      # bytes that become live (+) or die (-) at each step
        for b in manifest.buffers:
            if b.level == level.name and b.first <= b.last and b.first < steps and b.last >= 0:
                change[max(b.first, 0)] += b.size
                change[min(b.last, steps - 1) + 1] -= b.size
        live = peak = 0
        for delta in change[:steps]:
            live += delta
            peak = max(peak, live)
        peaks[level.name] = peak
    return peaks


def engine_line(manifest: Manifest) -> str:
    """``Layers: 30 tiled into L1 on cluster, 12 on neureka, ...`` (layers that run, per engine;
    a tiled layer counts on the engine running its tiles)."""
    tiles = {t.index: t for t in manifest.tiles}
    counts: dict[str, int] = {}
    for layer in manifest.layers:
        if layer.runs:
            tiled = tiles.get(layer.index)
            engine = f"tiled into L1 on {tiled.engine or 'cluster'}" if tiled else f"on {layer.engine}"
            counts[engine] = counts.get(engine, 0) + 1
    idle = sum(1 for layer in manifest.layers if not layer.runs)
    return ("Layers: " + ", ".join(f"{n} {e}" for e, n in sorted(counts.items(), key=lambda x: -x[1]))
            + (f"; {idle} more run nothing (views)" if idle else "") + ("; untiled" if not tiles else ""))


def memory_line(manifest: Manifest) -> str:
    """``Memory: peak L1 N B, L2 N B, ... (memory plan)``."""
    return "Memory: peak " + ", ".join(f"{n} {b} B" for n, b in level_peaks(manifest).items()) + " (memory plan)"
