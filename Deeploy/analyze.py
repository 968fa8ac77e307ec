"""``deeploy analyze``: what a network costs on a platform, per layer and in total, without
writing any C: the network is compiled into a temporary folder that is removed, and the report
is read from what the compiler decided (bound layers, the manifest's buffers per memory level,
the tile schedules) and from each op's cost (``OpDef.cost``: a MAC counts 2 ops)."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from Deeploy.analysis.sizes import level_peaks
from Deeploy.compiler import CompileResult, compile_graph
from Deeploy.ir.graph import Graph
from Deeploy.ir.region import InputKind, body_attributes, body_inputs
from Deeploy.ops import get_op
from Deeploy.passes.loop_rolling import LoopRolling
from Deeploy.tiling.network import TilingOptions

__all__ = ["LayerReport", "Analysis", "analyze_graph", "compile_for_report", "format_table", "format_csv"]


@dataclass(frozen=True)
class LayerReport:
    """One layer in execution order. ``ops``: arithmetic operations (a MAC counts 2);
    ``input_bytes`` / ``weight_bytes``: its non-constant / constant inputs; ``memory``: bytes
    live per memory level while it runs (every buffer of the plan live at its step, tiles
    included); ``tiles`` / ``tile_shape``: its L1 tiles and the largest tile per dimension
    (None when it runs untiled)."""

    index: int
    name: str
    op: str
    kernel: str
    engine: str
    runs: bool
    ops: int
    bytes_moved: int
    input_bytes: int
    output_bytes: int
    weight_bytes: int
    memory: dict[str, int]
    tiles: int | None = None
    tile_shape: dict[str, int] | None = None
    buffering: str | None = None
    l2_tiles: int | None = None
    note: str = ""
    region: str = ""   # loop region, iteration and body position ("loop0[3].12"), when rolled


@dataclass(frozen=True)
class LevelReport:
    """A memory level: the bytes the network may use of it (None: unbounded) and the bytes its
    buffers reach (highest offset + size), and the largest sum live at one step."""

    name: str
    capacity: int | None
    used: int
    peak: int


@dataclass
class Analysis:
    platform: str
    source: str
    cores: int
    tiled: bool
    layers: list[LayerReport]
    levels: list[LevelReport]
    totals: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    regions: list[dict] = field(default_factory=list)   # loop regions: name, iterations, body_size, inputs

    def to_dict(self) -> dict:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"


def _live(buffers, level: str, step: int) -> int:
    return sum(b.size for b in buffers if b.level == level and b.first <= step <= b.last)


def _layer_reports(result: CompileResult) -> list[LayerReport]:
    graph, manifest = result.graph, result.manifest
    levels = [lv.name for lv in manifest.levels]
    schedules = result.tiled.schedules if result.tiled else {}
    tiles = {t.index: t for t in manifest.tiles}
    in_region = {name: f"{r.name}[{i}].{k}" for r in graph.regions
                 for i, instance in enumerate(r.instances) for k, name in enumerate(instance)}
    out = []
    for k, (layer, info) in enumerate(zip(result.layers, manifest.layers)):
        node = layer.node
        ins = [graph.tensors[i] if i else None for i in node.inputs]
        outs = [graph.tensors[o] for o in node.outputs if o]
        cost = get_op(node).cost(node.params, ins, outs)
        sched, tile = schedules.get(k), tiles.get(k)
        out.append(LayerReport(
            k, node.name, node.op, layer.variant, layer.engine.name, info.runs, int(cost.ops), int(cost.bytes),
            sum(t.nbytes for t in ins if t is not None and not t.is_constant),
            sum(t.nbytes for t in outs),
            sum(t.nbytes for t in ins if t is not None and t.is_constant),
            {lv: _live(manifest.buffers, lv, k) for lv in levels},
            tile.tiles if tile else None,
            dict(zip(sched.dims, (int(n) for n in sched.l1_tile))) if sched else None,
            tile.buffering if tile else None, tile.l2_tiles if tile else None, info.note,
            in_region.get(node.name, "")))
    return out


def _region_reports(graph: Graph) -> list[dict]:
    out = []
    for r in graph.regions:
        kinds = [b.kind.value for b in body_inputs(graph, r)]
        out.append(dict(name=r.name, iterations=r.iterations, body_size=r.body_size,
                        first=r.instances[0][0], last=r.instances[0][-1],
                        inputs={k.value: kinds.count(k.value) for k in InputKind},
                        attributes=len(body_attributes(graph, r))))
    return out


def _level_reports(result: CompileResult) -> list[LevelReport]:
    buffers, peaks = result.manifest.buffers, level_peaks(result.manifest)
    out = []
    for lv in result.manifest.levels:
        used = max((b.offset + b.size for b in buffers if b.level == lv.name), default=0)
        out.append(LevelReport(lv.name, lv.size, used, peaks[lv.name]))
    return out


def compile_for_report(graph: Graph, platform: str, *, source: str = "network.onnx", cores: int | None = None,
                       tiling: TilingOptions | None = None, loop_rolling: LoopRolling | None = None,
                       platform_options: dict | None = None) -> CompileResult:
    """Compile ``graph`` (inputs typed, see ``assign_input_types``) into a temporary folder that
    is removed; what the compiler decided."""
    with tempfile.TemporaryDirectory(prefix="deeploy-analyze-") as tmp:
        return compile_graph(graph, platform, Path(tmp) / "out", source=source, cores=cores, tiling=tiling,
                             loop_rolling=loop_rolling, platform_options=platform_options)


def analyze_graph(graph: Graph, platform: str, *, source: str = "network.onnx", cores: int | None = None,
                  tiling: TilingOptions | None = None, loop_rolling: LoopRolling | None = None,
                  platform_options: dict | None = None) -> Analysis:
    """Compile ``graph`` (``compile_for_report``) and report per layer and in total (and the
    loop regions ``loop_rolling`` finds)."""
    result = compile_for_report(graph, platform, source=source, cores=cores, tiling=tiling, loop_rolling=loop_rolling,
                                platform_options=platform_options)
    layers = _layer_reports(result)
    g = result.graph
    io_names = set(g.inputs) | set(g.outputs)
    totals = dict(layers=len(layers), running_layers=sum(1 for r in layers if r.runs),
                  ops=sum(r.ops for r in layers), bytes_moved=sum(r.bytes_moved for r in layers),
                  weight_bytes=sum(t.nbytes for t in g.constants()),
                  io_bytes=sum(g.tensors[n].nbytes for n in io_names),
                  activation_arena=result.plan.arena_size,
                  tiles=sum(r.tiles or 0 for r in layers))
    return Analysis(result.manifest.platform, source, result.manifest.cores, result.tiled is not None, layers,
                    _level_reports(result), totals, list(result.notes), _region_reports(g))


def _tiles_text(r: LayerReport) -> str:
    if r.tiles is None:
        return "-"
    shape = ",".join(f"{d}={n}" for d, n in (r.tile_shape or {}).items())
    return f"{r.tiles} {r.buffering} {shape}" + (f" ({r.l2_tiles} L2)" if r.l2_tiles and r.l2_tiles > 1 else "")


def format_table(a: Analysis) -> str:
    """The report as an aligned text table, the totals and the memory levels."""
    levels = [lv.name for lv in a.levels]
    head = ["#", "layer", "op", "kernel", "engine", "ops", "in B", "out B", "weights B", *(f"{n} B" for n in levels),
            "tiles"]
    rows = [[str(r.index), r.name, r.op, r.kernel, r.engine if r.runs else f"({r.engine}: idle)", str(r.ops),
             str(r.input_bytes), str(r.output_bytes), str(r.weight_bytes), *(str(r.memory[n]) for n in levels),
             _tiles_text(r)] for r in a.layers]
    t = a.totals
    rows.append(["", "total", "", "", f"{t['running_layers']} of {t['layers']} run", str(t["ops"]), "", "",
                 str(t["weight_bytes"]), *("" for _ in levels), str(t["tiles"]) if a.tiled else "-"])
    widths = [max(len(x[c]) for x in [head] + rows) for c in range(len(head))]
    numeric = {0, 5, 6, 7, 8, *range(9, 9 + len(levels))}
    line = lambda cells: "  ".join(c.rjust(w) if i in numeric else c.ljust(w)  # noqa: E731
                                   for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    cores = f"{a.cores} core{'s' if a.cores != 1 else ''}"
    out = [f"{a.source} on {a.platform}, {cores}, {'tiled' if a.tiled else 'untiled'} "
           f"(ops: a MAC counts 2; memory: bytes live per level while the layer runs)",
           line(head), line(["-" * w for w in widths]), *map(line, rows[:-1]), line(["-" * w for w in widths]),
           line(rows[-1]), ""]
    out.append(f"ops {t['ops']}, weights {t['weight_bytes']} B, inputs+outputs {t['io_bytes']} B, "
               f"activation arena {t['activation_arena']} B")
    for lv in a.levels:
        cap = f" of {lv.capacity} B" if lv.capacity is not None else ""
        out.append(f"{lv.name}: {lv.used} B used{cap} (peak live {lv.peak} B)")
    for r in a.regions:
        kinds = ", ".join(f"{n} {k.replace('_', '-')}" for k, n in r["inputs"].items())
        out.append(f"loop region {r['name']}: {r['iterations']} iterations of a {r['body_size']}-node body "
                   f"('{r['first']}' .. '{r['last']}'); body inputs: {kinds}")
    return "\n".join(out) + "\n"


def format_csv(a: Analysis) -> str:
    """One row per layer (memory per level as columns ``mem_<level>``), then a ``total`` row."""
    levels = [lv.name for lv in a.levels]
    cols = ["index", "name", "op", "kernel", "engine", "runs", "ops", "bytes_moved", "input_bytes", "output_bytes",
            "weight_bytes", *(f"mem_{n}" for n in levels), "tiles", "tile_shape", "buffering", "l2_tiles"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in a.layers:
        shape = " ".join(f"{d}={n}" for d, n in r.tile_shape.items()) if r.tile_shape else ""
        w.writerow([r.index, r.name, r.op, r.kernel, r.engine, int(r.runs), r.ops, r.bytes_moved, r.input_bytes,
                    r.output_bytes, r.weight_bytes, *(r.memory[n] for n in levels),
                    "" if r.tiles is None else r.tiles, shape, r.buffering or "", r.l2_tiles or ""])
    t = a.totals
    w.writerow(["", "total", "", "", "", t["running_layers"], t["ops"], t["bytes_moved"], "", "", t["weight_bytes"],
                *("" for _ in levels), t["tiles"] if a.tiled else "", "", "", ""])
    return buf.getvalue()
