"""Per-layer and per-tile profiles (``--profileUntiled``, ``--profileTiling``): the layer markers
and the phases the tile loop's hart (hart 0, or the data mover) marks (``deeploy_tiling.h``) on
the modelled timeline, named
with the manifest written next to the generated code (``Deeploy/manifest.py``: layers, their
marker ids, and per tiled layer its buffering and the ops of every tile).

Every cycle of a layer (from its marker to the next layer's) is labelled once, on hart 0's
timeline, which the cores of a fork share:

* compute: the kernels: per L1 tile its kernel phase (the fork), else the layer's forks, else
  (a serial kernel) everything outside DMA;
* exposed DMA: outside compute, the cycles hart 0 (or the data mover) spent programming DMA
  transfers (issue) and waiting for them (wait);
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

A layer whose last jobs stay in flight over the layers after it (``tiling/overlap.py``) is marked
again where they are waited for: that later span (``LayerCycles.finish``: the wait and the last
tile's write-back) is the layer's own line, so its jobs, not the layer before, take the cycles
the cores spend waiting for them; the wait counts as the layer's compute.

A rolled region (the manifest's ``loops``) marks every iteration with its first iteration's
layer markers: ``per_iteration`` gives the j-th occurrence of a body layer the index of that
layer in iteration j, so the profiles list every iteration's layers under their own names.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, replace
from statistics import median

from Deeploy.manifest import Manifest
from Deeploy.runtime.abi import (LAYER_BASE, STAGE_END, STAGE_INNER, STAGE_INPUT, STAGE_OUTPUT, TILE_END,
                                 TILE_INPUT, TILE_KERNEL, TILE_OUTPUT)
from Deeploy.targets.siracusa.npu_timeline import npu_summary
from Deeploy.targets.siracusa.timing import TimingResult

__all__ = ["TileTime", "LayerTiles", "LayerCycles", "FINISH_TITLE", "PROFILE_LEVELS", "tile_times", "layer_cycles",
           "layer_profile", "network_line", "profile_report", "profile_summary", "op_of", "by_op_type",
           "largest_families", "group_totals", "largest_loss", "overhead_shares"]

FINISH_TITLE = ": the wait for its jobs in flight and their write-back"

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
    dma_wait: tuple[float, float] = (0.0, 0.0)    # the loop's hart waiting for DMA in the load, store phase
    dma_issue: tuple[float, float] = (0.0, 0.0)   # the loop's hart programming DMA in the load, store phase


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
    finish: bool = False     # the layer's later span: the wait for its jobs left in flight and their write-back

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
    """(wait, issue) cycles hart 0 (or the data mover) spent on DMA in [lo, hi) of the timeline."""
    dma, waits = result.dma_between(lo, hi)
    return (sum(w.stall for w in waits if w.hart in result.controls),
            sum(d.issue_cycles for d in dma if d.hart in result.controls))


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
        finish = (lt.layer in tiles and tiles[lt.layer].start != lt.start     # no tile starts in it
                  and not any(lt.start <= t < end for t, m in result.marks if m in (TILE_INPUT, STAGE_INPUT)))
        kernels = [(t.start + t.input, t.start + t.input + t.kernel)
                   for t in (tiles[lt.layer].tiles if lt.layer in tiles and not finish else ()) if t.level == "L1"]
        if not kernels and not finish:
            kernels = [(f.start, f.start + f.cycles) for f in result.forks if lt.start <= f.start < end]
        dma, waits = result.dma_between(lt.start, end)
        wait = sum(w.stall for w in waits if w.hart in result.controls and _outside(kernels, w.time))
        issue = sum(d.issue_cycles for d in dma if d.hart in result.controls and _outside(kernels, d.issue))
        setup = 0.0
        if kernels:
            compute = sum(min(b, end) - a for a, b in kernels)
            overhead = lt.cycles - compute - wait - issue
            loop = [(t.start, t.start + t.input + t.kernel + t.output) for t in tiles[lt.layer].tiles] \
                if lt.layer in tiles else kernels
            lo, hi = min(a for a, _ in loop), max(b for _, b in loop)
            outer = [(lt.start, lo), (hi, end)]
            setup = (lo - lt.start) + max(end - hi, 0.0) - \
                sum(w.stall for w in waits if w.hart in result.controls and not _outside(outer, w.time)) - \
                sum(d.issue_cycles for d in dma if d.hart in result.controls and not _outside(outer, d.issue))
        else:
            compute, overhead = lt.cycles - wait - issue, 0.0
        out.append(LayerCycles(lt.layer, lt.start, lt.cycles, compute, wait, issue, overhead,
                               sum(d.busy for d in dma), sum(w.stall for w in waits), sum(d.bytes for d in dma),
                               len(dma), setup, finish))
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


def _layer_line(c: LayerCycles, manifest: Manifest, result: TimingResult) -> str:
    info = manifest.layer_of_marker(LAYER_BASE + c.layer)
    title = (info.title if info else f"layer {c.layer}") + (FINISH_TITLE if c.finish else "")
    return (f"  [{c.layer:3d}] {title}: {_parts(c)}"
            + npu_summary(result.npu, c.start, c.start + c.cycles, result.model.npu_peak_macs))


def layer_profile(result: TimingResult, manifest: Manifest) -> list[str]:
    """Every marked layer's cycles, labelled, in layer order (the network total: ``network_line``)."""
    return [_layer_line(c, manifest, result)
            for c in sorted(layer_cycles(per_iteration(result, manifest)), key=lambda c: c.start)]


