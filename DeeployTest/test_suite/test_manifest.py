"""The manifest code generation writes next to the C (manifest.json): layers (kernel, engine, whether
they run, marker ids), buffers per level, markers and tiles, checked against the generated C and
the memory plan; the profile and the memory plot read it, and no reader parses the generated C."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.compiler import compile_graph
from Deeploy.errors import DeeployError
from Deeploy.frontend import assign_input_types, load_onnx
from Deeploy.manifest import MANIFEST_FILE, BufferInfo, Manifest, read_manifest
from Deeploy.memory.report import memory_levels
from Deeploy.targets.siracusa.profile import layer_profile
from Deeploy.targets.siracusa.timing import model_cycles
from Deeploy.tiling.network import TilingOptions
from DeeployTest.test_suite.conftest import REPO

X = np.arange(-8, 8, dtype=np.int64).reshape(1, 4, 4)
BIAS = np.arange(16, dtype=np.int64) - 5


def _model(folder: Path, empty_slice: bool = False) -> Path:
    """x -> Relu -> Reshape (a zero-copy view) -> Add(bias) -> y; with ``empty_slice``, y is instead
    Concat(relu, Slice(x) with no elements) along the last axis."""
    f = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)  # noqa: E731
    consts = {"shape": np.array([1, 16]), "bias": BIAS}
    if empty_slice:
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["e"], name="nothing"),
                 helper.make_node("Concat", ["r", "e"], ["y"], name="cat", axis=2)]
        consts = {"s0": np.array([2]), "s1": np.array([2]), "ax": np.array([2])}
        out = f("y", [1, 4, 4])
    else:
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Reshape", ["r", "shape"], ["v"], name="view"),
                 helper.make_node("Add", ["v", "bias"], ["y"], name="add")]
        out = f("y", [1, 16])
    inits = [numpy_helper.from_array(v.astype(np.float32 if k == "bias" else np.int64), k) for k, v in consts.items()]
    graph = helper.make_graph(nodes, "net", [f("x", [1, 4, 4])], [out], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(model, folder / "network.onnx")
    return folder / "network.onnx"


def _compile(tmp_path: Path, platform: str, empty_slice: bool = False, **options):
    graph = load_onnx(_model(tmp_path / "model", empty_slice))
    assign_input_types(graph, {"x": X})
    out = tmp_path / "out"
    return compile_graph(graph, platform, out, **options), out


def test_siracusa_manifest_matches_the_generated_c_and_the_plan(tmp_path):
    result, out = _compile(tmp_path, "Siracusa", cores=8)
    m = result.manifest
    assert read_manifest(out) == m                      # written next to the C, same content
    assert json.loads((out / MANIFEST_FILE).read_text())["version"] == 1
    c = (out / "Network.c").read_text()
    assert [(info.name, info.op) for info in m.layers] == [("relu", "Relu"), ("view", "Reshape"), ("add", "Add")]
    relu, view, add = m.layers
    assert not view.runs and view.engine == "none" and view.marker is None and "zero copy" in view.note
    for info in (relu, add):
        assert info.runs and info.engine == "cluster" and info.marker == 256 + info.index
    for info in m.layers:                              # the C marks exactly the layers with a marker id
        assert (f"DEEPLOY_MARK_LAYER({info.index});" in c) == (info.marker is not None)
        assert f"{info.op} '{info.name}' -> {info.kernel}" in c
    assert {(mk.id, mk.layer) for mk in m.markers} == {(256, 0), (258, 2), (255, None)}
    assert m.layer_of_marker(258) == add and m.layer_of_marker(257) is None

    constants = {b.name for b in m.buffers if b.kind == "constant"}
    assert constants == {"bias"}                         # the Reshape's shape is never read by a call
    idents = set(re.findall(r"static const \w+ (c_\w+)\[", c))
    assert idents == {"c_bias"}
    for b in m.buffers:
        assert b.level == "L2" and b.size > 0 and 0 <= b.first <= b.last < len(m.layers)
        if b.kind == "activation":
            assert b.offset == result.plan.placements[b.name].offset
            assert b.offset + b.size <= result.plan.arena_size
        elif b.kind in ("input", "output", "constant"):
            assert b.offset >= result.plan.arena_size and b.offset % 16 == 0
    assert [lv.name for lv in m.levels] == ["L1", "L2", "L3"] and m.cores == 8 and m.tiles == ()


def test_generic_layers_run_serially_without_markers(tmp_path):
    m = _compile(tmp_path, "Generic")[0].manifest
    assert [info.engine for info in m.layers] == ["serial", "none", "serial"]
    assert m.markers == () and all(info.marker is None for info in m.layers)


def test_a_layer_with_an_empty_output_runs_nothing(tmp_path):
    result, out = _compile(tmp_path, "Siracusa", empty_slice=True, cores=8)
    nothing = next(info for info in result.manifest.layers if info.name == "nothing")
    assert (nothing.runs, nothing.engine, nothing.marker, nothing.note) == (False, "none", None, "empty output")
    c = (out / "Network.c").read_text()
    assert "/* empty output */" in c and f"DEEPLOY_MARK_LAYER({nothing.index});" not in c


@pytest.mark.parametrize("level", ["L2", "L3"])
def test_tiled_manifest_lists_tiles_slots_and_staging(tmp_path, level):
    result, out = _compile(tmp_path, "Siracusa", cores=8, tiling=TilingOptions(16000, 1024000, level, True))
    m = result.manifest
    c = (out / "Network.c").read_text()
    runs = {"tables": r"deeploy_run_tiled\(&deeploy_t(\d+)\);", "plan": r"deeploy_run_planned\(&deeploy_t(\d+)\);",
            "code": r"deeploy_t(\d+)_run\(\);"}   # the three tile loops (tiling/dma_plan.loop_kind)
    called = {int(k): loop for loop, pattern in runs.items() for k in re.findall(pattern, c)}
    assert [t.index for t in m.tiles] == sorted(called) == [info.index for info in m.layers if info.engine == "tiled"]
    assert all(called[t.index] == t.loop for t in m.tiles), (called, [t.loop for t in m.tiles])
    for t in m.tiles:
        assert t.tiles == len(t.tile_ops) >= 1 and t.buffering in ("SB", "DB")
        assert t.layer == m.layers[t.index].name and t.staged == (level == "L3")
        assert sum(t.l2_tile_ops) == sum(t.tile_ops) and len(t.l2_tile_ops) == t.l2_tiles
    assert {lv.name: lv.size for lv in m.levels}["L1"] == 16000
    tiles = [b for b in m.buffers if b.kind == "tile"]
    assert tiles and all(b.level == "L1" and b.offset + b.size <= 16000 for b in tiles)
    assert any(b.kind == "staging" for b in m.buffers) == (level == "L3")
    assert {b.level for b in m.buffers if b.kind in ("input", "output", "constant")} == {level}
    assert {mk.id for mk in m.markers} >= set(range(0x50, 0x58))


def test_memory_levels_group_the_manifest_buffers(tmp_path):
    m = _compile(tmp_path, "Siracusa", cores=8, tiling=TilingOptions(16000, 1024000, "L3", True))[0].manifest
    steps, levels = memory_levels(m)
    assert steps == [f"{info.index}: {info.op} {info.name}" for info in m.layers]
    assert [lv.name for lv in levels] == ["L1", "L2", "L3"]
    assert sum(len(lv.buffers) for lv in levels) == len(m.buffers)
    assert all(b.level == lv.name for lv in levels for b in lv.buffers)
    bad = Manifest(**{**m.__dict__, "buffers": m.buffers + (BufferInfo("x", "L9", 0, 1, "tile", 0, 0),)})
    with pytest.raises(ValueError, match="L9"):
        memory_levels(bad)


def test_missing_or_foreign_manifest_is_one_clear_error(tmp_path):
    with pytest.raises(DeeployError, match="manifest.json not found"):
        read_manifest(tmp_path)
    (tmp_path / MANIFEST_FILE).write_text(json.dumps({"version": 99}))
    with pytest.raises(DeeployError, match="not a manifest this version reads"):
        read_manifest(tmp_path)


HEADER = """\
# deeploy-vp-records 1
# regions L2:0x80000000:0x200000 L1:0x90000000:0x40000 L3:0xa0000000:0x1000000
# columns hart seq marker insns L2_ld L2_st L1_ld L1_st L3_ld L3_st other_ld other_st
"""


def test_layer_profile_names_layers_from_the_manifest(tmp_path):
    m = _compile(tmp_path, "Siracusa", cores=8)[0].manifest
    relu, _, add = m.layers
    records = HEADER + ("0 0 0x100 100 0 0 0 0 0 0 0 0\n0 1 0x102 130 0 0 0 0 0 0 0 0\n"
                        "0 2 0x0ff 180 0 0 0 0 0 0 0 0\n0 3 end 181 0 0 0 0 0 0 0 0\n")
    lines = layer_profile(model_cycles(records), m)
    # no fork and no DMA: the layers' kernels ran serially, every cycle is compute
    parts = "compute {0} + exposed DMA 0 (issue 0, wait 0) + overhead 0 (set-up 0, between kernels 0)"
    assert lines == [f"  [  0] {relu.title}: 30 cycles = {parts.format(30)}",
                     f"  [  2] {add.title}: 50 cycles = {parts.format(50)}"]


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module} | \
        {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}


def test_readers_use_the_manifest_not_the_generated_c():
    assert not any(m.startswith("Deeploy.codegen") for m in _imports(REPO / "Deeploy/memory/report.py"))
    for reader in ("Deeploy/memory/report.py", "Deeploy/targets/siracusa/profile.py",
                   "Deeploy/targets/siracusa/runner.py", "Deeploy/codegen/emit.py"):
        text = (REPO / reader).read_text()
        assert "Network.c\").read_text" not in text and "tiling.json" not in text, reader
