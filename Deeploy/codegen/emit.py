"""Code generation: render Network.c / Network.h / CMakeLists.txt of a bound, planned graph
and copy the kernel sources it uses, giving a self-contained C project."""

from __future__ import annotations

import functools
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from mako.template import Template

from Deeploy.binding import Layer
from Deeploy.codegen.api import NetworkApi, io_quantizations
from Deeploy.codegen.buffers import Buf, BufferNames, stream_buffer
from Deeploy.codegen.calls import render_call
from Deeploy.codegen.describe import describe_network, idle_reason
from Deeploy.codegen.project_files import write_platform_files
from Deeploy.codegen.rolled import roll_regions, stream_code
from Deeploy.codegen.tiled import TiledCode, tiled_layer_code
from Deeploy.codegen.c_text import c_floats, comment_text
from Deeploy.ir.dtypes import BFLOAT16
from Deeploy.ir.graph import Graph
from Deeploy.manifest import MANIFEST_FILE, Manifest
from Deeploy.memory.planner import MemoryPlan
from Deeploy.platform import Platform

__all__ = ["emit_project", "EmitSummary", "c_initializer"]

_TEMPLATES = Path(__file__).parent / "templates"


@functools.lru_cache(maxsize=None)
def _template(text: str) -> Template:
    return Template(text, strict_undefined=True)


def _file_template(name: str) -> Template:
    return _template((_TEMPLATES / name).read_text())


_ROW = ",".join(["%d"] * 32)
_ESCAPES = tuple(f"\\x{b:02x}" for b in range(256))


def c_initializer(values: np.ndarray) -> str:
    """The initializer of a C array of ``values``: byte-sized integers as a string literal (64
    bytes to a line; the compiler reads it far faster than a list of numbers), other types as a
    braced list of 32 integers (16 floats) to a line."""
    if values.dtype == BFLOAT16.numpy:   # bfloat16 arrays as their bit patterns
        values = values.view(np.uint16)
    if values.dtype.kind in "iu" and values.dtype.itemsize == 1:
        data = values.reshape(-1).view(np.uint8).tobytes()
        rows = ['"' + "".join(map(_ESCAPES.__getitem__, data[i:i + 64])) + '"' for i in range(0, len(data), 64)]
        return "\n    ".join(rows or ['""'])
    if values.dtype.kind == "f":
        flat = c_floats(values) or ["0.0f"]
        rows = [",".join(flat[i:i + 16]) for i in range(0, len(flat), 16)]
        return "{\n    " + ",\n    ".join(rows) + "\n}"
    flat = values.reshape(-1).tolist() or [0]
    full = len(flat) - len(flat) % 32   # full rows formatted 32 at a time (printf-style: the fast path)
    rows = [_ROW % tuple(flat[i:i + 32]) for i in range(0, full, 32)]
    if full < len(flat):
        rows.append(",".join(map(str, flat[full:])))
    return "{\n    " + ",\n    ".join(rows) + "\n}"


@dataclass(frozen=True)
class EmitSummary:
    """What was generated: for the compile summary."""

    layers: int
    kernels: tuple[str, ...]
    const_bytes: int
    arena_size: int
    lower_bound: int
    io_bytes: int
    manifest: Manifest | None = None
    notes: tuple[str, ...] = ()   # what became of the graph's regions


def _tile_context(platform: Platform, tiling) -> dict:
    """Names and levels of the tile arena and the staging arena (None when nothing is tiled)."""
    if tiling is None:
        return dict(tile_arena=None, staging_arena=None, outer_level=None, tile_level=None, staging_level=None)
    tiles = platform.tiling
    return dict(tile_arena=f"deeploy_{tiles.tiles.level.lower()}_arena",
                staging_arena=f"deeploy_{tiles.tiles.source.lower()}_staging", outer_level=tiles.staging.source,
                tile_level=platform.level(tiles.tiles.level), staging_level=platform.level(tiles.tiles.source))


def _stream_buffers(plan: MemoryPlan, platform: Platform) -> list[tuple]:
    """(C name, bytes, level) of the streamed double buffers outside the arena's level."""
    return [(stream_buffer(name), size, platform.level(name)) for name, size in sorted(plan.stream_buffers.items())]


