"""The roofline report (``--roofline``): per layer what it computes, what it moves, how long it
takes and the roofs it runs under.

- **ops**: the op's ``OpDef.cost`` (a MAC counts 2 ops; elementwise and other ops count their
  arithmetic per output value), as ``deeploy analyze`` reports them;
- **bytes per memory level**: tiled, replayed from the tile schedule's DMA transfers
  (``traffic.py``: L2 <-> L1 tiles, L3 <-> L2 staging); untiled, the bytes of its inputs and
  outputs, each counted at the level the memory plan placed it in;
- **arithmetic intensity**: ops per byte of the level whose roof is the lowest (the binding one);
- **cycles**: the layer's modelled cycles from the profile of a run (``cycles="profile"``) or, for
  a build that did not run, the tiler's cost model (``cycles="estimate"``: the chosen tiling's
  modelled cycles; untiled, the model's compute cycles of the whole layer);
- **roofs**: the engine's peak ops per cycle and each level's bandwidth, from the target's
  ``roofs`` module (``roofs.py``); the roof of a layer is ``min(peak, intensity x bandwidth)``
  over the levels it moves data from. Achieved ops per cycle is ``ops / cycles``.

For each repeated region of the graph (``Graph.regions``, see ``Deeploy/ir/region.py``) the
report adds the bandwidth streaming its per-iteration parameters needs (bytes of one iteration's
parameters per cycle of one iteration's layers) against what L3 provides."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

from Deeploy.analysis.roofs import Roof, Roofs
from Deeploy.analysis.traffic import schedule_traffic
from Deeploy.tiling.dma_plan import first_loads
from Deeploy.ir.region import InputKind, body_inputs
from Deeploy.ops import get_op

# A layer is "overhead"-bound when neither roof explains its cycles: its profile labels at least
# OVERHEAD_BOUND of them overhead (the code around its kernel: set-up, tile loop), or it reaches
# less than ROOF_EXPLAINS of its roof (min(compute, memory)), i.e. takes more than 4 times the cycles
# the binding roof needs (instructions other than the peak's: loads, address arithmetic, loop
# control, requantisation; the int8 GEMM kernel reaches about half its compute roof).
OVERHEAD_BOUND = 0.5
ROOF_EXPLAINS = 0.25

__all__ = ["OVERHEAD_BOUND", "ROOF_EXPLAINS", "LayerWork", "LayerPoint", "RegionStream", "Roofline", "layer_work", "build_roofline", "format_roofline",
           "spread_iterations"]


@dataclass(frozen=True)
class LayerWork:
    """What a layer does, decided at compile time (no cycles yet)."""

    index: int
    name: str
    op: str
    engine: str
    tiled: bool
    ops: int
    bytes: dict[str, int]
    peak: Roof
    bandwidth: dict[str, Roof]
    estimate: float | None


@dataclass(frozen=True)
class LayerPoint:
    """A layer on the roofline. ``level``: the level of the binding memory roof (None: it moves
    nothing); ``roof``: ``min(peak, intensity x bandwidth)``; ``bound``: which of the two, or
    "overhead" when neither explains its cycles: its profile labels at least ``OVERHEAD_BOUND`` of
    them overhead, or it reaches less than ``ROOF_EXPLAINS`` of ``roof``."""

    index: int
    name: str
    op: str
    engine: str
    ops: int
    bytes: dict[str, int]
    level: str | None
    intensity: float | None
    cycles: float
    achieved: float
    peak: float
    peak_name: str
    bandwidth: float | None
    bandwidth_name: str | None
    roof: float
    bound: str

    @property
    def of_roof(self) -> float:
        return self.achieved / self.roof if self.roof > 0 else 0.0


@dataclass(frozen=True)
class RegionStream:
    """A repeated region: its iterations and body size (layers of one iteration), per iteration
    its parameters' bytes and its layers' cycles, the bandwidth streaming the parameters needs
    and the one L3 provides."""

    name: str
    iterations: int
    body_layers: int
    parameter_bytes: int
    body_cycles: float
    needed: float
    available: float
    available_name: str

    @property
    def share(self) -> float:
        return self.needed / self.available if self.available else math.inf


@dataclass
class Roofline:
    platform: str
    source: str
    cores: int
    tiled: bool
    cycles: str                                    # "profile" or "estimate"
    layers: list[LayerPoint]
    peaks: dict[str, Roof]                         # every engine roof drawn, by name
    bandwidths: dict[str, Roof]                    # every memory roof drawn, by name
    regions: list[RegionStream] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)     # layers without arithmetic (not plotted)
    no_cycles: list[str] = field(default_factory=list)   # layers with arithmetic but no cycles (not plotted)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        data = asdict(self)
        for point, raw in zip(self.layers, data["layers"]):
            raw["of_roof"] = point.of_roof
        for region, raw in zip(self.regions, data["regions"]):
            raw["share"] = region.share
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"


def _estimate(layer, graph, sched, platform, cores: int) -> float | None:
    """The tiler's modelled cycles of a layer (see the module docstring)."""
    if sched is not None:
        if sched.l2 is None:
            return float(sched.l1.total_cycles)
        return float(sched.l1.total_cycles * sched.l2_tiles() + sched.l2.dma_cycles + sched.l2.overhead_cycles)
    if platform.tiling is None:
        return None
    from dataclasses import replace

    from Deeploy.errors import DeeployError
    from Deeploy.tiling.costs import compute_cycles
    from Deeploy.tiling.families import RuleContext, layer_spec
    from Deeploy.tiling.network import with_kernel_cycles
    params = replace(platform.tiling.tiles, cores=cores)
    try:
        spec = with_kernel_cycles(layer_spec(layer.node, graph, RuleContext(layer.scratch)), layer.node, graph, params)
    except DeeployError:
        return None
    return float(compute_cycles(spec, {d.name: d.size for d in spec.dims}, params))


