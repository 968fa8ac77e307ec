"""The compilation pipeline, one direction:
ONNX -> frontend (load, types) -> lowering passes -> binding -> memory plan -> C project."""

from __future__ import annotations

import contextlib
import glob
import inspect
import os
import shutil
import socket
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator

import numpy as np

from Deeploy.errors import DeeployError, GraphError, OpError
from Deeploy.binding import Layer, bind, check_supported
from Deeploy.codegen.api import NetworkApi, io_quantizations
from Deeploy.codegen.emit import EmitSummary, emit_project
from Deeploy.codegen.project_files import check_cmake_path
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ir.dtypes import DType
from Deeploy.ir.graph import Graph
from Deeploy.ir.onnx_export import save_snapshot
from Deeploy.manifest import Manifest
from Deeploy.memory.planner import MemoryPlan, Placement, arena_scratch, choose_streams, plan_memory
from Deeploy.passes.graph_outputs import copy_shared_outputs
from Deeploy.passes.loop_rolling import LoopRolling, roll_loops
from Deeploy.passes.manager import run_passes
from Deeploy.passes.region_entry import copy_region_entries
from Deeploy.targets import get_platform
from Deeploy.tiling.network import (TiledNetwork, TilingOptions, check_level_limits, spill_constants, staging_budget,
                                     tile_network)

__all__ = ["CompileResult", "compile_network", "compile_graph", "plan_network", "atomic_folder", "write_atomically",
           "check_replaceable", "OUTPUT_MARK", "Stages"]


class Stages:
    """CPU seconds of the compile stages, one ``log`` line each (``deeploy compile -v``)."""

    def __init__(self, log: Callable[[str], None] | None):
        self.log, self.last = log, time.process_time()

    def __call__(self, stage: str) -> None:
        """Close ``stage``: it took the CPU time since the previous one closed."""
        now = time.process_time()
        if self.log is not None:
            self.log(f"stage {stage}: {now - self.last:.3f} s CPU")
        self.last = now


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
# in a temporary folder beside the output while it is written: the host and process writing it
_TEMP_MARK = ".deeploy-temporary"


def check_replaceable(out_dir: Path, what: str = "output folder") -> None:
    """Refuse an output path whose replacement could destroy anything the compiler did not write:
    only a folder carrying ``OUTPUT_MARK`` or an empty one is replaced."""
    given, out_dir = out_dir, Path(os.path.abspath(out_dir))   # the messages name the path as given
    if out_dir.is_symlink():
        raise DeeployError(f"{what} '{given}' is a symbolic link; name a new folder (links are never followed)")
    if not out_dir.exists():
        return
    if not out_dir.is_dir():
        raise DeeployError(f"{what} '{given}' exists and is not a folder; name a new folder "
                           "(files are never overwritten)")
    if Path.cwd().resolve().is_relative_to(out_dir.resolve()):
        raise DeeployError(f"{what} '{given}' is the working directory or contains it; "
                           "name a new folder, e.g. -o out")
    entries = {e.name for e in out_dir.iterdir()}
    if entries and OUTPUT_MARK not in entries:
        shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
        error = DeeployError(f"{what} '{given}' holds files the compiler did not write ({shown}); name a new or empty "
                             "folder")
        error.details = "only folders an earlier compile created (marked .deeploy-output) are replaced"
        raise error


def _os_error(exc: OSError, what: str, path: Path) -> DeeployError:
    reason = {PermissionError: "permission denied", FileExistsError: "a file is in the way",
              NotADirectoryError: "a file is in the way"}.get(type(exc), exc.strerror or str(exc))
    return DeeployError(f"cannot {what} '{path}': {reason}")


def _owner() -> str:
    return f"{socket.gethostname()} {os.getpid()}"


def _remove_stale(out_dir: Path) -> None:
    """Remove the temporary folders that compiles of ``out_dir`` killed before their clean-up left
    (those carrying ``_TEMP_MARK`` of a process of this host that no longer runs)."""
    for tmp in out_dir.parent.glob(f".{glob.escape(out_dir.name)}.*"):
        if tmp.is_symlink():
            continue
        try:
            host, pid = (tmp / _TEMP_MARK).read_text().split()
            if host != socket.gethostname():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(tmp, ignore_errors=True)
        except (OSError, ValueError):   # not ours, or its process still runs (PermissionError)
            continue


