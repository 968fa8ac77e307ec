"""What a compiled network consists of, as data: its layers (kernel, engine, whether they run,
marker ids), its buffers per memory level, the marker ids the program emits and the tiles of its
tiled layers. Code generation returns it and writes it next to the C sources
(``manifest.json``); runners, profilers and the memory plot read it instead of the C."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, fields
from pathlib import Path

from Deeploy.errors import DeeployError

__all__ = ["MANIFEST_FILE", "MANIFEST_VERSION", "LayerInfo", "BufferInfo", "MarkerInfo", "TileInfo", "LevelInfo",
           "LoopInfo", "Manifest", "read_manifest"]

MANIFEST_FILE = "manifest.json"
MANIFEST_VERSION = 1

BUFFER_KINDS = ("input", "output", "constant", "activation", "scratch", "tile", "staging")


@dataclass(frozen=True)
class LayerInfo:
    """One layer in execution order. ``engine``: the platform engine running it ('serial': one
    core, 'cluster': forked on every core), 'tiled' (tile loop out of L1) or 'none' (``runs`` False: a zero-copy view or an empty
    output, ``note`` says which). ``marker``: the id tagging its start, None if unmarked."""

    index: int
    name: str
    op: str
    kernel: str
    engine: str
    runs: bool
    marker: int | None = None
    note: str = ""

    @property
    def title(self) -> str:
        return f"{self.op} '{self.name}' -> {self.kernel}"


@dataclass(frozen=True)
class BufferInfo:
    """A buffer of ``size`` bytes at ``offset`` in memory level ``level``, live over layer steps
    [first, last]. Activations and scratch: offsets in the level's arena; tiles: in the L1 tile
    arena; staging: after the level's data; inputs, outputs and constants: after the level's
    arena (when they share its level), in declaration order, each aligned like its C array."""

    name: str
    level: str
    offset: int
    size: int
    kind: str
    first: int
    last: int
    role: str = ""       # a tile slot's operand: "input", "weight" or "output"


@dataclass(frozen=True)
class MarkerInfo:
    """A marker id the program emits (on hart 0): a layer's start (``layer``) or a phase."""

    id: int
    name: str
    layer: int | None = None


@dataclass(frozen=True)
class TileInfo:
    """A tiled layer: its L1 tiles (ops of each, execution order), buffering ('SB' or 'DB'), the
    L2 tiles of operands staged from L3 (one L2 tile when nothing is staged), its engine and how its
    loop runs (``tiling/dma_plan.loop_kind``: "code", "plan" or "tables")."""

    index: int
    layer: str
    op: str
    tiles: int
    tile_ops: tuple[int, ...]
    buffering: str
    staged: bool
    l2_tiles: int
    l2_tile_ops: tuple[int, ...]
    l1_bytes: int
    staging_bytes: int
    engine: str = ""          # the engine its tile kernels run on (e.g. cluster, neureka)
    loop: str = "tables"      # straight-line "code" or a "plan" (compile-time DMA plan), or "tables"


@dataclass(frozen=True)
class LevelInfo:
    """A memory level and the bytes the network may use of it (None: unbounded)."""

    name: str
    size: int | None


@dataclass(frozen=True)
class LoopInfo:
    """A rolled region: layers ``first`` .. ``first + body * iterations - 1`` run as a loop over one
    body whose markers are those of its first iteration's layers."""

    name: str
    first: int
    body: int
    iterations: int


@dataclass(frozen=True)
class Manifest:
    platform: str
    source: str
    cores: int
    levels: tuple[LevelInfo, ...]
    layers: tuple[LayerInfo, ...]
    buffers: tuple[BufferInfo, ...]
    markers: tuple[MarkerInfo, ...]
    tiles: tuple[TileInfo, ...]
    loops: tuple[LoopInfo, ...] = ()

    def layer_of_marker(self, marker: int) -> LayerInfo | None:
        """The layer whose start ``marker`` tags. Layer markers are consecutive ids: a later
        iteration of a loop (a profile's relabelled occurrence, ``Deeploy/targets/siracusa/
        profile.per_iteration``) is its first iteration's marker plus iterations x body."""
        for m in self.markers:
            if m.id == marker and m.layer is not None:
                return self.layers[m.layer]
        for loop in self.loops:
            for j in range(1, loop.iterations):
                first = self.layer_of_marker(marker - j * loop.body) if j * loop.body else None
                if first is not None and loop.first <= first.index < loop.first + loop.body:
                    return self.layers[first.index + j * loop.body]
        return None

    def to_json(self) -> str:
        """One line per layer, buffer, marker, tile and loop (indented JSON takes the json module's
        slow path; a large network's manifest is megabytes)."""
        fields_ = []
        for key, value in {"version": MANIFEST_VERSION, **_plain(self)}.items():
            if isinstance(value, list) and value:
                value = "[\n  " + ",\n  ".join(map(json.dumps, value)) + "]"
            else:
                value = json.dumps(value)
            fields_.append(f"{json.dumps(key)}: {value}")
        return "{\n " + ",\n ".join(fields_) + "\n}\n"

    def write(self, folder: Path) -> Path:
        path = Path(folder) / MANIFEST_FILE
        path.write_text(self.to_json())
        return path

    @classmethod
    def from_json(cls, text: str) -> "Manifest":
        data = json.loads(text)
        if data.get("version") != MANIFEST_VERSION:
            raise ValueError(f"version {data.get('version')}, expected {MANIFEST_VERSION}")
        parts = {"levels": LevelInfo, "layers": LayerInfo, "buffers": BufferInfo, "markers": MarkerInfo,
                 "tiles": TileInfo, "loops": LoopInfo}
        values = {f.name: data.get(f.name, ()) if f.name == "loops" else data[f.name] for f in fields(cls)}
        for key, item in parts.items():
            values[key] = tuple(item(**_tuples(entry)) for entry in values[key])
        return cls(**values)


@functools.cache
def _field_names(cls) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def _plain(value):
    """``value`` with its dataclasses as dicts (``dataclasses.asdict`` without its deep copies)."""
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in _field_names(type(value))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _tuples(entry: dict) -> dict:
    return {k: tuple(v) if isinstance(v, list) else v for k, v in entry.items()}


def read_manifest(folder: Path) -> Manifest:
    """The manifest of the generated network in ``folder``; one clear error if it is missing or
    was written by another version."""
    path = Path(folder) / MANIFEST_FILE
    try:
        return Manifest.from_json(path.read_text())
    except FileNotFoundError:
        raise DeeployError(f"{path} not found: generate the network again (without --skipgen)") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise DeeployError(f"{path} is not a manifest this version reads ({exc}): generate the network again "
                           f"(without --skipgen)") from None
