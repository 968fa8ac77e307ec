"""The manifest of a generated network (``Deeploy/manifest.py``), built from the bound layers, the
memory plan and the tile schedules: which layers run and how, every buffer per memory level over
the schedule, the marker ids the program emits and the tiles of every tiled layer."""

from __future__ import annotations

from Deeploy.binding import Layer
from Deeploy.errors import DeeployError
from Deeploy.ir.graph import Graph
from Deeploy.manifest import BufferInfo, LayerInfo, LevelInfo, Manifest, MarkerInfo, TileInfo
from Deeploy.memory.lifetimes import alias_roots, lifetimes
from Deeploy.memory.planner import MemoryPlan, align
from Deeploy.ops import get_op
from Deeploy.targets.platform import MemoryLevel, Platform
from Deeploy.targets.siracusa import abi

__all__ = ["idle_reason", "describe_network", "DATA_ALIGNMENT"]

DATA_ALIGNMENT = 16   # I/O buffers and constants: aligned(16) (Network.c, the DEEPLOY_L* placement macros)

_TILE_PHASES = (("tile input", abi.TILE_INPUT), ("tile kernel", abi.TILE_KERNEL), ("tile output", abi.TILE_OUTPUT),
                ("tile end", abi.TILE_END), ("stage input", abi.STAGE_INPUT), ("stage inner", abi.STAGE_INNER),
                ("stage output", abi.STAGE_OUTPUT), ("stage end", abi.STAGE_END))


def idle_reason(layer: Layer, graph: Graph, plan: MemoryPlan) -> str | None:
    """Why ``layer`` runs nothing (a view whose output shares its input's storage, or outputs with
    no elements), else None."""
    node = layer.node
    if get_op(node).alias and node.inputs and node.inputs[0] and \
            plan.placements[node.outputs[0]] == plan.placements[node.inputs[0]]:
        return "zero copy: output aliases the input buffer"
    if node.outputs and all(graph.tensors[o].size == 0 for o in node.outputs if o):
        return "empty output"
    return None


def _layers(layers: list[Layer], idle: dict[int, str], tiled: set[int]) -> list[LayerInfo]:
    out = []
    for k, layer in enumerate(layers):
        runs = k in tiled or k not in idle
        engine = "tiled" if k in tiled else ("none" if not runs else layer.engine.name)
        marker = None
        if runs and layer.engine.forked:
            try:
                marker = abi.layer_marker(k)
            except ValueError as exc:
                raise DeeployError(f"layer '{layer.node.name}' ({layer.node.op}): {exc}") from None
        out.append(LayerInfo(k, layer.node.name, layer.node.op, layer.variant, engine, runs, marker,
                             "" if runs else idle[k]))
    return out


def _markers(layers: list[LayerInfo], tiled: bool) -> list[MarkerInfo]:
    marks = [MarkerInfo(info.marker, f"layer {info.index}", info.index) for info in layers if info.marker is not None]
    if marks:
        marks.append(MarkerInfo(abi.LAYER_END, "layer end"))
    if tiled:
        marks += [MarkerInfo(value, name) for name, value in _TILE_PHASES]
    return marks


def _arena_buffers(graph: Graph, layers: list[Layer], plan: MemoryPlan) -> list[BufferInfo]:
    level, out = plan.level.name, []
    roots = alias_roots(graph)
    sizes = {n: graph.tensors[n].nbytes for n, p in plan.placements.items() if p.kind == "arena" and n not in roots}
    for iv in lifetimes(graph, sizes, roots):
        out.append(BufferInfo(iv.name, level, plan.placements[iv.name].offset, iv.size, "activation", iv.first,
                              iv.last))
    for k, layer in enumerate(layers):
        at = plan.scratch_offsets.get(layer.node.name)
        if at is not None:
            out.append(BufferInfo(f"{layer.node.name}: kernel scratch", level, at, layer.scratch, "scratch", k, k))
    return out


def _data_buffers(graph: Graph, plan: MemoryPlan, level: str, constants: set[str], last: int
                  ) -> tuple[list[BufferInfo], int]:
    """Graph inputs, outputs and the emitted constants (whole schedule), after the arena when they
    share its level; and the end of them."""
    offset = plan.arena_size if level == plan.level.name else 0
    out = []
    for name, p in sorted(plan.placements.items()):
        if p.root != name or name not in graph.tensors:
            continue
        if p.kind in ("input", "output") or (p.kind == "constant" and name in constants):
            size = graph.tensors[name].nbytes
            out.append(BufferInfo(name, level, offset, size, p.kind, 0, last))
            offset += align(size, DATA_ALIGNMENT)
    return out, offset


def _tile_buffers(layers: list[Layer], tiling, staging_base: int) -> list[BufferInfo]:
    out = []
    for k, sched in tiling.schedules.items():
        name = layers[k].node.name
        for s in sched.slots:
            for c, off in enumerate(s.l1_offsets):
                out.append(BufferInfo(f"{name}: {s.operand.tensor} tile (slot {c + 1}/{s.copies})", "L1", off,
                                      s.slot_bytes, "tile", k, k))
            if s.in_l3:
                out.append(BufferInfo(f"{name}: {s.operand.tensor} L2 tile", "L2", staging_base + s.staging_offset,
                                      s.staging_bytes, "staging", k, k))
        scratch = sched.l1_bytes - sched.scratch_offset     # the kernel's L1 scratch follows the slots
        if scratch:
            out.append(BufferInfo(f"{name}: kernel scratch", "L1", sched.scratch_offset, scratch, "scratch", k, k))
    return out


def _tiles(tiled_code: dict) -> list[TileInfo]:
    out = []
    for k, code in sorted(tiled_code.items()):
        m = code.manifest
        out.append(TileInfo(k, m["layer"], m["op"], len(m["tile_ops"]), tuple(m["tile_ops"]), m["buffering"],
                            m["staged"], m["l2_tiles"], tuple(m["l2_tile_ops"]), m["l1_bytes"], m["staging_bytes"]))
    return out


def describe_network(graph: Graph, layers: list[Layer], plan: MemoryPlan, platform: Platform, source: str,
                     cores: int, idle: dict[int, str], constants: set[str], tiling=None, tiled_code=None,
                     data_level: MemoryLevel | None = None) -> Manifest:
    """The manifest. ``idle``: layer index -> why it runs nothing; ``constants``: the constants the
    C defines; ``tiling`` / ``tiled_code``: the TiledNetwork and each tiled layer's TiledCode."""
    tiled_code = tiled_code or {}
    infos = _layers(layers, idle, set(tiled_code))
    data = (data_level or plan.level).name
    buffers = _arena_buffers(graph, layers, plan)
    data_buffers, data_end = _data_buffers(graph, plan, data, constants, max(len(layers) - 1, 0))
    buffers += data_buffers
    capacity = {m.name: m.size for m in platform.memory}
    if tiling is not None:
        buffers += _tile_buffers(layers, tiling, data_end if data == plan.level.name else plan.arena_size)
        capacity.update(L1=tiling.options.l1, L2=tiling.options.l2)
    return Manifest(platform=platform.name, source=source, cores=cores,
                    levels=tuple(LevelInfo(m.name, capacity[m.name]) for m in platform.memory),
                    layers=tuple(infos), buffers=tuple(buffers), markers=tuple(_markers(infos, bool(tiled_code))),
                    tiles=tuple(_tiles(tiled_code)))