@contextlib.contextmanager
def atomic_folder(out_dir: str | Path, what: str = "output folder") -> Iterator[Path]:
    """A new folder to fill, moved into place as ``out_dir`` only if the ``with`` block
    succeeds, so a failed compilation never leaves a half-written folder. Only a folder the
    compiler created (it carries ``OUTPUT_MARK``) or an empty one is replaced; the new folder's
    mode follows the umask."""
    check_replaceable(out_dir, what)
    out_dir = Path(os.path.abspath(out_dir))
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale(out_dir)
        work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    except OSError as exc:
        raise _os_error(exc, f"create the {what}", out_dir) from None
    try:
        (work / _TEMP_MARK).write_text(_owner())
        new, old = work / "new", work / "old"
        new.mkdir()
        yield new
        (new / OUTPUT_MARK).write_text("Written by deeploy; the folder is replaced on the next compile.\n")
        if out_dir.exists():
            os.replace(out_dir, old)
        try:
            os.replace(new, out_dir)
        except OSError:
            if old.exists():
                os.replace(old, out_dir)
            raise
    except OSError as exc:
        raise _os_error(exc, f"replace the {what}", out_dir) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_atomically(out_dir: Path, fill: Callable[[Path], object]):
    """``fill`` a new folder and move it into place as ``out_dir`` (see :func:`atomic_folder`)."""
    with atomic_folder(out_dir) as folder:
        return fill(folder)


def _emit(folder: Path, extra_files, graph: Graph, layers, plan, target, source, cores, tiled=None,
          api: NetworkApi | None = None, stages: Stages | None = None,
          quantization: list[str] | None = None) -> EmitSummary:
    summary = emit_project(graph, layers, plan, target, folder, source, cores, tiled, api, stages, quantization)
    if extra_files is not None:
        extra_files(graph, folder)
    return summary


_WINDOW_ATTRS = ("pads", "strides", "dilations", "kernel_shape", "output_padding", "output_shape")


def check_sizes(graph: Graph, target) -> None:
    """Refuse what the target cannot address (``Platform.address_bits``): a tensor's dimension,
    element count or byte size, or a window attribute (pads, strides...), instead of a size that
    wraps in the generated C."""
    bits = target.address_bits
    limit = 1 << bits
    for node in graph.nodes:
        for attr in _WINDOW_ATTRS:
            values = node.attrs.get(attr)
            if isinstance(values, (list, tuple)) and any(abs(int(v)) >= limit for v in values):
                raise OpError(node, f"{attr} {list(values)} are beyond what platform {target.name} addresses "
                                    f"(below 2^{bits})")
    producers = graph.producers()
    for t in graph.tensors.values():
        if t.shape is not None and t.dtype is not None and max((*t.shape, t.size, t.nbytes)) >= limit:
            node = producers.get(t.name)
            what = (f"output of node '{node.name}' ({node.op})" if node else
                    "graph input" if t.name in graph.inputs else "constant")
            raise GraphError(f"tensor '{t.name}' ({what}) of shape {list(t.shape)}, {t.nbytes} bytes, is beyond "
                             f"what platform {target.name} addresses (dimensions, elements and bytes below "
                             f"2^{bits}); split the network or shrink the tensor")


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
    stages = Stages(log)
    graph = load_onnx(onnx_path)
    assign_input_types(graph, input_values, input_types)
    stages("load")
    return compile_graph(graph, platform, out_dir, source=Path(onnx_path).name,
                         snapshot_dir=snapshot_dir, cores=cores, tiling=tiling, log=log, stages=stages)


