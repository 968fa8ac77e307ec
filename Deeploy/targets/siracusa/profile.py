"""Per-layer and per-tile profiles (``--profileUntiled``, ``--profileTiling``): the layer markers
and the phases hart 0 marks in the tile loop (``deeploy_tiling.h``) on the modelled timeline, named
with the manifest written next to the generated code (``Deeploy/manifest.py``: layers, their
marker ids, and per tiled layer its buffering and the ops of every tile).

Every cycle of a layer (from its marker to the next layer's) is labelled once, on hart 0's
timeline, which the cores of a fork share:

* compute: the kernels: per L1 tile its kernel phase (the fork), else the layer's forks, else
  (a serial kernel) everything outside DMA;
* exposed DMA: outside compute, the cycles hart 0 spent programming DMA transfers (issue) and
  waiting for them (wait);
* overhead: the rest, split into set-up (before the first and after the last tile or kernel:
  the layer's and the tile loop's preparation) and the code between the kernels (tile
  addresses, bookkeeping).

compute + exposed DMA + overhead = the layer's cycles. The DMA *engines* work in parallel with
the cores: "DMA engine busy" counts the cycles an engine moved data (setup and beats), and only
the part the cores waited for is exposed ("hidden" = the share they did not wait for).

Per L1 tile: the load phase runs from the tile's start to the kernel's fork (issuing the loads
not yet in L1, waiting for them, issuing the next tile's prefetch), the kernel phase is the fork
(its line names the engine the tile kernels run on: cluster, neureka),
the store phase issues the write-back (and, single-buffered, waits for it). Double-buffered NPU
tiles (an engine with a job queue) differ: the kernel phase triggers the tile's job and waits for
the previous tile's, the store phase writes the previous tile back and issues the next prefetch.
Per L2 tile of a layer with operands in L3: the same for the L3 <-> L2 staging, with the inner L1
tile loop as its kernel.

A rolled region (the manifest's ``loops``) marks every iteration with its first iteration's
layer markers: ``per_iteration`` gives the j-th occurrence of a body layer the index of that
layer in iteration j, so the profiles list every iteration's layers under their own names.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from Deeploy.manifest import Manifest
from Deeploy.runtime.abi import (LAYER_BASE, STAGE_END, STAGE_INNER, STAGE_INPUT, STAGE_OUTPUT, TILE_END,
                                 TILE_INPUT, TILE_KERNEL, TILE_OUTPUT)
from Deeploy.targets.siracusa.npu_timeline import npu_summary
from Deeploy.targets.siracusa.timing import TimingResult

__all__ = ["TileTime", "LayerTiles", "LayerCycles", "PROFILE_LEVELS", "tile_times", "layer_cycles",
           "tiling_profile", "layer_profile", "network_line"]

# --profileTiling=LEVEL: the tile loops shown, named as the peer names them (the level tiles are
# loaded from: L2 for the L2 <-> L1 tiles, L3 for the L3 <-> L2 staging) or by the level a tile lives
# in (L1); None: every tile loop
PROFILE_LEVELS = {"L1": ("L1",), "L2": ("L1",), "L3": ("L2",), None: ("L1", "L2")}


@dataclass(frozen=True)
class TileTime:
    level: str          # "L1" (L2 <-> L1 tiles) or "L2" (L3 <-> L2 staging tiles)
    index: int
    start: float
    input: float        # load phase
    kernel: float
    output: float       # store phase
    dma_wait: tuple[float, float] = (0.0, 0.0)    # hart 0 waiting for DMA in the load, store phase
    dma_issue: tuple[float, float] = (0.0, 0.0)   # hart 0 programming DMA in the load, store phase


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


@dataclass(frozen=True)
class LayerCycles:
    """A layer's cycles, labelled: compute + dma_wait + dma_issue + overhead == cycles."""

    layer: int
    start: float
    cycles: float
    compute: float
    dma_wait: float
    dma_issue: float
    overhead: float
    dma_busy: float          # engine cycles of the transfers issued in the layer (in parallel)
    dma_waited: float        # every core's DMA waits in the layer, also inside the kernels
    dma_bytes: int
    dma_transfers: int
    setup: float = 0.0       # the part of ``overhead`` before the first and after the last tile or kernel

    @property
    def exposed_dma(self) -> float:
        return self.dma_wait + self.dma_issue

    @property
    def hidden(self) -> float:
        return 1.0 - self.dma_waited / self.dma_busy if self.dma_busy else 1.0


