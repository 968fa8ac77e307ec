"""Every buffer of a compiled network per memory level over the schedule (layer steps), read from
its manifest (``Deeploy/manifest.py``): L2 activations with their lifetimes, graph I/O and
constants (whole schedule) in their level, and per tiled layer its L1 tile slots, kernel scratch
and L2 staging buffers (live during that layer only). Offsets are the manifest's, as planned."""

from __future__ import annotations

from dataclasses import dataclass

from Deeploy.manifest import BufferInfo, Manifest

__all__ = ["LevelBuffers", "memory_levels"]


@dataclass(frozen=True)
class LevelBuffers:
    """The buffers of one memory level and the bytes the network may use of it (None: unbounded)."""

    name: str
    capacity: int | None
    buffers: tuple[BufferInfo, ...]


def memory_levels(manifest: Manifest) -> tuple[list[str], list[LevelBuffers]]:
    """(step labels, buffers of every level) of a compiled network."""
    steps = [f"{info.index}: {info.op} {info.name}" for info in manifest.layers]
    known = {level.name for level in manifest.levels}
    stray = sorted({b.level for b in manifest.buffers} - known)
    if stray:
        raise ValueError(f"the manifest places buffers in unknown memory levels {stray}")
    levels = [LevelBuffers(level.name, level.size, tuple(b for b in manifest.buffers if b.level == level.name))
              for level in manifest.levels]
    return steps, levels