def compile_graph(graph: Graph, platform: str, out_dir: str | Path, *, source: str = "network.onnx",
                  snapshot_dir: str | Path | None = None, cores: int | None = None,
                  tiling: TilingOptions | None = None,
                  log: Callable[[str], None] | None = None,
                  extra_files: Callable[[Graph, Path], None] | None = None,
                  name: str | None = None, platform_options: dict | None = None,
                  loop_rolling: LoopRolling | None = None, stages: Stages | None = None) -> CompileResult:
    """Compile a loaded graph whose inputs already have types (see ``assign_input_types``).
    ``cores``: cluster cores the code will run on (default: the platform's maximum).
    ``tiling``: run every layer tile by tile out of L1 (cluster platforms with an L1 level).
    ``extra_files(compiled graph, folder)`` adds files to the output folder before it is moved
    into place (e.g. a testbench). ``name``: prefix of the exported C symbols (``NetworkApi``).
    ``platform_options``: the platform's own options (its ``configure``), e.g. ``{"no_npu_for":
    [...], "wmem_size": n}`` for Siracusa_w_neureka. ``loop_rolling``: record the repeated blocks
    it asks for as regions of the graph (``passes/loop_rolling.py``), one note per region.
    ``stages``: the timer of the stages (a caller's that timed the loading; default: a new one on ``log``)."""
    stages = stages or Stages(log)
    api = NetworkApi(name)
    check_cmake_path(out_dir, "output folder")
    target = get_platform(platform)
    if platform_options:
        takes = inspect.signature(target.configure).parameters if target.configure else {}
        unknown = sorted(set(platform_options) - set(takes))
        if unknown:
            flags = ", ".join("--" + o.replace("_", "-") for o in unknown)
            raise DeeployError(f"platform {target.name} takes no {flags}: drop it (it is for another platform)")
        target = target.configure(**platform_options)
    cores = target.max_cores if cores is None else cores
    if not 1 <= cores <= target.max_cores:
        raise DeeployError(f"platform {target.name} has 1 to {target.max_cores} cores, got {cores}: "
                           + (f"use --cores {target.max_cores} or fewer" if target.max_cores > 1 else "drop --cores"))
    if tiling is None and target.tiled_only:
        raise DeeployError(f"platform {target.name} compiles tiled only ({target.tiled_only}): give --l1, "
                           f"e.g. --l1 {target.tiling.tiles.capacity}")
    if tiling is not None and target.tiling is None:
        raise DeeployError(f"platform {target.name} cannot tile: drop --l1, --l2, --defaultMemLevel and "
                           "--doublebuffer, or choose a platform that tiles (e.g. Siracusa)")
    if tiling is not None:
        check_level_limits(tiling, target.memory)
    check_supported(graph, target)
    infer_graph(graph)
    check_sizes(graph, target)
    stages("type inference")
    graph.verify()   # later stages key layers by node name: a graph built in Python may repeat one
    snapshots = Path(snapshot_dir) if snapshot_dir else None
    if snapshots:
        save_snapshot(graph, snapshots / "frontend.onnx")
    quantization = io_quantizations(graph)   # as loaded: lowering folds the quantizers into integer ops
    graph = run_passes(graph, (*target.passes, copy_shared_outputs), log)
    graph, rolled = roll_loops(graph, loop_rolling, log)
    if tiling is not None and target.tiling is not None and tiling.data_level != target.tiling.tiles.source:
        copy_region_entries(graph, log)   # inputs outside the arena's level: every iteration alike
    stages("passes")
    if snapshots:
        save_snapshot(graph, snapshots / "middleware.onnx")
    layers = bind(graph, target, cores)
    stages("binding")
    if snapshots:
        save_snapshot(graph, snapshots / "backend_post_binding.onnx",
                      {layer.node.name: {"kernel": layer.variant, "engine": layer.engine.name}
                       for layer in layers})
    plan, notes = plan_network(graph, layers, target, tiling, cores, log)
    if target.check_plan:
        target.check_plan(graph, plan)
    stages("memory planning")
    tiled = None
    if tiling is not None:
        tiled = tile_network(graph, layers, plan, tiling, target.tiling, cores, log)
        stages("tiling")
    summary = write_atomically(Path(out_dir), lambda tmp: _emit(
        tmp, extra_files, graph, layers, plan, target, source, cores, tiled, api, stages, quantization))
    stages("writing")
    return CompileResult(graph, layers, plan, summary, rolled + notes + list(summary.notes), tiled=tiled)