def _phases(marks, first: int) -> list[tuple[float, float, float, float]]:
    """(start, input, kernel, output) of every 4-marker group starting with ``first``."""
    out, i = [], 0
    while i + 3 < len(marks):
        if [m for _, m in marks[i:i + 4]] == [first, first + 1, first + 2, first + 3]:
            t = [tm for tm, _ in marks[i:i + 4]]
            out.append((t[0], t[1] - t[0], t[2] - t[1], t[3] - t[2]))
            i += 4
        else:
            i += 1
    return out


def _serial_dma(result: TimingResult, lo: float, hi: float) -> tuple[float, float]:
    """(wait, issue) cycles hart 0 spent on DMA in [lo, hi) of its timeline."""
    dma, waits = result.dma_between(lo, hi)
    return (sum(w.stall for w in waits if w.hart == 0), sum(d.issue_cycles for d in dma if d.hart == 0))


def _tile(result: TimingResult, level: str, k: int, start: float, inp: float, ker: float, out: float) -> TileTime:
    w_in, i_in = _serial_dma(result, start, start + inp)
    w_out, i_out = _serial_dma(result, start + inp + ker, start + inp + ker + out)
    return TileTime(level, k, start, inp, ker, out, (w_in, w_out), (i_in, i_out))


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
        tiles = [_tile(result, "L1", k, *p) for k, p in enumerate(_phases(inner, TILE_INPUT))]
        tiles += [_tile(result, "L2", k, *p) for k, p in enumerate(_phases(outer, STAGE_INPUT))]
        dma, waits = result.dma_between(lt.start, end)
        out[lt.layer] = LayerTiles(lt.layer, lt.start, lt.cycles, tuple(tiles), sum(d.busy for d in dma),
                                   sum(w.stall for w in waits))
    return out


def _outside(windows: list[tuple[float, float]], t: float) -> bool:
    return not any(a <= t < b for a, b in windows)


def per_iteration(result: TimingResult, manifest: Manifest) -> TimingResult:
    """``result`` with the j-th occurrence of a rolled body's layer k relabelled k + j x body."""
    if not manifest.loops:
        return result
    seen: dict[int, int] = {}
    layers = []
    for lt in result.layers:
        loop = next((lp for lp in manifest.loops if lp.first <= lt.layer < lp.first + lp.body), None)
        if loop is not None:
            j = seen.get(lt.layer, 0)
            seen[lt.layer] = j + 1
            lt = replace(lt, layer=lt.layer + j * loop.body)
        layers.append(lt)
    return replace(result, layers=tuple(layers))


def layer_cycles(result: TimingResult) -> list[LayerCycles]:
    """Every layer of the (last) network run with its cycles labelled (see the module docstring)."""
    tiles = tile_times(result)
    out = []
    for lt in result.layers:
        end = lt.start + lt.cycles
        kernels = [(t.start + t.input, t.start + t.input + t.kernel)
                   for t in (tiles[lt.layer].tiles if lt.layer in tiles else ()) if t.level == "L1"]
        if not kernels:
            kernels = [(f.start, f.start + f.cycles) for f in result.forks if lt.start <= f.start < end]
        dma, waits = result.dma_between(lt.start, end)
        wait = sum(w.stall for w in waits if w.hart == 0 and _outside(kernels, w.time))
        issue = sum(d.issue_cycles for d in dma if d.hart == 0 and _outside(kernels, d.issue))
        setup = 0.0
        if kernels:
            compute = sum(min(b, end) - a for a, b in kernels)
            overhead = lt.cycles - compute - wait - issue
            loop = [(t.start, t.start + t.input + t.kernel + t.output) for t in tiles[lt.layer].tiles] \
                if lt.layer in tiles else kernels
            lo, hi = min(a for a, _ in loop), max(b for _, b in loop)
            outer = [(lt.start, lo), (hi, end)]
            setup = (lo - lt.start) + max(end - hi, 0.0) - \
                sum(w.stall for w in waits if w.hart == 0 and not _outside(outer, w.time)) - \
                sum(d.issue_cycles for d in dma if d.hart == 0 and not _outside(outer, d.issue))
        else:
            compute, overhead = lt.cycles - wait - issue, 0.0
        out.append(LayerCycles(lt.layer, lt.start, lt.cycles, compute, wait, issue, overhead,
                               sum(d.busy for d in dma), sum(w.stall for w in waits), sum(d.bytes for d in dma),
                               len(dma), setup))
    return out