def layer_work(result, platform, roofs: Roofs) -> list[LayerWork]:
    """Every running layer of a ``CompileResult`` for ``platform`` (its ``Platform``): ops, bytes
    per level, roofs and the tiler's estimate of its cycles."""
    manifest, graph = result.manifest, result.graph
    schedules = result.tiled.schedules if result.tiled else {}
    tiling = platform.tiling
    loops = {t.index: t.loop for t in manifest.tiles}
    out = []
    for k, (layer, info) in enumerate(zip(result.layers, manifest.layers)):
        if not info.runs:
            continue
        node = layer.node
        ins = [graph.tensors[i] if i else None for i in node.inputs]
        outs = [graph.tensors[o] for o in node.outputs if o]
        ops = int(get_op(node).cost(node.params, ins, outs).ops)
        sched = schedules.get(k)
        if sched is not None:
            ahead = result.tiled.prefetches
            nxt = ahead.issuer.get(k)
            handoff = first_loads(schedules[nxt], ahead.ahead[nxt]) if nxt is not None else ()
            moved = schedule_traffic(sched, tiling.tiles.source, tiling.staging.source, loops[k],
                                     ahead.ahead.get(k, ()), handoff)
        else:
            moved = {}
            for t in [t for t in ins if t is not None] + outs:
                level = result.plan.placements[t.name].level
                moved[level] = moved.get(level, 0) + t.nbytes
        bandwidth = {level: roofs.bandwidth(level, sched is not None, layer) for level in moved}
        out.append(LayerWork(k, node.name, node.op, layer.engine.name, sched is not None, ops, moved,
                             roofs.engine_peak(layer, graph, manifest.cores), bandwidth,
                             _estimate(layer, graph, sched, platform, manifest.cores)))
    return out


def _point(w: LayerWork, cycles: float, overhead: float = 0.0) -> LayerPoint:
    best = None   # (memory roof, level)
    for level, nbytes in w.bytes.items():
        if nbytes > 0:
            roof = w.ops / nbytes * w.bandwidth[level].value
            if best is None or roof < best[0]:
                best = (roof, level)
    level = best[1] if best else None
    memory_roof = best[0] if best else math.inf
    roof = min(w.peak.value, memory_roof)
    bound = "compute" if w.peak.value <= memory_roof else "memory"
    if overhead >= OVERHEAD_BOUND * cycles or w.ops / cycles < ROOF_EXPLAINS * roof:
        bound = "overhead"
    return LayerPoint(w.index, w.name, w.op, w.engine, w.ops, dict(w.bytes), level,
                      w.ops / w.bytes[level] if level else None, cycles, w.ops / cycles, w.peak.value, w.peak.name,
                      w.bandwidth[level].value if level else None, w.bandwidth[level].name if level else None,
                      roof, bound)


def region_streams(graph, points: list[LayerPoint], l3: Roof) -> tuple[list[RegionStream], list[str]]:
    """The weight-streaming bandwidth of every region of ``graph`` (module docstring), and notes
    for regions that cannot be measured (no longer matching the graph, or no cycles)."""
    streams, notes = [], []
    for region in graph.regions:
        try:
            inputs = body_inputs(graph, region)
        except ValueError as exc:
            notes.append(f"region '{region.name}' not reported: {exc}")
            continue
        params = sum(b.dtype.nbytes * graph.tensors[b.tensors[0]].size for b in inputs
                     if b.kind is InputKind.PER_ITERATION)
        names = region.node_names()
        body = [p for p in points if p.name in names]
        cycles = sum(p.cycles for p in body) / region.iterations
        if cycles <= 0:
            notes.append(f"region '{region.name}' not reported: none of its layers has cycles")
            continue
        streams.append(RegionStream(region.name, region.iterations, region.body_size,
                                    params, cycles, params / cycles, l3.value, l3.name))
    return streams, notes