def _tile_lines(entry, lt: LayerTiles, shown: tuple[str, ...]) -> list[str]:
    """Per tile of the tile loops ``shown``: its load, kernel and store phase."""
    lines = []
    for t in lt.tiles:
        if t.level not in shown:
            continue
        ops = entry.tile_ops if t.level == "L1" else entry.l2_tile_ops
        head = (f"[{entry.layer} {t.level}][{entry.buffering if t.level == 'L1' else 'SB'}]"
                f"[{ops[t.index] if t.index < len(ops) else 0} ops][Tile {t.index}]")
        lines += [f"{head} load phase {t.input:.0f} cycles (DMA issue {t.dma_issue[0]:.0f}, DMA wait "
                  f"{t.dma_wait[0]:.0f}, tile code {t.input - t.dma_issue[0] - t.dma_wait[0]:.0f})",
                  f"{head} kernel {t.kernel:.0f} cycles" + (f" on {entry.engine}" if entry.engine else ""),
                  f"{head} store phase {t.output:.0f} cycles (DMA issue {t.dma_issue[1]:.0f}, DMA wait "
                  f"{t.dma_wait[1]:.0f}, tile code {t.output - t.dma_issue[1] - t.dma_wait[1]:.0f})"]
    return lines


def _tiled_layer_line(entry, lt: LayerTiles, c: LayerCycles, result: TimingResult) -> str:
    n = sum(1 for t in lt.tiles if t.level == "L1")
    return (f"[{entry.layer}] {n} tile{'s' if n != 1 else ''} {entry.buffering}: {_parts(c)}; {_engines(c)}"
            + npu_summary(result.npu, c.start, c.start + c.cycles, result.model.npu_peak_macs))


def profile_report(result: TimingResult, manifest: Manifest, tiles: bool = False, level: str | None = None) -> list[str]:
    """The text profile: the summary (``profile_summary``), then every layer's labelled cycles
    grouped by op type (the op type with the most cycles first), with ``tiles`` preceded by the
    phases of its tiles (the tile loops ``level`` selects)."""
    lines = profile_summary(result, manifest)
    result = per_iteration(result, manifest)
    times = tile_times(result)
    entries = {t.index: t for t in manifest.tiles}
    cycles = layer_cycles(result)
    total = sum(c.cycles for c in cycles)
    lines.append("Per layer, by op type" + (" (with every tile's phases):" if tiles else
                                            " (every tile's phases: --profileTiling=tiles or -v):"))
    for op, cs in by_op_type(cycles, manifest):
        whole = sum(c.cycles for c in cs)
        lines.append(f"{op}: {len(cs)} layer{'s' if len(cs) != 1 else ''}, {whole:.0f} cycles ({_share(whole, total)})")
        for c in cs:
            entry, lt = entries.get(c.layer), times.get(c.layer)
            if entry is None or lt is None or c.finish:
                lines.append(_layer_line(c, manifest, result))
                continue
            if tiles:
                lines += _tile_lines(entry, lt, PROFILE_LEVELS[level])
            lines.append(_tiled_layer_line(entry, lt, c, result))
    return lines


