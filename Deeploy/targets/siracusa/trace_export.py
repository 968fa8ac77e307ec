"""A profiled run as files people open: ``profile.json`` (network / layer / tile / phase, per engine),
``trace.json`` in the Trace Event Format (opens in https://ui.perfetto.dev or chrome://tracing) and
``profile.html`` (cycles per layer, ``Deeploy/codegen/profile_chart.py``).

Times are modelled cycles (``timing.py``); the trace's ``ts``/``dur`` are microseconds at
``CLOCK_MHZ`` (``ts = cycles / CLOCK_MHZ``, both ends rounded to whole nanoseconds; every event
also carries its exact cycles in ``args``).
Tracks (pid / tid):

* pid 1 "Network": tid 0 the layers, tid 1 the L1 tiles' phases (load, kernel, store), tid 2 the
  L2 staging tiles' phases (operands in L3);
* pid 2 "Cluster cores": tid k core k: the forks it took part in (a fork without barriers: from
  the dispatch for the core's own busy and DMA cycles, so an unbalanced split shows; with
  barriers: the whole fork), and on core 0 (or the data mover's track) the DMA waits and issues
  of serial code;
* pid 3 "DMA engines": tid e engine e (cluster DMA, L3 uDMA): every transfer while the engine
  works on it (setup and beats; an engine moves one transfer at a time).

Events on one track never overlap. Layer events start at their layer's first cycle relative to
the network's first layer, so the layer events sum to ``profile.json``'s ``cycles``."""

from __future__ import annotations

import json
from pathlib import Path

from Deeploy.codegen.profile_chart import profile_chart_html
from Deeploy.manifest import Manifest
from Deeploy.runtime.abi import LAYER_BASE
from Deeploy.targets.siracusa.profile import (FINISH_TITLE, PROFILE_LEVELS, by_op_type, group_totals, largest_families,
                                             largest_loss, layer_cycles, per_iteration, tile_times)
from Deeploy.targets.siracusa.timing import DMA_ENGINE_NAMES, TimingResult

__all__ = ["CLOCK_MHZ", "PROFILE_VERSION", "profile_data", "trace_events", "write_profile_files"]

CLOCK_MHZ = 300.0      # GUESS (specs/siracusa-timing.md: clock not published, ~300 MHz)
PROFILE_VERSION = 2
PID_NETWORK, PID_CORES, PID_DMA = 1, 2, 3


def _layer_info(manifest: Manifest, k: int) -> dict:
    info = manifest.layer_of_marker(LAYER_BASE + k)
    if info is None:
        return {"name": f"layer {k}", "op": "", "kernel": "", "engine": ""}
    return {"name": info.name, "op": info.op, "kernel": info.kernel, "engine": info.engine}