def plan_network(graph: Graph, layers: list[Layer], target, tiling: TilingOptions | None, cores: int,
                 log: Callable[[str], None] | None = None) -> tuple[MemoryPlan, list[str]]:
    """The memory plan of a bound network and notes on the decisions behind it. Every decision is a
    field of the ``Placement`` the plan is made from (``memory/planner.py``); one that depends on a
    plan is taken from the plan of the decisions before it and planned again, never edited in:
    tiled, the constants' levels and streams (``_fit_l2``); then the weight memory's contents
    (``Platform.place_weights``)."""
    if tiling is None:
        placement, notes = Placement(scratch=arena_scratch(layers)), []
        plan = plan_memory(graph, layers, target.level(target.default_level), None, placement)
    else:
        placement, plan, notes = _fit_l2(graph, layers, target, tiling)
    weights, placed = target.place_weights(graph, layers, plan, target, tiling, cores, log) \
        if target.place_weights else ({}, [])
    if weights:
        placement = replace(placement, weights=weights)
        plan = plan_memory(graph, layers, plan.level, plan.data_level, placement)
    moved = [name for name in placement.levels if plan.placements[name].level == "L3"]   # not streamed or weights
    notes += [f"constants moved to L3 to fit --l2 {tiling.l2}: {', '.join(moved)} "
              f"(give --defaultMemLevel to place all data yourself)"] if moved else []
    return plan, notes + placed


def _fit_l2(graph: Graph, layers: list[Layer], target, tiling: TilingOptions
            ) -> tuple[Placement, MemoryPlan, list[str]]:
    """Tiled: the constants' levels and streams, the plan they give and notes. A rolled region's
    per-iteration constants stored outside L2 are streamed, unless their double buffers do not fit
    ``--l2`` where staging them tile by tile does. Without ``--defaultMemLevel``, constants move to
    L3 until the data fit (``spill_constants``), one decide -> plan -> check round after another
    while moved per-iteration constants of a region are streamed (their double buffers take L2),
    unless the double buffers do not fit where staging the first round's tile by tile does. The
    tiled layers' kernel scratch lives with their tiles, not in the arena."""
    level, data = target.level(target.tiling.tiles.source), target.level(tiling.data_level)
    into = target.stream_into(graph, layers, target) if target.stream_into else None
    streaming = bool(target.tiling.stream_engine)

    def decide(stream: bool, moved) -> Placement:
        levels = dict.fromkeys(moved, "L3")
        return Placement(levels, streams=choose_streams(graph, level, data, levels, into) if stream else ())

    def planned(placement: Placement) -> tuple[Placement, MemoryPlan]:
        return placement, plan_memory(graph, layers, level, data, placement)

    def fits(plan: MemoryPlan) -> bool:
        return staging_budget(graph, plan, tiling) >= 0

    notes = []
    placement, plan = planned(decide(streaming, ()))
    if plan.streams and not fits(plan):   # the double buffers do not fit --l2
        unstreamed = planned(decide(False, ()))
        if fits(unstreamed[1]):
            placement, plan = unstreamed
            notes.append(f"parameters in L3 staged tile by tile, not streamed: two iterations' worth do not fit "
                         f"--l2 {tiling.l2}")
    moved = spill_constants(graph, plan, tiling) if any(m.name == "L3" for m in target.memory) else []
    if not moved:
        return placement, plan, notes
    staged = planned(replace(placement, levels=dict.fromkeys(moved, "L3")))   # the streams as they were
    placement, plan = staged
    more = moved if streaming and graph.regions else []
    while more:
        placement, plan = planned(decide(True, moved))
        more = spill_constants(graph, plan, tiling)
        moved = moved + more
    if placement is not staged[0] and not fits(plan) and fits(staged[1]):
        placement, plan = staged
    return placement, plan, notes