def overhead_shares(result: TimingResult, manifest: Manifest) -> dict[int, float]:
    """The share of overhead in the cycles of every layer that ran, by its index in the manifest."""
    parts: dict[int, tuple[float, float]] = {}
    for c in layer_cycles(per_iteration(result, manifest)):
        info = manifest.layer_of_marker(LAYER_BASE + c.layer)
        if info is not None:
            overhead, cycles = parts.get(info.index, (0.0, 0.0))
            parts[info.index] = (overhead + c.overhead, cycles + c.cycles)     # the finish span too
    return {k: overhead / cycles for k, (overhead, cycles) in parts.items() if cycles > 0}


def op_of(manifest: Manifest, layer: int) -> str:
    """The op type of ``layer`` (an index of ``layer_cycles``)."""
    info = manifest.layer_of_marker(LAYER_BASE + layer)
    return info.op if info else "?"


def by_op_type(cycles: list[LayerCycles], manifest: Manifest) -> list[tuple[str, list[LayerCycles]]]:
    """The layers grouped by op type, the op type with the most cycles first."""
    groups: dict[str, list[LayerCycles]] = defaultdict(list)
    for c in sorted(cycles, key=lambda c: c.start):
        groups[op_of(manifest, c.layer)].append(c)
    return sorted(groups.items(), key=lambda g: -sum(c.cycles for c in g[1]))


def largest_families(cycles: list[LayerCycles], manifest: Manifest) -> list[tuple[tuple[str, str], list[LayerCycles]]]:
    """The layers grouped by (name with every number as '*', op type), the most cycles first: a
    network's repeated blocks (``layers.*.mlp.up_proj``) count as one entry."""
    groups: dict[tuple[str, str], list[LayerCycles]] = defaultdict(list)
    for c in cycles:
        info = manifest.layer_of_marker(LAYER_BASE + c.layer)
        groups[(re.sub(r"\d+", "*", info.name) if info else f"layer {c.layer}", op_of(manifest, c.layer))].append(c)
    return sorted(groups.items(), key=lambda g: -sum(c.cycles for c in g[1]))


def group_totals(cycles: list[LayerCycles]) -> dict:
    """The layers' count and summed cycles, compute, exposed DMA and overhead."""
    return {"layers": len(cycles), **{key: sum(getattr(c, key) for c in cycles)
                                      for key in ("cycles", "compute", "exposed_dma", "overhead")}}


def _share(part: float, whole: float) -> str:
    return f"{100 * part / whole if whole else 0.0:.1f}%"


# the overhead between the kernels of a layer: tiled, the tile loop's code; untiled, the code between forks
_BETWEEN = {True: "tile-loop overhead", False: "overhead between kernels"}