def _arena_levels(plan: MemoryPlan, arena: str, arenas: dict, tiling, platform: Platform) -> list[tuple]:
    """Per memory level: (level, total bytes, [(C name, offset, bytes, level)]): the arenas of one
    level packed at 16-byte aligned offsets, as one user-provided arena holds them."""
    parts = [(arena, max(1, plan.arena_size), plan.level)] + _stream_buffers(plan, platform)
    if tiling is not None:
        parts += [(arenas["tile_arena"], max(1, tiling.l1_size), arenas["tile_level"]),
                  (arenas["staging_arena"], max(1, tiling.staging_size), arenas["staging_level"])]
    levels: dict[str, list] = {}
    for ident, size, level in parts:
        inside = levels.setdefault(level.name, [])
        offset = (inside[-1][1] + inside[-1][2] + 15) // 16 * 16 if inside else 0
        inside.append((ident, offset, size, level))
    return [(name, inside[-1][1] + inside[-1][2], inside) for name, inside in levels.items()]


def emit_project(graph: Graph, layers: list[Layer], plan: MemoryPlan, platform: Platform,
                 out_dir: Path, source: str, cores: int = 1, tiling=None, api: NetworkApi | None = None,
                 stages=None, quantization: list[str] | None = None) -> EmitSummary:
    """``tiling``: a ``Deeploy.tiling.network.TiledNetwork`` (layers run tile by tile out of L1);
    graph inputs and outputs live in ``plan.data_level``, each constant in its placement's level.
    ``api``: the exported C names (default: InitNetwork, RunNetwork, DeeployNetwork_*).
    ``stages``: the compile's stage timer (``compiler.Stages``), told when the texts are rendered.
    ``quantization``: the graph inputs' and outputs' quantization lines (``api.io_quantizations`` of
    the graph as loaded; default: of ``graph``)."""
    api = api or NetworkApi()
    arena = f"deeploy_arena_{plan.level.name}"
    names = BufferNames(graph, plan, arena, api.prefix)
    arenas = _tile_context(platform, tiling)
    rolled = roll_regions(graph, layers, plan, names, tiling, arenas)
    engine = platform.tiling.stream_engine if platform.tiling is not None else ""
    stream_defs, stream_at, stream_blocks = stream_code(plan, names, engine, rolled) if plan.streams else ([], {}, [])
    tiled, finish = {}, {}
    if tiling is not None:
        # no overlaps or prefetches in a rolled region: the tiler leaves regions alone
        overlaps, ahead = tiling.overlaps, tiling.prefetches
        tiled = {k: tiled_layer_code(k, layers[k], sched, graph, names, arenas["tile_arena"], arenas["staging_arena"],
                                     tiling.l1_base(k), deferred=k in overlaps.deferred,
                                     preloaded=ahead.ahead.get(k, ()),
                                     ahead=(tiling.schedules[m], tiling.l1_base(m), ahead.ahead[m])
                                     if (m := ahead.issuer.get(k)) is not None else None)
                 for k, sched in tiling.schedules.items() if k not in rolled.covered}
        # marked as its layer again: the profile charges the wait to the layer whose jobs it waits for
        finish = {r: [s for k in ks for s in (f"DEEPLOY_MARK_LAYER({k});", tiled[k].finish)]
                  for r, ks in overlaps.finish.items()}
        described = {**tiled, **{k: TiledCode("", m) for k, m in rolled.tiled_manifest.items()}}
    calls, idle = [], {}
    for k, layer in enumerate(layers):
        in_tiles = k in tiled or k in rolled.tiled_manifest
        reason = None if in_tiles else idle_reason(layer, graph, plan)
        if reason is not None:
            idle[k] = reason
        call = "" if in_tiles or k in rolled.covered else f"/* {reason} */" if reason else render_call(layer, names)
        title = comment_text(f"{k}: {layer.node.op} '{layer.node.name}' -> {layer.variant}")
        calls.append((title, call, reason is None))

    # each variable takes its next value at the end of a run
    updates = [(names.address(var), names.buf(nxt).ptr, graph.tensors[var].nbytes) for var, nxt in graph.state.items()]
    constants, variables, const_bytes = [], [], 0
    for t in sorted(graph.constants(), key=lambda t: t.name):
        if t.name in names.referenced:   # a rendered call or tile table refers to it
            if t.name in graph.state:   # initialised data of the program, updated by every run
                variables.append((names.constant_ident(t.name), t.dtype.ctype, t.size, c_initializer(t.value)))
                continue
            attr = platform.level(plan.placements[t.name].level).const_attr   # L3 if moved there to fit --l2
            constants.append((names.constant_ident(t.name), t.dtype.ctype, t.size, c_initializer(t.value), attr))
            const_bytes += t.nbytes
    for region in rolled.regions.values():
        for ident, dtype, size, values, level in region.stacks:
            constants.append((ident, dtype.ctype, size, c_initializer(values), platform.level(level).const_attr))
            const_bytes += size * dtype.nbytes
    for ident, size, values, level in stream_blocks:
        constants.append((ident, "uint8_t", size, c_initializer(values), platform.level(level).const_attr))
        const_bytes += size

    instances = {}
    for layer in layers:
        instances.setdefault(layer.variant, (layer.variant, layer.kernel.source, layer.type_args))
    inputs: list[Buf] = [names.buf(n) for n in graph.inputs]
    outputs: list[Buf] = [names.buf(n) for n in graph.outputs]
    ctx = dict(source=comment_text(source), comment=comment_text, platform=platform.name,
               # the cluster runtime is used: a layer runs forked, or a tile loop forks its tiles
               forked=any(layer.engine.forked or layer.engine.runtime for layer in layers) or bool(tiled),
               tiles_used=bool(tiled) or bool(rolled.tiled_manifest),
               runtimes=sorted({layer.engine.runtime for layer in layers if layer.engine.runtime}),
               level=plan.level, cores=cores,
               const_level=plan.data_level, io_level=plan.data_level, tiled=tiled,
               l1_size=tiling.l1_size if tiling else 0, staging_size=tiling.staging_size if tiling else 0,
               **arenas,
               layers=layers, finish=finish, constants=constants, variables=variables, updates=updates,
               const_bytes=const_bytes, arena=arena, arena_size=plan.arena_size,
               lower_bound=plan.lower_bound, inputs=inputs, outputs=outputs,
               instances=sorted(instances.values()), calls=calls, api=api,
               rolled=rolled.regions, rolled_skip=rolled.covered, stream_defs=stream_defs, stream_at=stream_at,
               arena_levels=_arena_levels(plan, arena, arenas, tiling, platform),
               stream_buffers=_stream_buffers(plan, platform),
               quantization=quantization or io_quantizations(graph),
               cmake_platform=platform.cmake_platform, linker_script=platform.linker_script is not None,
               run_command=platform.run_command(platform.memory, "$<TARGET_FILE:deeploy_test>", "${NUM_CORES}")
               if platform.run_command else ["$<TARGET_FILE:deeploy_test>"])

    texts = {name: _file_template(f"{name}.mako").render(**ctx) for name in ("Network.c", "Network.h", "CMakeLists.txt")}
    manifest = describe_network(graph, layers, plan, platform, source, cores, idle, names.referenced | rolled.stacked(), tiling,
                                described if tiling is not None else {}, unmarked=rolled.unmarked(),
                                loops=rolled.loops())
    texts[MANIFEST_FILE] = manifest.to_json()
    if api.header:
        texts[api.header] = f'/* Generated by Deeploy: the {api.name} network\'s interface. */\n#include "Network.h"\n'

    if stages is not None:
        stages("codegen")
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (out_dir / name).write_text(text)
    kernel_out = out_dir / "kernels"
    kernel_out.mkdir(exist_ok=True)
    for kernel_dir in platform.kernel_dirs:  # sources may include each other: copy all
        for path in sorted(kernel_dir.glob("*")):  # a runtime-only library has none
            if path.is_file():
                shutil.copyfile(path, kernel_out / path.name)
        for header in sorted((kernel_dir.parent / "inc").glob("*.h")):  # runtime interface
            (out_dir / "include").mkdir(exist_ok=True)
            shutil.copyfile(header, out_dir / "include" / header.name)
    write_platform_files(platform, out_dir)
    return EmitSummary(len(layers), tuple(sorted(instances)), const_bytes, plan.arena_size,
                       plan.lower_bound, sum(b.nbytes for b in inputs + outputs), manifest, tuple(rolled.notes))
