"""The compile-time DMA plan of tiled layers (Deeploy/tiling/dma_plan.py) and the straight-line
tile loops generated from it (Deeploy/codegen/tiled.py): every copy moves exactly its operand's
tile box (checked by replaying the copies on numbered bytes against numpy slicing), the plan moves
the bytes the schedule's traffic replay counts, and a network of one-tile layers spends almost
nothing between its kernels on the cluster."""

from __future__ import annotations

import argparse
import functools
import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from Deeploy.analysis.traffic import schedule_traffic
from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from Deeploy.tiling.dma_plan import box_copies, dma_plan, plannable
from Deeploy.tiling.network import TilingOptions
from Deeploy.tiling.schedule import OperandSlots, schedule_layer
from Deeploy.tiling.spec import INPUT, OUTPUT, AxisMap, Operand
from DeeployTest.generators.golden import write_test
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from DeeployTest.test_suite.kernel_cases import TILED, _check, needs_qemu
from DeeployTest.test_suite.test_table_fill_once import _add, _softmax
from DeeployTest.test_suite.test_siracusa_tiled import run_tiled
from DeeployTest.test_suite.test_siracusa_networks import _id

MINI = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
RESNET = DEEPLOY_TEST / "Tests" / "Models" / "ResNet8"


@functools.lru_cache(maxsize=None)
def _schedules(test_dir, l1: int, db: bool, tmp) -> dict:
    graph = load_onnx(test_dir / "network.onnx")
    npz = test_dir / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    result = compile_graph(graph, "Siracusa", tmp / f"{test_dir.name}_{l1}_{db}", cores=8,
                           tiling=TilingOptions(l1, TilingOptions.l2, "L2", db))
    return result.tiled.schedules


def test_tiles_are_the_schedules_own(tmp_path_factory):
    """A schedule walks its tiles once (TileSchedule.tiles): every call yields all of them again,
    and a schedule made from it with other tile sizes walks its own (one L1 tile per L2 tile)."""
    sched = next(s for s in _schedules(MINI, 2000, False, tmp_path_factory.getbasetemp()).values()
                 if s.num_tiles > s.l2_tiles())
    tiles = list(sched.tiles())
    assert len(tiles) == sched.num_tiles and list(sched.tiles()) == tiles
    whole = replace(sched, l1_tile=sched.l2_tile)
    assert len(list(whole.tiles())) == whole.l2_tiles() < len(tiles)


def _replay(copy, home: np.ndarray, dense: np.ndarray):
    """One 3-D DMA copy on byte arrays, the way the engine moves it (planes of rows of bytes)."""
    src, dst = (home, dense) if copy.load else (dense, home)
    (s0, sr, sp), (d0, dr, dp) = ((copy.home, copy.home_row, copy.home_plane),
                                  (copy.dense, copy.dense_row, copy.dense_plane))
    if not copy.load:
        (s0, sr, sp), (d0, dr, dp) = (d0, dr, dp), (s0, sr, sp)
    for p in range(copy.planes):
        for r in range(copy.rows):
            a, b = s0 + p * sp + r * sr, d0 + p * dp + r * dr
            dst[b:b + copy.row] = src[a:a + copy.row]


@pytest.mark.parametrize("test_dir,l1,db", [(MINI, 1000, True), (MINI, 2000, False), (MINI, 2000, True),
                                             (RESNET, 8000, True)],
                         ids=["mini-1000-db", "mini-2000-sb", "mini-2000-db-held", "resnet8-8000-db"])