def spread_iterations(graph, work: list[LayerWork], runs: dict[int, list[tuple[float, float]]]) -> dict[int, float]:
    """Cycles per layer index from the (start, cycles) occurrences of each marked layer. A rolled
    region runs its body under the first iteration's markers, so the layers at one body position
    share their occurrences: when the counterparts of a position occur once per iteration in
    total, the occurrences in time order are the iterations in order. Anything else is summed
    per index."""
    index = {w.name: w.index for w in work}
    cycles = {k: sum(c for _, c in occ) for k, occ in runs.items()}
    for region in graph.regions:
        for position in range(region.body_size):
            ks = [index.get(instance[position]) for instance in region.instances]
            if None in ks:
                continue
            pooled = sorted(o for k in set(ks) for o in runs.get(k, ()))
            if len(pooled) == region.iterations:
                for k, (_, c) in zip(ks, pooled):
                    cycles[k] = c
    return cycles


def build_roofline(result, work: list[LayerWork], roofs: Roofs,
                   runs: dict[int, list[tuple[float, float]]] | None = None,
                   overhead: dict[int, float] | None = None) -> Roofline:
    """The report of a ``CompileResult`` whose layers are ``work``, under ``roofs``, with the (start, cycles) of
    every run of each layer index (``runs``, from a profile) or else the tiler's estimates; ``overhead``:
    the share of overhead in each layer index's cycles (from a profile)."""
    manifest = result.manifest
    cycles = spread_iterations(result.graph, work, runs) if runs is not None else None
    points, skipped, no_cycles = [], [], []
    for w in work:
        c = cycles.get(w.index) if cycles is not None else w.estimate
        if w.ops == 0 or not c:
            (skipped if w.ops == 0 else no_cycles).append(w.name)
            continue
        points.append(_point(w, c, (overhead or {}).get(w.index, 0.0) * c))
    peaks = {w.peak.name: w.peak for w in work}
    bandwidths = {r.name: r for w in work for r in w.bandwidth.values()}
    l3 = roofs.bandwidth("L3", True, None)
    regions, notes = region_streams(result.graph, points, l3)
    return Roofline(manifest.platform, manifest.source, manifest.cores, result.tiled is not None,
                    "profile" if cycles is not None else "estimate", points, peaks, bandwidths, regions, skipped, no_cycles,
                    notes)


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def format_roofline(r: Roofline) -> str:
    """The report as text: one row per layer, the roofs with their derivation, the regions."""
    levels = sorted({lv for p in r.layers for lv in p.bytes})
    head = ["#", "layer", "op", "engine", "ops", *(f"{lv} B" for lv in levels), "from", "ops/B", "cycles",
            "ops/cycle", "roof", "% roof", "bound"]
    rows = [[str(p.index), p.name, p.op, p.engine, str(p.ops), *(str(p.bytes.get(lv, 0)) for lv in levels),
             p.level or "-", _num(p.intensity), _num(p.cycles), _num(p.achieved), _num(p.roof),
             f"{100 * p.of_roof:.1f}", p.bound] for p in r.layers]
    widths = [max(len(x[c]) for x in [head] + rows) for c in range(len(head))]
    left = {1, 2, 3, 5 + len(levels), len(head) - 1}
    line = lambda cells: "  ".join(c.ljust(w) if i in left else c.rjust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    what = ("modelled cycles of the run's profile" if r.cycles == "profile"
            else "cycles estimated by the tiler's cost model (not run)")
    out = [f"Roofline of {r.source} on {r.platform}, {r.cores} cores, {'tiled' if r.tiled else 'untiled'}: {what}; "
           "ops: a MAC counts 2",
           line(head), line(["-" * w for w in widths]), *map(line, rows)]
    total_ops, total_cycles = sum(p.ops for p in r.layers), sum(p.cycles for p in r.layers)
    if total_cycles:
        out.append(f"total: {total_ops} ops in {total_cycles:.0f} cycles ({total_ops / total_cycles:.3g} ops/cycle)")
    slow = [p for p in r.layers if p.bound == "overhead"]
    if slow:
        out.append(f"overhead-bound: {len(slow)} of {len(r.layers)} layers ({sum(p.cycles for p in slow):.0f} cycles) "
                   f"spend {100 * OVERHEAD_BOUND:.0f}% or more of their cycles in the code around their kernels "
                   f"(set-up, tile loops) or reach less than {100 * ROOF_EXPLAINS:.0f}% of their roofs (the profile's "
                   "summary names the cause)")
    out += [f"peak {roof.name}: {roof.value:g} ops/cycle ({roof.why})" for roof in r.peaks.values()]
    out += [f"bandwidth {roof.name}: {roof.value:g} B/cycle ({roof.why})" for roof in r.bandwidths.values()]
    for s in r.regions:
        out.append(f"region '{s.name}': {s.iterations} iterations of {s.body_layers} layers; streaming "
                   f"{s.parameter_bytes} B of parameters per iteration in {s.body_cycles:.0f} cycles needs "
                   f"{s.needed:.3g} B/cycle, {s.available_name} provides {s.available:g} B/cycle "
                   f"({100 * s.share:.1f}%)")
    for names, why in ((r.skipped, "without arithmetic"), (r.no_cycles, "without cycles (no marker ran)")):
        if names:
            out.append(f"not shown: {len(names)} layers {why} ({', '.join(names[:6])}"
                       f"{', ...' if len(names) > 6 else ''})")
    out += [f"note: {n}" for n in r.notes]
    return "\n".join(out) + "\n"
