"""Held double buffering (Deeploy/tiling/solver.py): a double-buffered layer keeps the inputs whose
tile stays the same from one tile to the next (they do not depend on the loop order's innermost
tiled dim) in one L1 slot, loaded anew after the tile before finishes, and double-buffers the
others; a layer that cannot fit two copies of every operand still hides the DMA of the operand it
streams. The tiler prices it and chooses it where it pays; the tile loop runs it bit-exactly."""

from __future__ import annotations

from dataclasses import replace

from Deeploy.targets.siracusa.platform import VIRTUAL_PLATFORM_L1
from Deeploy.tiling import evaluate, layer_spec, solve_spec
from Deeploy.tiling.network import with_kernel_cycles
from Deeploy.tiling.schedule import schedule_layer
from DeeployTest.test_suite.test_dma_plan import MINI, _schedules
from DeeployTest.test_suite.test_siracusa_tiled import run_tiled
from DeeployTest.test_suite.test_tiling_model import lowered

L1 = 2000


def _expand():
    """miniMobileNetv2's first 1x1 expansion convolution, as the tiler sees it at --l1 2000."""
    graph = lowered(MINI)
    node = next(n for n in graph.nodes if n.name == "block0.expand")
    params = replace(VIRTUAL_PLATFORM_L1, capacity=L1, buffering="auto")
    return with_kernel_cycles(layer_spec(node, graph), node, graph, params), params


def test_held_inputs_take_one_slot_and_are_priced_exposed():
    """At --l1 2000 the tiles of block0.expand walk the rows inside the output channels, so the
    weights and per-channel constants change only with the channel tile: held in one slot, the
    activation tiles double-buffered. The layer costs less so than double-buffering everything
    with the tiles that fit (or than single buffering); the held slot's reloads after the first
    are priced as exposed DMA (its footprint: one copy of each held input)."""
    spec, params = _expand()
    sol = solve_spec(spec, params, cache=False)
    held = {b.tensor for b in sol.buffers if b.held}
    assert sol.double_buffered and held == {"block0.expand.weight_hwc", "block0.expand.rqs.mul",
                                            "block0.expand.rqs.add"}, sol.summary()
    assert all(b.copies == (1 if b.held else 2) for b in sol.buffers), sol.summary()
    assert sol.l1_bytes <= L1
    tiles, order = sol.tile_sizes, sol.loop_order
    full = evaluate(spec, tiles, replace(params, capacity=10 ** 6), order, True)
    assert full.l1_bytes > L1 >= sol.l1_bytes == full.l1_bytes - sum(b.tile_bytes for b in sol.buffers if b.held)
    single = evaluate(spec, tiles, params, order, False)
    assert sol.total_cycles < single.total_cycles
    reloads = sum(b.dma_cycles for b in sol.buffers if b.held)
    assert full.total_cycles <= sol.total_cycles <= full.total_cycles + reloads
    # the schedule gives the held inputs one slot, the others two
    sched = schedule_layer(spec, sol, None, {}, True)
    assert {s.operand.tensor: s.copies for s in sched.slots} == {b.tensor: b.copies for b in sol.buffers}


def test_held_layers_run_bit_exact(tmp_path_factory, capsys):
    """miniMobileNetv2 at --l1 2000, double-buffered, has held layers (one slot for an input whose
    tile changes): outputs bit-exact (run_tiled checks them against the goldens)."""
    schedules = _schedules(MINI, L1, True, tmp_path_factory.mktemp("held"))
    held = [k for k, s in schedules.items() if any(b.held for b in s.l1.buffers)]
    assert held, "no layer holds an input at --l1 2000"
    run_tiled(MINI, L1, "L2", True, capsys)


def test_no_held_inputs_where_work_stays_in_flight():
    """``hold=False`` (the tiler's parameters for an engine whose tile kernels return with work in
    flight, ``Engine.tile_sync``: the next tile's reload of a held input would overwrite what that
    work reads) leaves every changing input of a double-buffered layer two slots."""
    spec, params = _expand()
    sol = solve_spec(spec, replace(params, hold=False), cache=False)
    assert not any(b.held for b in sol.buffers), sol.summary()
