"""Per-layer and per-tile profiles (``--profileUntiled``, ``--profileTiling``): the layer markers
and the phases hart 0 marks in the tile loop (``deeploy_tiling.h``) on the modelled timeline, named
with the manifest written next to the generated code (``Deeploy/manifest.py``: layers, their
marker ids, and per tiled layer its buffering and the ops of every tile).

Per L1 tile: "Input DMA" = from the tile's start to the kernel's fork (issuing the loads not yet
in L1, waiting for them, issuing the next tile's prefetch), "Kernel" = the fork, "Output DMA" =
issuing the write-back (and, single-buffered, waiting for it). Per L2 tile of a layer with
operands in L3: the same for the L3 <-> L2 staging, with the inner L1 tile loop as its kernel.
Per layer: its DMA engines' busy cycles and how much of them the cores waited for (hidden =
1 - waited / busy)."""

from __future__ import annotations

from dataclasses import dataclass

from Deeploy.manifest import Manifest
from Deeploy.runtime.abi import (LAYER_BASE, STAGE_END, STAGE_INNER, STAGE_INPUT, STAGE_OUTPUT, TILE_END,
                                          TILE_INPUT, TILE_KERNEL, TILE_OUTPUT)
from Deeploy.targets.siracusa.timing import TimingResult

__all__ = ["TileTime", "LayerTiles", "tile_times", "tiling_profile", "layer_profile"]


@dataclass(frozen=True)
class TileTime:
    level: str          # "L1" (L2 <-> L1 tiles) or "L2" (L3 <-> L2 staging tiles)
    index: int
    input: float
    kernel: float
    output: float


@dataclass(frozen=True)
class LayerTiles:
    index: int
    start: float
    cycles: float
    tiles: tuple[TileTime, ...]
    dma_busy: float
    dma_waited: float

    @property
    def hidden(self) -> float:
        """Share of the layer's DMA engine time the cores did not wait for."""
        return 1.0 - self.dma_waited / self.dma_busy if self.dma_busy else 1.0


def _phases(marks, first: int) -> list[tuple[float, float, float]]:
    """(input, kernel, output) of every 4-marker group starting with ``first``."""
    out, i = [], 0
    while i + 3 < len(marks):
        if [m for _, m in marks[i:i + 4]] == [first, first + 1, first + 2, first + 3]:
            t = [tm for tm, _ in marks[i:i + 4]]
            out.append((t[1] - t[0], t[2] - t[1], t[3] - t[2]))
            i += 4
        else:
            i += 1
    return out


def tile_times(result: TimingResult) -> dict[int, LayerTiles]:
    """The tiles of every layer occurrence that has tile markers (the first occurrence)."""
    out: dict[int, LayerTiles] = {}
    for lt in result.layers:
        if lt.layer in out:
            continue
        end = lt.start + lt.cycles
        marks = [(t, m) for t, m in result.marks if lt.start <= t <= end]
        if not marks:
            continue
        inner = [(t, m) for t, m in marks if m in (TILE_INPUT, TILE_KERNEL, TILE_OUTPUT, TILE_END)]
        outer = [(t, m) for t, m in marks if m in (STAGE_INPUT, STAGE_INNER, STAGE_OUTPUT, STAGE_END)]
        tiles = [TileTime("L1", k, *p) for k, p in enumerate(_phases(inner, TILE_INPUT))]
        tiles += [TileTime("L2", k, *p) for k, p in enumerate(_phases(outer, STAGE_INPUT))]
        dma, waits = result.dma_between(lt.start, end)
        out[lt.layer] = LayerTiles(lt.layer, lt.start, lt.cycles, tuple(tiles), sum(d.busy for d in dma),
                                   sum(w.stall for w in waits))
    return out


def layer_profile(result: TimingResult, manifest: Manifest) -> list[str]:
    """The ``--profileUntiled`` lines: modelled cycles of every marked layer, in layer order."""
    lines = []
    for k, cycles in sorted(result.per_layer().items()):
        info = manifest.layer_of_marker(LAYER_BASE + k)
        lines.append(f"  [{k:3d}] {info.title if info else f'layer {k}'}: {cycles:.0f} cycles")
    return lines


def tiling_profile(result: TimingResult, manifest: Manifest) -> list[str]:
    """The ``--profileTiling`` lines (see the module docstring)."""
    lines = []
    times = tile_times(result)
    for entry in manifest.tiles:
        lt = times.get(entry.index)
        if lt is None:
            continue
        name, buf = entry.layer, entry.buffering
        for t in lt.tiles:
            ops = entry.tile_ops if t.level == "L1" else entry.l2_tile_ops
            head = (f"[{name} {t.level}][{buf if t.level == 'L1' else 'SB'}]"
                    f"[{ops[t.index] if t.index < len(ops) else 0} ops][Tile {t.index}]")
            lines += [f"{head} Input DMA took {t.input:.0f} cycles", f"{head} Kernel took {t.kernel:.0f} cycles",
                      f"{head} Output DMA took {t.output:.0f} cycles"]
        kernel = sum(t.kernel for t in lt.tiles if t.level == "L1")
        lines.append(f"[{name}] {sum(1 for t in lt.tiles if t.level == 'L1')} tiles {buf}: {lt.cycles:.0f} cycles, "
                     f"kernels {kernel:.0f}, DMA busy {lt.dma_busy:.0f}, waited {lt.dma_waited:.0f} "
                     f"(hidden {100 * lt.hidden:.1f}%)")
    return lines