def _parts(c: LayerCycles) -> str:
    return (f"{c.cycles:.0f} cycles = compute {c.compute:.0f} + exposed DMA {c.exposed_dma:.0f} "
            f"(issue {c.dma_issue:.0f}, wait {c.dma_wait:.0f}) + overhead {c.overhead:.0f} "
            f"(set-up {c.setup:.0f}, between kernels {c.overhead - c.setup:.0f})")


def _engines(c: LayerCycles) -> str:
    if not c.dma_transfers:
        return "no DMA"
    return (f"DMA engines busy {c.dma_busy:.0f} cycles in parallel ({c.dma_transfers} transfers, {c.dma_bytes} B), "
            f"{100 * c.hidden:.1f}% hidden behind other work")


def network_line(result: TimingResult) -> str:
    """The network total, labelled like its layers."""
    cycles = layer_cycles(result)
    total = LayerCycles(-1, 0.0, *(sum(getattr(c, f) for c in cycles) for f in
                                   ("cycles", "compute", "dma_wait", "dma_issue", "overhead", "dma_busy",
                                    "dma_waited", "dma_bytes", "dma_transfers", "setup")))
    return f"Network total: {_parts(total)} over {len(cycles)} layers; {_engines(total)}"


def layer_profile(result: TimingResult, manifest: Manifest) -> list[str]:
    """The ``--profileUntiled`` lines: every marked layer's cycles, labelled, in layer order (the
    network total: ``network_line``)."""
    cycles = layer_cycles(per_iteration(result, manifest))
    lines = []
    for c in sorted(cycles, key=lambda c: c.start):
        info = manifest.layer_of_marker(LAYER_BASE + c.layer)
        lines.append(f"  [{c.layer:3d}] {info.title if info else f'layer {c.layer}'}: {_parts(c)}"
                     + npu_summary(result.npu, c.start, c.start + c.cycles))
    return lines


def tiling_profile(result: TimingResult, manifest: Manifest, level: str | None = None) -> list[str]:
    """The ``--profileTiling`` lines (see the module docstring): per tile of the tile loops
    ``level`` selects (``PROFILE_LEVELS``), its phases; per tiled layer its labelled cycles."""
    lines = []
    result = per_iteration(result, manifest)
    times = tile_times(result)
    labelled = {c.layer: c for c in layer_cycles(result)}
    shown = PROFILE_LEVELS[level]
    for entry in manifest.tiles:
        lt = times.get(entry.index)
        if lt is None:
            continue
        name, buf = entry.layer, entry.buffering
        for t in lt.tiles:
            if t.level not in shown:
                continue
            ops = entry.tile_ops if t.level == "L1" else entry.l2_tile_ops
            head = (f"[{name} {t.level}][{buf if t.level == 'L1' else 'SB'}]"
                    f"[{ops[t.index] if t.index < len(ops) else 0} ops][Tile {t.index}]")
            lines += [f"{head} load phase {t.input:.0f} cycles (DMA issue {t.dma_issue[0]:.0f}, DMA wait "
                      f"{t.dma_wait[0]:.0f}, tile code {t.input - t.dma_issue[0] - t.dma_wait[0]:.0f})",
                      f"{head} kernel {t.kernel:.0f} cycles" + (f" on {entry.engine}" if entry.engine else ""),
                      f"{head} store phase {t.output:.0f} cycles (DMA issue {t.dma_issue[1]:.0f}, DMA wait "
                      f"{t.dma_wait[1]:.0f}, tile code {t.output - t.dma_issue[1] - t.dma_wait[1]:.0f})"]
        c = labelled[entry.index]
        n = sum(1 for t in lt.tiles if t.level == "L1")
        lines.append(f"[{name}] {n} tile{'s' if n != 1 else ''} {buf}: {_parts(c)}; {_engines(c)}"
                     + npu_summary(result.npu, c.start, c.start + c.cycles))
    return lines
