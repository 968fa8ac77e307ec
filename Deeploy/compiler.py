"""The compilation pipeline, one direction:
ONNX -> frontend (load, types) -> lowering passes -> binding -> memory plan -> C project."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

import numpy as np

from Deeploy.errors import DeeployError
from Deeploy.binding import Layer, bind, check_supported
from Deeploy.codegen.api import NetworkApi
from Deeploy.codegen.emit import EmitSummary, emit_project
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import DType
from Deeploy.ir.graph import Graph
from Deeploy.ir.onnx_export import save_snapshot
from Deeploy.manifest import Manifest
from Deeploy.memory.planner import MemoryPlan, plan_memory
from Deeploy.passes.graph_outputs import copy_shared_outputs
from Deeploy.passes.loop_rolling import LoopRolling, roll_loops
from Deeploy.passes.manager import run_passes
from Deeploy.passes.region_schedule import schedule_regions, stack_types
from Deeploy.passes.region_entry import copy_region_entries
from Deeploy.targets import get_platform
from Deeploy.tiling.network import (TiledNetwork, TilingOptions, check_level_limits, spill_constants, staging_budget,
                                     tile_network)

__all__ = ["CompileResult", "compile_network", "compile_graph", "write_atomically", "OUTPUT_MARK"]


@dataclass
class CompileResult:
    """The compiled network and what was decided on the way."""

    graph: Graph
    layers: list[Layer]
    plan: MemoryPlan
    summary: EmitSummary
    notes: list[str] = field(default_factory=list)
    tiled: TiledNetwork | None = None

    @property
    def manifest(self) -> Manifest:
        """What was generated, as data (also ``manifest.json`` in the output folder)."""
        return self.summary.manifest


OUTPUT_MARK = ".deeploy-output"
# What older versions wrote without the mark: a folder holding only these is also ours.
_GENERATED_NAMES = {"Network.c", "Network.h", "CMakeLists.txt", "tiling.json", "manifest.json", "kernels", "include",
                    "cmake", "runtime", "link.ld", "main.c", "testdata.h"}


def _check_replaceable(out_dir: Path) -> None:
    """Refuse an output path whose replacement could destroy anything the compiler did not write."""
    if not out_dir.exists() and not out_dir.is_symlink():
        return
    if not out_dir.is_dir() or out_dir.is_symlink():
        raise DeeployError(f"output '{out_dir}' exists and is not a folder; name a new folder "
                           "(existing files are never overwritten)")
    if Path.cwd().resolve().is_relative_to(out_dir.resolve()):
        raise DeeployError(f"output folder '{out_dir}' is the working directory or contains it; "
                           "name a new folder, e.g. -o out")
    entries = {e.name for e in out_dir.iterdir()}
    if entries and OUTPUT_MARK not in entries and not entries <= _GENERATED_NAMES:
        shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
        raise DeeployError(f"output folder '{out_dir}' holds files the compiler did not write ({shown}); "
                           "name a new or empty folder (only folders it created are replaced)")


def _os_error(exc: OSError, what: str, path: Path) -> DeeployError:
    reason = {PermissionError: "permission denied", FileExistsError: "a file is in the way",
              NotADirectoryError: "a file is in the way"}.get(type(exc), exc.strerror or str(exc))
    return DeeployError(f"cannot {what} '{path}': {reason}")


def write_atomically(out_dir: Path, fill: Callable[[Path], object]):
    """Run ``fill`` on a fresh temporary folder beside ``out_dir`` and move it into place only
    if ``fill`` succeeds, so a failed compilation never leaves a half-written folder. Only a
    folder the compiler created (it carries ``OUTPUT_MARK``) or an empty one is replaced."""
    out_dir = Path(out_dir).absolute()
    _check_replaceable(out_dir)
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as exc:
        raise _os_error(exc, "create the output folder", out_dir) from None
    old = None
    try:
        result = fill(tmp)
        (tmp / OUTPUT_MARK).write_text("Written by deeploy; the folder is replaced on the next compile.\n")
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old.", dir=out_dir.parent))
            os.replace(out_dir, old / "x")
        try:
            os.replace(tmp, out_dir)
        except OSError:
            if old is not None:
                os.replace(old / "x", out_dir)
            raise
        return result
    except OSError as exc:
        raise _os_error(exc, "replace the output folder", out_dir) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)


def _emit(folder: Path, extra_files, graph: Graph, layers, plan, target, source, cores, tiled=None,
          api: NetworkApi | None = None) -> EmitSummary:
    summary = emit_project(graph, layers, plan, target, folder, source, cores, tiled, api)
    if extra_files is not None:
        extra_files(graph, folder)
    return summary


def compile_network(onnx_path: str | Path, platform: str, out_dir: str | Path, *,
                    input_values: dict[str, np.ndarray] | None = None,
                    input_types: dict[str, DType] | None = None,
                    snapshot_dir: str | Path | None = None,
                    cores: int | None = None, tiling: TilingOptions | None = None,
                    log: Callable[[str], None] | None = None) -> CompileResult:
    """Compile ``onnx_path`` for ``platform`` into the C project folder ``out_dir``.

    ``input_values`` (sample inputs by name) decide the integer types of FLOAT-declared inputs.
    Snapshots of the graph after each stage go to ``snapshot_dir`` if given.
    """
    graph = load_onnx(onnx_path)
    notes = assign_input_types(graph, input_values, input_types)
    result = compile_graph(graph, platform, out_dir, source=Path(onnx_path).name,
                           snapshot_dir=snapshot_dir, cores=cores, tiling=tiling, log=log)
    result.notes[:0] = notes
    return result


def compile_graph(graph: Graph, platform: str, out_dir: str | Path, *, source: str = "network.onnx",
                  snapshot_dir: str | Path | None = None, cores: int | None = None,
                  tiling: TilingOptions | None = None,
                  log: Callable[[str], None] | None = None,
                  extra_files: Callable[[Graph, Path], None] | None = None,
                  name: str | None = None, platform_options: dict | None = None,
                  loop_rolling: LoopRolling | None = None) -> CompileResult:
    """Compile a loaded graph whose inputs already have types (see ``assign_input_types``).
    ``cores``: cluster cores the code will run on (default: the platform's maximum).
    ``tiling``: run every layer tile by tile out of L1 (cluster platforms with an L1 level).
    ``extra_files(compiled graph, folder)`` adds files to the output folder before it is moved
    into place (e.g. a testbench). ``name``: prefix of the exported C symbols (``NetworkApi``).
    ``platform_options``: the platform's own options (its ``configure``), e.g. ``{"no_npu_for":
    [...], "wmem_size": n}`` for Siracusa_w_neureka. ``loop_rolling``: record the repeated blocks
    it asks for as regions of the graph (``passes/loop_rolling.py``), one note per region."""
    api = NetworkApi(name)
    target = get_platform(platform)
    if platform_options:
        if target.configure is None:
            raise DeeployError(f"platform {target.name} takes no options (got {', '.join(sorted(platform_options))})")
        target = target.configure(**platform_options)
    cores = target.max_cores if cores is None else cores
    if not 1 <= cores <= target.max_cores:
        raise DeeployError(f"platform {target.name} has 1 to {target.max_cores} cores, got {cores}")
    if tiling is not None and target.tiling is None:
        raise DeeployError(f"platform {target.name} cannot tile (it has no L1 tiling parameters): drop --l1, --l2, "
                           f"--defaultMemLevel and --doublebuffer, or choose a platform that tiles (e.g. Siracusa)")
    if tiling is not None:
        check_level_limits(tiling, target.memory)
    check_supported(graph, target)
    infer_graph(graph)
    graph.verify()   # later stages key layers by node name: a graph built in Python may repeat one
    snapshots = Path(snapshot_dir) if snapshot_dir else None
    if snapshots:
        save_snapshot(graph, snapshots / "frontend.onnx")
    graph = run_passes(graph, (*target.passes, copy_shared_outputs), log)
    graph, rolled = roll_loops(graph, loop_rolling, log)
    graph = stack_types(schedule_regions(graph))   # each region can run as a loop over one body
    if tiling is not None and target.tiling is not None and tiling.data_level != target.tiling.tiles.source:
        copy_region_entries(graph, log)   # inputs outside the arena's level: every iteration alike
    if snapshots:
        save_snapshot(graph, snapshots / "middleware.onnx")
    layers = bind(graph, target, cores)
    if snapshots:
        save_snapshot(graph, snapshots / "backend_post_binding.onnx",
                      {layer.node.name: {"kernel": layer.variant, "engine": layer.engine.name}
                       for layer in layers})
    if tiling is None:
        plan = plan_memory(graph, layers, target.level(target.default_level))
        notes = target.place_weights(graph, layers, plan, target, None, cores, log) if target.place_weights else []
        summary = write_atomically(Path(out_dir), lambda tmp: _emit(
            tmp, extra_files, graph, layers, plan, target, source, cores, api=api))
        return CompileResult(graph, layers, plan, summary, rolled + notes + list(summary.notes))
    into = target.stream_into(graph, layers, target) if target.stream_into else None

    def planned(stream: bool, levels: dict[str, str] | None = None) -> MemoryPlan:
        return plan_memory(graph, [replace(layer, scratch=0, shared_offset=0) for layer in layers],
                           target.level(target.tiling.tiles.source), target.level(tiling.data_level),
                           stream=stream, levels=levels, into=into)
    plan = planned(bool(target.tiling.stream_engine))
    if plan.streams and staging_budget(graph, plan, tiling) < 0:   # the double buffers do not fit --l2
        unstreamed = planned(False)
        if staging_budget(graph, unstreamed, tiling) >= 0:
            plan = unstreamed
            rolled = rolled + [f"parameters in L3 staged tile by tile, not streamed: two iterations' worth do "
                               f"not fit --l2 {tiling.l2}"]
    moved = spill_constants(graph, plan, tiling) if any(m.name == "L3" for m in target.memory) else []
    more, staged, staged_moved = (moved if target.tiling.stream_engine and graph.regions else []), plan, list(moved)
    while more:   # moved per-iteration constants of a region are streamed: plan again with their double buffers
        plan = planned(True, {name: "L3" for name in moved})
        more = spill_constants(graph, plan, tiling)
        moved += more
    if staged is not plan and staging_budget(graph, plan, tiling) < 0 <= staging_budget(graph, staged, tiling):
        plan, moved = staged, staged_moved   # the double buffers do not fit where staging tile by tile does
    placed = target.place_weights(graph, layers, plan, target, tiling, cores, log) if target.place_weights else []
    moved = [name for name in moved if plan.placements[name].level == "L3"]   # not those now in a weight memory
    notes = rolled + ([f"constants moved to L3 to fit --l2 {tiling.l2}: {', '.join(moved)} "
                       f"(give --defaultMemLevel to place all data yourself)"] if moved else []) + placed
    tiled = tile_network(graph, layers, plan, tiling, target.tiling, cores)
    summary = write_atomically(Path(out_dir), lambda tmp: _emit(
        tmp, extra_files, graph, layers, plan, target, source, cores, tiled, api))
    return CompileResult(graph, layers, plan, summary, notes + list(summary.notes), tiled=tiled)