def profile_data(result: TimingResult, manifest: Manifest, level: str | None = None, name: str = "",
                 largest: int = 12) -> dict:
    """The profile of the run's last network pass: totals, the largest loss, per op type, the
    largest groups of alike layers, per engine, per layer (labelled cycles, DMA, per core busy
    cycles) and per tile of the tile loops ``level`` selects."""
    origin = result.layers[0].start if result.layers else 0.0
    tiles = tile_times(result)
    shown = PROFILE_LEVELS[level]
    ops = {t.index: t for t in manifest.tiles}
    layers, cycles = [], layer_cycles(result)
    for c in cycles:
        end = c.start + c.cycles
        forks = [f for f in result.forks if c.start <= f.start < end]
        cores = [0.0] * manifest.cores
        for f in forks:
            for k, busy in enumerate(f.core_cycles):
                if k < len(cores):
                    cores[k] += busy
        entry = {"index": c.layer, **_layer_info(manifest, c.layer), "start": c.start - origin, "cycles": c.cycles,
                 "compute": c.compute, "exposed_dma": c.exposed_dma, "dma_issue": c.dma_issue, "dma_wait": c.dma_wait,
                 "overhead": c.overhead, "overhead_setup": c.setup, "finish": c.finish, "forks": len(forks),
                 "core_busy": cores,
                 "dma": {"busy": c.dma_busy, "waited": c.dma_waited, "bytes": c.dma_bytes,
                         "transfers": c.dma_transfers, "hidden": c.hidden}}
        if c.layer in tiles and not c.finish:
            info = ops.get(c.layer)
            entry["buffering"] = info.buffering if info else ""
            entry["tiles"] = [{"level": t.level, "index": t.index, "start": t.start - origin,
                               "ops": _tile_ops(info, t.level, t.index),
                               "load": t.input, "kernel": t.kernel, "store": t.output,
                               "load_dma_issue": t.dma_issue[0], "load_dma_wait": t.dma_wait[0],
                               "store_dma_issue": t.dma_issue[1], "store_dma_wait": t.dma_wait[1]}
                              for t in tiles[c.layer].tiles if t.level in shown]
        layers.append(entry)
    total = {key: sum(entry[key] for entry in layers)
             for key in ("cycles", "compute", "exposed_dma", "dma_issue", "dma_wait", "overhead")}
    engines = {"cores": {"count": manifest.cores,
                         "busy": [sum(entry["core_busy"][k] for entry in layers) for k in range(manifest.cores)]},
               "dma": []}
    run = [d for d in result.dma if d.issue >= origin]
    for e, engine in enumerate(DMA_ENGINE_NAMES):
        ts = [d for d in run if d.engine == e]
        engines["dma"].append({"engine": e, "name": engine, "transfers": len(ts), "bytes": sum(d.bytes for d in ts),
                               "busy": sum(d.busy for d in ts),
                               "waited": sum(w.stall for w in result.waits if w.engine == e and w.time >= origin)})
    return {"version": PROFILE_VERSION, "platform": manifest.platform, "network": name or manifest.source,
            "cycles_are": "modelled (Deeploy/targets/siracusa/timing.py)", "clock_mhz": CLOCK_MHZ,
            "tile_levels": list(shown), **total, "largest_loss": largest_loss(cycles, manifest, result),
            "op_types": [{"op": op, **group_totals(cs)} for op, cs in by_op_type(cycles, manifest)],
            "largest": [{"name": name, "op": op, **group_totals(cs)}
                        for (name, op), cs in largest_families(cycles, manifest)[:largest]],
            "layers": layers, "engines": engines}


def _tile_ops(info, level: str, index: int) -> int:
    if info is None:
        return 0
    ops = info.tile_ops if level == "L1" else info.l2_tile_ops
    return ops[index] if index < len(ops) else 0