def largest_loss(cycles: list[LayerCycles], manifest: Manifest, result: TimingResult) -> str:
    """One sentence: the largest of the losses (tile-loop overhead, layer set-up, exposed DMA),
    its cause and what addresses it; or, when none is large, that compute dominates."""
    total = sum(c.cycles for c in cycles)
    loop = sum(c.overhead - c.setup for c in cycles)
    setup = sum(c.setup for c in cycles)
    exposed = sum(c.exposed_dma for c in cycles)
    name, cycles_lost = max(((_BETWEEN[bool(manifest.tiles)], loop), ("layer set-up overhead", setup),
                             ("exposed DMA", exposed)), key=lambda x: x[1])
    tiled = [t for t in manifest.tiles if t.tiles]
    ops = [o for t in tiled for o in t.tile_ops]
    origin = min((c.start for c in cycles), default=0.0)
    sizes = [d.bytes for d in result.dma if d.issue >= origin]
    head = f"Largest loss: {name}, {cycles_lost:.0f} cycles ({_share(cycles_lost, total)})"
    if cycles_lost < 0.1 * total:
        groups = by_op_type(cycles, manifest)
        top = groups[0][0] if groups else "?"
        return (f"No large loss: compute is {_share(sum(c.compute for c in cycles), total)} of the cycles, most in "
                f"{top}; more cores (--cores, now {manifest.cores}) or a faster {top} kernel shortens it.")
    if name == _BETWEEN[True]:
        single = sum(1 for t in tiled if t.tiles == 1)
        cause = (f"the code around {len(ops)} tiles (tile addresses, DMA programming) is long next to their "
                 f"kernels (median {median(ops) if ops else 0:.0f} ops per tile"
                 + (f", {len(sizes)} DMA transfers of median {median(sizes):.0f} B" if sizes else "") + ")")
        if single * 2 >= len(tiled):
            fix = (f"{single} of the {len(tiled)} tiled layers are already one tile, so a larger --l1 does not help: "
                   "more work per layer (a larger batch or sequence) or fewer layers amortises it")
        else:
            fix = "a larger --l1 gives fewer, larger tiles"
    elif name == "layer set-up overhead":
        cause = f"each of the {len(cycles)} layers prepares its kernel or tile loop (median " \
                f"{median(c.setup for c in cycles):.0f} cycles)"
        fix = "fewer, larger layers amortise it (element-wise ops fused into their producers, a larger batch)"
    else:
        staged = any(t.staged for t in tiled)
        single_buffered = any(t.buffering == "SB" and t.tiles > 1 for t in tiled)
        by_name = {t.layer: t for t in tiled}
        infos = ((c, manifest.layer_of_marker(LAYER_BASE + c.layer)) for c in cycles)
        one_tile = sum(c.exposed_dma for c, info in infos if info and by_name.get(info.name)
                       and by_name[info.name].tiles == 1)
        cause = (f"the cores wait for {len(sizes)} DMA transfers"
                 + (f" of median {median(sizes):.0f} B" if sizes else ""))
        fix = ("--doublebuffer prefetches the next tile while the kernel runs" if single_buffered else
               "a larger --l2 (or --defaultMemLevel=L2) keeps the operands out of L3" if staged else
               "a larger --l1 gives fewer, larger transfers")
        if one_tile >= 0.5 * exposed:
            fix = (f"{_share(one_tile, exposed)} of it is in one-tile layers, whose loads cannot overlap their own "
                   "kernel (--doublebuffer overlaps the tiles of one layer)"
                   + (f"; elsewhere {fix}" if single_buffered or staged else ""))
    return f"{head}: {cause}; {fix}."


def profile_summary(result: TimingResult, manifest: Manifest, top: int = 5) -> list[str]:
    """The profile's first lines: the total and its split, the cycles per op type, the ``top``
    largest layers and the largest loss with its cause and remedy (``largest_loss``)."""
    cycles = layer_cycles(per_iteration(result, manifest))
    total = sum(c.cycles for c in cycles)
    setup = sum(c.setup for c in cycles)
    overhead = sum(c.overhead for c in cycles)

    def split(cs: list[LayerCycles]) -> str:
        whole = sum(c.cycles for c in cs)
        return (f"compute {_share(sum(c.compute for c in cs), whole)}, exposed DMA "
                f"{_share(sum(c.exposed_dma for c in cs), whole)}, overhead {_share(sum(c.overhead for c in cs), whole)}")

    lines = ["Profile summary (modelled cycles):",
             f"  Total {total:.0f} cycles over {len(cycles)} layers: {split(cycles)} (= "
             f"{_BETWEEN[bool(manifest.tiles)]} {_share(overhead - setup, total)} + layer set-up {_share(setup, total)})",
             "  By op type:"]
    for op, cs in by_op_type(cycles, manifest):
        whole = sum(c.cycles for c in cs)
        lines.append(f"    {op:<22} {len(cs):4d} layer{'s' if len(cs) != 1 else ' '} {whole:10.0f} cycles "
                     f"{_share(whole, total):>6}  ({split(cs)})")
    lines.append("  Largest layers (alike layers, their names equal but for numbers, together):")
    for (name, op), cs in largest_families(cycles, manifest)[:top]:
        whole = sum(c.cycles for c in cs)
        count = f" x{len(cs)}, {whole / len(cs):.0f} each" if len(cs) > 1 else ""
        lines.append(f"    {name} ({op}): {whole:.0f} cycles {_share(whole, total)}{count} ({split(cs)})")
    lines.append("  " + largest_loss(cycles, manifest, result))
    return lines