def test_plan_moves_exactly_every_tile_box(test_dir, l1, db, tmp_path_factory):
    """Per tile, the copies of each operand fill its slot with the tile's box of the home tensor in
    C order (loads) and put the slot back into exactly that box (stores); the plan's bytes are the
    traffic replay's. Double-buffered (the tiles rescheduled with two slots where the solver chose
    one): the kernel waits for every load into the slots it reads, a prefetch never writes the
    slots the current tile reads, and an output slot is reused only after waiting for its write-back
    (a held input's one slot is loaded only after the tile before it, mini-2000-db-held)."""
    schedules = _schedules(test_dir, l1, db, tmp_path_factory.getbasetemp())
    planned = [s for s in schedules.values() if plannable(s)]
    assert planned and any(s.num_tiles > 2 for s in planned)
    if db:
        planned = [schedule_layer(s.spec, s.l1, s.l2, {}, True) for s in planned]
        assert any(s.double_buffer and max(x.copies for x in s.slots) == 2 for s in planned)
    for sched in planned:
        plan = dma_plan(sched)
        assert len(plan.tiles) == sched.num_tiles
        homes = [np.arange(s.operand.nbytes, dtype=np.int64) for s in sched.slots]
        held = {(s.index, k): np.full(s.slot_bytes, -1, np.int64) for s in sched.slots for k in range(s.copies)}
        unwaited, writing = set(), set()     # slots with loads / write-backs in flight

        def issue(copies):
            for c in copies:
                _replay(c, homes[c.operand], held[(c.operand, c.slot)])
                (unwaited if c.load else writing).add((c.operand, c.slot))

        issue(plan.before)
        moved = sum(c.bytes for c in plan.before)
        for tile, (_, cls, ranges) in zip(plan.tiles, sched.tiles()):
            assert tile.cls == cls
            issue(tile.loads)
            bound = {(o, k) for o, k in enumerate(tile.slots)}
            assert tile.wait or not unwaited & bound, tile
            unwaited = set() if tile.wait else unwaited
            writing -= set(tile.reuse)
            assert not writing & bound, (tile, writing)
            for s in sched.slots:
                op = s.operand
                box = tuple(slice(*a.range(*ranges[a.dim])) if a.dim is not None else slice(0, a.size)
                            for a in op.axes)
                view = np.arange(op.nbytes, dtype=np.int64).reshape(op.shape + (op.elem_bytes,))[box].ravel()
                if op.role == OUTPUT:      # the slot's bytes land exactly on the box
                    slot = held[(s.index, tile.slots[s.index])]
                    slot[:] = np.arange(slot.size) + 10 ** 9
                    back = np.full(op.nbytes, -1, np.int64)
                    for c in tile.stores:
                        if c.operand == s.index:
                            assert c.slot == tile.slots[s.index]
                            _replay(c, back, slot)
                    assert (back[view] == slot[:view.size]).all() and (back >= 0).sum() == view.size, op.tensor
                else:                      # the slot the kernel reads holds the box, in C order
                    assert (held[(s.index, tile.slots[s.index])][:view.size] == view).all(), (op.tensor, tile)
            issue(tile.prefetch)
            assert not {(c.operand, c.slot) for c in tile.prefetch} & bound, tile
            writing |= {(c.operand, c.slot) for c in tile.stores}
            writing = set() if tile.wait_all else writing
            moved += sum(c.bytes for c in tile.loads + tile.prefetch + tile.stores)
        assert moved == schedule_traffic(sched, loop="code")["L2"]


@pytest.mark.parametrize("role", [INPUT, OUTPUT])
def test_copies_of_strided_boxes(role):
    """Boxes of a rank-5 view: contiguous ones in one transfer, others in rows, planes and further
    levels (unrolled copies); each moves exactly the box."""
    shape, elem = (3, 4, 5, 6, 7), 2
    op = Operand("x", role, elem, tuple(AxisMap(n) for n in shape))
    s = OperandSlots(op, 0, False, 1, op.nbytes, (0,))
    home = np.arange(op.nbytes, dtype=np.int64)
    rng = np.random.default_rng(0)
    for _ in range(200):
        box = []
        for n in shape:
            lo = int(rng.integers(0, n))
            box.append((lo, int(rng.integers(lo + 1, n + 1))))
        view = home.reshape(shape + (elem,))[tuple(slice(*b) for b in box)].ravel()
        copies = box_copies(s, 0, tuple(box))
        assert sum(c.bytes for c in copies) == view.size
        if (np.diff(view) == 1).all():      # contiguous data: one 1-D transfer
            assert len(copies) == 1 and copies[0].rows == copies[0].planes == 1, box
        dense = np.full(view.size, -1, np.int64)
        back = np.full(op.nbytes, -1, np.int64)
        for c in copies:
            if role == INPUT:
                _replay(c, home, dense)
            else:
                _replay(c, back, np.arange(view.size, dtype=np.int64) + 10 ** 9)
        if role == INPUT:
            assert (dense == view).all(), box
        else:
            assert (back[view] == np.arange(view.size) + 10 ** 9).all() and (back >= 0).sum() == view.size, box
    assert box_copies(s, 0, ((0, 3), (1, 1), (0, 5), (0, 6), (0, 7))) == ()     # an empty box moves nothing