def trace_events(result: TimingResult, manifest: Manifest) -> dict:
    """The run's last network pass in the Trace Event Format (JSON object form)."""
    origin = result.layers[0].start if result.layers else 0.0
    end = result.layers[-1].start + result.layers[-1].cycles if result.layers else 0.0
    events: list[dict] = []

    def meta(pid: int, tid: int | None, name: str) -> None:
        if tid is None:
            events.append({"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}})
            events.append({"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        else:
            events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}})
            events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})

    def span(pid: int, tid: int, name: str, cat: str, start: float, cycles: float, **args) -> None:
        # both ends rounded to whole nanoseconds: back-to-back events stay so in every reader
        a = round((start - origin) * 1000 / CLOCK_MHZ)
        b = max(round((start - origin + max(cycles, 0.0)) * 1000 / CLOCK_MHZ), a)
        events.append({"name": name, "cat": cat, "ph": "X", "pid": pid, "tid": tid, "ts": a / 1000, "dur": (b - a) / 1000,
                       "args": {"cycles": round(cycles, 1), "start_cycle": round(start - origin, 1), **args}})

    meta(PID_NETWORK, None, "Network")
    for tid, name in enumerate(("layers", "L1 tiles (L2 <-> L1)", "L2 tiles (L3 <-> L2)")):
        meta(PID_NETWORK, tid, name)
    meta(PID_CORES, None, "Cluster cores")
    for k in range(manifest.cores):
        meta(PID_CORES, k, f"core {k}")
    for h in result.controls:
        if h >= manifest.cores:
            meta(PID_CORES, h, f"data mover (hart {h})")
    meta(PID_DMA, None, "DMA engines")
    for e, name in enumerate(DMA_ENGINE_NAMES):
        meta(PID_DMA, e, f"{name} DMA")

    names = {}
    for c in layer_cycles(result):
        info = _layer_info(manifest, c.layer)
        names[c.layer] = info["name"]
        span(PID_NETWORK, 0, info["name"] + (FINISH_TITLE if c.finish else ""), "layer", c.start, c.cycles,
             op=info["op"], kernel=info["kernel"], compute=c.compute, exposed_dma=c.exposed_dma, overhead=c.overhead)
    for k, lt in tile_times(result).items():
        for t in lt.tiles:
            tid = 1 if t.level == "L1" else 2
            base = f"{names.get(k, k)} tile {t.index}"
            span(PID_NETWORK, tid, f"{base} load", "tile", t.start, t.input, dma_issue=t.dma_issue[0],
                 dma_wait=t.dma_wait[0])
            span(PID_NETWORK, tid, f"{base} kernel", "tile", t.start + t.input, t.kernel)
            span(PID_NETWORK, tid, f"{base} store", "tile", t.start + t.input + t.kernel, t.output,
                 dma_issue=t.dma_issue[1], dma_wait=t.dma_wait[1])
    layer_at = [(c.start, c.start + c.cycles, names[c.layer]) for c in layer_cycles(result)]

    def owner(t: float) -> str:
        return next((name for a, b, name in layer_at if a <= t < b), "")

    forks = [f for f in result.forks if origin <= f.start < end]
    for f in forks:
        for k, busy in enumerate(f.core_cycles):
            dma = f.core_dma_cycles[k] if k < len(f.core_dma_cycles) else 0.0
            if f.phases == 1:   # no barrier inside: the core works from the dispatch on, then waits for the join
                start = min(f.start + result.model.fork_cycles, f.start + f.cycles)
                length = min(busy + dma, f.start + f.cycles - start)
            else:               # its work is spread over the phases: the whole fork
                start, length = f.start, f.cycles
            span(PID_CORES, k, f"{owner(f.start)} (fork)", "fork", start, length, busy=busy, dma=dma,
                 fork_cycles=f.cycles, idle=max(f.cycles - busy - dma, 0.0))
    in_fork = [(f.start, f.start + f.cycles) for f in forks]
    for w in result.waits:
        if w.hart in result.controls and w.stall > 0 and origin <= w.time < end and \
                not any(a <= w.time < b for a, b in in_fork):
            span(PID_CORES, w.hart, "DMA wait", "dma", w.time, w.stall, engine=DMA_ENGINE_NAMES[w.engine])
    for d in result.dma:
        if not origin <= d.issue < end:
            continue
        if d.hart in result.controls and not any(a <= d.issue < b for a, b in in_fork):
            span(PID_CORES, d.hart, "DMA issue", "dma", d.issue, d.issue_cycles, engine=d.engine_name)
        span(PID_DMA, d.engine, f"{d.src}->{d.dst} {d.bytes} B", "dma", d.start - d.setup, d.busy, bytes=d.bytes,
             rows=d.rows, layer=owner(d.issue), issued_by=f"core {d.hart}")
    return {"traceEvents": events, "displayTimeUnit": "ns",
            "otherData": {"clock_mhz": CLOCK_MHZ, "time": f"microseconds at {CLOCK_MHZ:g} MHz of modelled cycles",
                          "network": manifest.source, "platform": manifest.platform}}


def write_profile_files(folder: Path, result: TimingResult, manifest: Manifest, level: str | None = None,
                        name: str = "") -> tuple[Path, Path, Path]:
    """Write profile.json, trace.json and profile.html into ``folder``; their paths. ``name``:
    the network's name in them (default: the manifest's source file)."""
    folder = Path(folder)
    result = per_iteration(result, manifest)
    profile = profile_data(result, manifest, level, name)
    paths = (folder / "profile.json", folder / "trace.json", folder / "profile.html")
    paths[0].write_text(json.dumps(profile, indent=1) + "\n")
    paths[1].write_text(json.dumps(trace_events(result, manifest)) + "\n")
    paths[2].write_text(profile_chart_html(profile))
    return paths
