"""The manifest of a generated network (``Deeploy/manifest.py``), built from the bound layers, the
memory plan and the tile schedules: which layers run and how, every buffer per memory level over
the schedule, the marker ids the program emits and the tiles of every tiled layer."""

from __future__ import annotations

from Deeploy.binding import Layer
from Deeploy.errors import DeeployError
from Deeploy.ir.graph import Graph
from Deeploy.manifest import BufferInfo, LayerInfo, LevelInfo, LoopInfo, Manifest, MarkerInfo, TileInfo
from Deeploy.memory.planner import BufferKind, MemoryPlan, PlannedBuffer, data_buffers, tile_buffers
from Deeploy.ops import get_op
from Deeploy.platform import Platform
from Deeploy.runtime import abi

__all__ = ["idle_reason", "describe_network"]

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


def _layers(layers: list[Layer], idle: dict[int, str], tiled: set[int], unmarked: set[int]) -> list[LayerInfo]:
    out = []
    for k, layer in enumerate(layers):
        runs = k in tiled or k not in idle
        engine = "tiled" if k in tiled else ("none" if not runs else layer.engine.name)
        marker = None
        if runs and k not in unmarked and (layer.engine.forked or layer.engine.runtime):
            # engines with a runtime tag their layers; a rolled body tags its first iteration's
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


def _info(b: PlannedBuffer) -> BufferInfo:
    return BufferInfo(b.name, b.level, b.offset, b.size, b.kind.value, b.first, b.last, b.role)


def _tiles(tiled_code: dict) -> list[TileInfo]:
    out = []
    for k, code in sorted(tiled_code.items()):
        m = code.manifest
        out.append(TileInfo(k, m["layer"], m["op"], len(m["tile_ops"]), tuple(m["tile_ops"]), m["buffering"],
                            m["staged"], m["l2_tiles"], tuple(m["l2_tile_ops"]), m["l1_bytes"], m["staging_bytes"],
                            m["engine"], m["loop"]))
    return out


def describe_network(graph: Graph, layers: list[Layer], plan: MemoryPlan, platform: Platform, source: str,
                     cores: int, idle: dict[int, str], constants: set[str], tiling=None, tiled_code=None,
                     unmarked: set[int] = frozenset(), loops: tuple[LoopInfo, ...] = ()) -> Manifest:
    """The manifest. ``idle``: layer index -> why it runs nothing; ``constants``: the constants the
    C defines; ``tiling`` / ``tiled_code``: the TiledNetwork and each tiled layer's TiledCode;
    ``unmarked``: layers that run without a marker of their own (later iterations of a rolled body);
    ``loops``: the rolled regions."""
    tiled_code = tiled_code or {}
    infos = _layers(layers, idle, set(tiled_code), unmarked)
    data, data_end = data_buffers(plan, graph, constants, max(len(layers) - 1, 0))
    for n, s in enumerate(plan.streams):   # a region's streamed parameters, stored as one block
        end = max((b.offset + b.size for b in data if b.level == s.level), default=0)
        data.append(PlannedBuffer(f"deeploy_s{n}_src: streamed parameters of '{s.span.name}'", BufferKind.CONSTANT,
                                  s.level, -(-end // 16) * 16, s.span.iterations * s.slot, 0, max(len(layers) - 1, 0)))
    buffers = [*plan.buffers, *data]
    capacity = {m.name: m.size for m in platform.memory}
    if tiling is not None:
        tiles = platform.tiling.tiles
        buffers += tile_buffers(layers, tiling, data_end, tiles.level, tiles.source)
        capacity.update({tiles.level: tiling.options.l1, tiles.source: tiling.options.l2})
    return Manifest(platform=platform.name, source=source, cores=cores,
                    levels=tuple(LevelInfo(m.name, capacity[m.name]) for m in platform.memory),
                    layers=tuple(infos), buffers=tuple(_info(b) for b in buffers), markers=tuple(_markers(infos, bool(tiled_code))),
                    tiles=tuple(_tiles(tiled_code)), loops=loops)