def test_one_tile_layers_have_no_tile_loop_overhead(corpus, capsys):
    """microLlama64 at --l1 64000 runs almost every layer as one tile: the straight-line loop
    programs the DMA, waits and forks, so each layer's cycles outside its kernels and its DMA stay a
    few dozen per tile (the table-driven loop spent thousands on each); a layer of more than 8 tiles
    (a planned loop) stays within a few hundred per tile."""
    test_dir = corpus / "Models" / "microLlama" / "INT8" / "microLlama64"
    run_tiled(test_dir, 64000, "L2", False, capsys, profile=True)
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "l1_64000_L2_sb" / _id(test_dir)
    loops = {t["layer"]: t["loop"] for t in json.loads((gen / "network" / "manifest.json").read_text())["tiles"]}
    profile = json.loads((gen / "profile.json").read_text())
    layers = [layer for layer in profile["layers"] if layer.get("tiles")]
    assert layers and sum(len(layer["tiles"]) == 1 for layer in layers) > 0.9 * len(layers)
    for layer in layers:
        per_tile = 100 if loops[layer["name"]] == "code" else 700
        assert layer["overhead"] <= per_tile * len(layer["tiles"]), (layer["name"], loops[layer["name"]], layer["overhead"])
    assert profile["overhead"] <= 0.05 * profile["cycles"], profile["overhead"]


def test_planned_and_straight_line_loops_run_bit_exact(capsys):
    """miniMobileNetv2 at --l1 1000 has layers of up to 8 tiles (straight-line code) and one of 10
    (a planned loop): outputs bit-exact (run_tiled checks), and the code between a planned layer's
    kernels stays a few hundred cycles per tile (the table-driven loop spent about 2000)."""
    run_tiled(MINI, 1000, "L2", True, capsys, profile=True)
    gen = DEEPLOY_TEST / "TEST_SIRACUSA_TILED" / "l1_1000_L2_db" / _id(MINI)
    manifest = json.loads((gen / "network" / "manifest.json").read_text())
    loops = {t["layer"]: t["loop"] for t in manifest["tiles"]}
    assert set(loops.values()) == {"code", "plan"}, loops
    for layer in json.loads((gen / "profile.json").read_text())["layers"]:
        if loops.get(layer["name"]) == "plan":
            between = layer["overhead"] - layer["overhead_setup"]
            assert between <= 700 * len(layer["tiles"]), (layer["name"], between)


def _tiled_layer(net, folder: Path, l1: int, db: bool, capsys) -> tuple[dict, str]:
    """(profile entry, tile loop kind) of the one tiled layer of ``net`` run bit-exactly on 8 cores
    at ``l1`` (``db``: double-buffered), written and generated below ``folder``."""
    test, gen = folder / "net", folder / "gen"
    write_test(net, test)
    tiling = TilingOptions(l1, TilingOptions.l2, "L2", db)
    args = argparse.Namespace(test=str(test), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, l1=tiling.l1, l2=tiling.l2, defaultMemLevel="L2", doublebuffer=db,
                              profileTiling=True, plotMemAlloc=False, timeout=None)
    _check(run_test(args, TILED, {"cores": 8, "tiling": tiling}), capsys.readouterr().out)
    (layer,) = [e for e in json.loads((gen / "profile.json").read_text())["layers"] if e.get("tiles")]
    loops = {t["layer"]: t["loop"] for t in json.loads((gen / "network" / "manifest.json").read_text())["tiles"]}
    return layer, loops[layer["name"]]


@needs_qemu
def test_long_planned_loops_read_their_plan_from_l1(tmp_path, capsys):
    """A planned loop of 64 tiles (a softmax of 512 rows in tiles of 8 at --l1 2400; 2584 bytes of
    steps and copies, TILE_PLAN_L1_BYTES) reads its steps and copies from their L1 copy, issues its
    copies inline and sets only the tile pointers whose slot changes: the code between its kernels
    stays within 160 cycles per tile (123 as built; reading the plan from L2 every tile cost about
    440, a call per phase's copies and every operand's pointer set per tile 230)."""
    layer, loop = _tiled_layer(_softmax(np.random.default_rng(3), (1, 1, 512, 64)), tmp_path, 2400, False, capsys)
    assert loop == "plan" and len(layer["tiles"]) == 64, (loop, len(layer["tiles"]))
    between = layer["overhead"] - layer["overhead_setup"]
    assert between <= 160 * len(layer["tiles"]), between


@needs_qemu
def test_double_buffered_planned_loop_waits_cheaply(tmp_path, capsys):
    """A double-buffered planned loop (a requantised Add of (64, 256) at --l1 8000 --doublebuffer,
    more than 8 tiles) waits before each tile for the write-back of the output slot it reuses:
    the handles of the write-backs are numbered by output, not by operand, so the loop's walk over
    a tile's reuse bits ends after the outputs' two slots. Outputs bit-exact; the code between
    the kernels stays within 240 cycles per tile (224 as built; 272 with the handles numbered by
    operand, 319 before the copies were issued inline)."""
    layer, loop = _tiled_layer(_add(np.random.default_rng(5), (64, 256)), tmp_path, 8000, True, capsys)
    assert loop == "plan" and layer["buffering"] == "DB", (loop, layer["buffering"])
    between = layer["overhead"] - layer["overhead_setup"]
    assert between <= 240 * len(layer["tiles"]), between
