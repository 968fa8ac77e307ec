"""The tiling model (Deeploy/tiling): on every layer of the test networks after the Siracusa
passes, solutions exist at L1 = 64000 and 16000 (or a TilingError whose smallest --l1 is verified
by re-solving), every tile fits, the tile loop covers the tensors exactly and moves what the model
says, input tiles hold everything their output tile depends on (checked with the op references),
the CP-SAT optimum is the brute-force optimum, results are deterministic, and the objective
prefers fewer, larger tiles when memory allows. Also: exhaustive dispatch, error messages, the
two-level (L3 -> L2 -> L1) tiling, and the time and memory to tile microLlama128."""

from __future__ import annotations

import functools
import itertools
import json
import math
import os
import resource
import subprocess
import sys
import time
import tracemalloc
from dataclasses import replace
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from Deeploy.errors import TilingError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir.dtypes import computed
from Deeploy.ir.graph import Node
from Deeploy.binding import bind
from Deeploy.ops import get_op, op_named
from Deeploy.passes.manager import run_passes
from Deeploy.targets.siracusa.platform import L3_STAGING, SIRACUSA, SIRACUSA_L1, SIRACUSA_PASSES
from Deeploy.tiling import (FAMILIES, RuleContext, cache_info, clear_cache, evaluate, layer_spec,
                            min_footprint, operand_ranges, restrict, solve_spec, solve_two_level, tile_graph,
                            tile_layer, tile_ranges)
from Deeploy.tiling.solver import _Problem
from Deeploy.tiling.spec import INPUT, OUTPUT
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, REPO, network_dirs

NETWORKS = network_dirs(DEEPLOY_TEST, "Tests/Models") + [
    CORPUS / "Models/microLlama/INT8/microLlama64_parallel",
    CORPUS / "Models/microLlama/INT8/microLlama128",
    CORPUS / "Models/miniMobileNetv2",
]
NETWORKS = [p for p in NETWORKS if (p / "network.onnx").is_file()]
IDS = [str(p.relative_to(p.parents[2])) for p in NETWORKS]
CAPACITIES = (64000, 16000)
TINY = 200


@functools.lru_cache(maxsize=None)
def lowered(path: Path):
    graph = load_onnx(path / "network.onnx")
    inputs = map_arrays(path / "inputs.npz", load_npz_arrays(path / "inputs.npz"), graph.inputs, graph, "input")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    return run_passes(graph, SIRACUSA_PASSES)


def _solve_or_min(spec, capacity):
    """The solution, or (after checking the error's smallest --l1 by re-solving at it and one byte
    less) the solution at that smallest capacity."""
    params = replace(SIRACUSA_L1, capacity=capacity)
    try:
        return solve_spec(spec, params)
    except TilingError as err:
        assert err.layer == spec.layer and err.min_bytes is not None and err.min_bytes > capacity
        assert f"the smallest --l1 that fits is {err.min_bytes} B" in str(err)
        with pytest.raises(TilingError):
            solve_spec(spec, replace(params, capacity=err.min_bytes - 1), cache=False)
        return solve_spec(spec, replace(params, capacity=err.min_bytes), cache=False)


# ---- simulation of the tile loop --------------------------------------------------------------
def simulate(spec, sol):
    """Run the tile loop over index ranges: every tile fits its buffer, outputs are covered
    exactly once, inputs cover every index any output needs, and the transfers and bytes moved
    (a transfer whenever an operand's tile changes) are those the model reports."""
    assert sol.l1_bytes == sum(b.l1_bytes for b in sol.buffers) + sol.scratch_bytes <= sol.capacity
    ops = [o for o in spec.operands if o.nbytes > 0]
    assert [b.tensor for b in sol.buffers] == [o.tensor for o in ops]
    sizes = dict(zip(sol.dims, sol.sizes))
    order = sol.loop_order
    per_dim = [tile_ranges(sizes[d], sol.tile_of(d)) for d in order]
    assert math.prod(len(r) for r in per_dim) == sol.num_tiles
    counts = {i: np.zeros(o.shape, dtype=np.int32) for i, o in enumerate(ops) if o.role == OUTPUT}
    covered = {i: np.zeros(o.shape, dtype=bool) for i, o in enumerate(ops) if o.role == INPUT}
    previous = [None] * len(ops)
    transfers, moved = [0] * len(ops), [0] * len(ops)
    for combo in itertools.product(*per_dim):
        ranges = dict(zip(order, combo))
        for i, (o, buf) in enumerate(zip(ops, sol.buffers)):
            rng = operand_ranges(o, ranges)
            ext = [b - a for a, b in rng]
            assert all(e <= m for e, m in zip(ext, buf.tile_shape)), (o.tensor, ext, buf.tile_shape)
            assert o.elem_bytes * math.prod(ext) <= buf.tile_bytes
            if rng != previous[i]:
                previous[i] = rng
                if math.prod(ext):
                    transfers[i] += 1
                    moved[i] += o.elem_bytes * math.prod(ext)
                    sl = tuple(slice(a, b) for a, b in rng)
                    if o.role == OUTPUT:
                        counts[i][sl] += 1
                    else:
                        covered[i][sl] = True
    for i, o in enumerate(ops):
        assert (transfers[i], moved[i]) == (sol.buffers[i].transfers, sol.buffers[i].moved_bytes), o.tensor
        if o.role == OUTPUT:
            assert (counts[i] == 1).all(), o.tensor     # K tiles accumulate into one resident tile
        else:
            need = np.ones(o.shape, dtype=bool)
            for k, a in enumerate(o.axes):
                if a.dim is None:
                    continue
                axis = np.zeros(a.size, dtype=bool)
                for idx in range(sizes[a.dim]):
                    lo, hi = a.range(idx, idx + 1)
                    axis[lo:hi] = True
                need &= axis.reshape([-1 if j == k else 1 for j in range(len(o.axes))])
            assert covered[i][need].all(), o.tensor


# ---- dependency check with the op references ------------------------------------------------
def _random_inputs(graph, node, rng):
    xs = []
    for name in node.inputs:
        if not name:
            xs.append(None)
            continue
        t = graph.tensors[name]
        if t.is_constant:
            xs.append(computed(t.value, t.dtype).reshape(t.shape))
        elif t.dtype.is_float:
            xs.append(rng.standard_normal(t.shape).astype(np.float32))
        else:
            xs.append(rng.integers(t.dtype.min, t.dtype.max, size=t.shape, endpoint=True, dtype=np.int64))
    return xs


def check_dependencies(graph, node, spec, sol, rng, samples=4):
    """For sampled tiles: randomise every input element outside the tile's input ranges and re-run
    the op's reference; the output tile must not change (the input tiles hold everything it
    depends on: halos, concat parts, slices, per-channel constants, whole rows...)."""
    if sol.zero_copy or node.op in ("Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"):
        return
    op_def = get_op(node)
    xs = _random_inputs(graph, node, rng)
    base = op_def.reference(node.params, xs)[0]
    ops = [o for o in spec.operands if o.nbytes > 0]
    sizes = dict(zip(sol.dims, sol.sizes))
    per_dim = [tile_ranges(sizes[d], sol.tile_of(d)) for d in sol.dims]
    tiles = list(itertools.product(*per_dim))
    picks = sorted({0, len(tiles) - 1, len(tiles) // 2, len(tiles) // 3})[:samples]
    out = [o for o in ops if o.role == OUTPUT][0]
    for k in picks:
        ranges = dict(zip(sol.dims, tiles[k]))
        for d in sol.dims:                 # the output tile accumulates over all K tiles
            if spec.dim(d).reduction:
                ranges[d] = (0, sizes[d])
        masks = {}
        for o in ops:
            if o.role != INPUT:
                continue
            mask = np.zeros(o.shape, dtype=bool)
            mask[tuple(slice(a, b) for a, b in operand_ranges(o, ranges))] = True
            masks[o.tensor] = masks.get(o.tensor, False) | mask.reshape(-1)
        noisy = []
        for name, x in zip(node.inputs, xs):
            if x is None or name not in masks:
                noisy.append(x)
                continue
            t = graph.tensors[name]
            if t.dtype.is_float:
                noise = (rng.standard_normal(x.size) * 100).astype(np.float32)
            else:
                lo, hi = t.dtype.min, t.dtype.max
                if t.is_constant:
                    lo, hi = int(x.min()), int(x.max())   # keep constants within their own range
                noise = rng.integers(lo, hi, size=x.size, endpoint=True, dtype=np.int64)
            noisy.append(np.where(masks[name], x.reshape(-1), noise).reshape(x.shape))
        got = op_def.reference(node.params, noisy)[0]
        box = tuple(slice(a, b) for a, b in operand_ranges(out, ranges))
        assert np.array_equal(got.reshape(out.shape)[box], base.reshape(out.shape)[box], equal_nan=got.dtype.kind == "f"), \
            (node.name, tiles[k])


# ---- every layer of every network ------------------------------------------------------------
@pytest.mark.parametrize("capacity", CAPACITIES)
@pytest.mark.parametrize("net", NETWORKS, ids=IDS)
def test_every_layer_tiles_fits_and_covers(net, capacity):
    graph = lowered(net)
    rng = np.random.default_rng(1)
    clear_cache()
    checked = set()
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        sol = _solve_or_min(spec, capacity)
        assert sol.layer == node.name and sol.op == node.op
        if spec.zero_copy:
            assert sol.zero_copy and sol.num_tiles == 0 and sol.total_cycles == 0
            continue
        assert sol.total_cycles == sol.compute_cycles + sol.overhead_cycles + sol.dma_cycles
        assert sol.dma_cycles <= sol.dma_busy_cycles
        simulate(spec, sol)
        if spec.signature() not in checked:          # identical layers: checked once
            checked.add(spec.signature())
            again = solve_spec(spec, replace(SIRACUSA_L1, capacity=sol.capacity), cache=False)
            assert again == sol, "not deterministic"
            assert evaluate(spec, sol.tile_sizes, replace(SIRACUSA_L1, capacity=sol.capacity), sol.loop_order,
                            sol.double_buffered, any(b.held for b in sol.buffers)) == replace(sol, optimal=True)
            check_dependencies(graph, node, spec, sol, rng)


KERNELS = network_dirs(DEEPLOY_TEST, "Tests/Kernels") + network_dirs(CORPUS, "Kernels/Integer")


@pytest.mark.parametrize("lower", (True, False), ids=("siracusa_passes", "as_loaded"))
@pytest.mark.parametrize("kernel", KERNELS, ids=[str(p.relative_to(p.parents[2])) for p in KERNELS])
def test_every_rule_on_single_op_tests(kernel, lower):
    """Every op family and variant (NCHW and channels-last convolutions, grouped, depthwise, 1-D,
    strided, dilated, padded; GEMM with K tiled; broadcasts; negative-step slices; zero-sized
    concat parts; ...), with and without the Siracusa passes, at a roomy, a small and a tiny L1:
    the tile loop fits and covers, and tiles hold their dependencies."""
    graph = load_onnx(kernel / "network.onnx")
    inputs = map_arrays(kernel / "inputs.npz", load_npz_arrays(kernel / "inputs.npz"), graph.inputs, graph, "input")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    if lower:
        graph = run_passes(graph, SIRACUSA_PASSES)
    rng = np.random.default_rng(2)
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        for capacity in (64000, 2000, 300):
            sol = _solve_or_min(spec, capacity)
            if not spec.zero_copy:
                simulate(spec, sol)
                check_dependencies(graph, node, spec, sol, rng)


@pytest.mark.parametrize("net", NETWORKS, ids=IDS)
def test_objective_prefers_fewer_larger_tiles(net):
    """More memory never costs cycles and, over the network, never adds tiles; the chosen tiling
    is never slower than the smallest-footprint one and, over the network, has fewer tiles."""
    graph = lowered(net)
    tiles = {capacity: 0 for capacity in CAPACITIES}
    smallest_tiles = 0
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        if spec.zero_copy:
            continue
        roomy, tight = (solve_spec(spec, replace(SIRACUSA_L1, capacity=c)) for c in CAPACITIES)
        assert roomy.total_cycles <= tight.total_cycles
        smallest = min_footprint(spec, SIRACUSA_L1)
        assert roomy.total_cycles <= smallest.total_cycles and tight.total_cycles <= smallest.total_cycles
        tiles[CAPACITIES[0]] += roomy.num_tiles
        tiles[CAPACITIES[1]] += tight.num_tiles
        smallest_tiles += smallest.num_tiles
    assert tiles[64000] <= tiles[16000] < smallest_tiles


def test_dma_bound_layer_uses_few_large_tiles():
    """A big RequantShift is DMA bound: with room, few tiles (per-tile overhead and DMA set-up
    make tiny tiles expensive) and far fewer cycles than its smallest tiles."""
    graph = lowered(CORPUS / "Models/microLlama/INT8/microLlama128")
    node = max((n for n in graph.nodes if n.op == "RequantShift"), key=lambda n: graph.tensors[n.outputs[0]].size)
    spec = layer_spec(node, graph)
    sol = solve_spec(spec, SIRACUSA_L1)
    smallest = min_footprint(spec, SIRACUSA_L1)
    assert sol.num_tiles <= 8 < smallest.num_tiles
    assert sol.total_cycles * 4 < smallest.total_cycles
    # cycles grow once the tiles get small: the objective is not "the largest footprint"
    (dim,) = spec.dim_names
    prob = _Problem(spec, SIRACUSA_L1)
    cycles = [evaluate(spec, {dim: t}, SIRACUSA_L1).total_cycles for t in prob.cands[dim]]
    assert cycles[-1] == max(cycles) and cycles.index(min(cycles)) == prob.cands[dim].index(sol.tile_of(dim))


@pytest.mark.parametrize("net", [n for n in NETWORKS if n.name in ("CCT", "ResNet8", "microLlama128")],
                         ids=lambda p: p.name)
def test_cp_sat_optimum_is_the_brute_force_optimum(net):
    """The CP-SAT model (Pareto options, L1 as the sum of the buffers) finds the cheapest option
    that fits among all options of the grid; the model without the Pareto reduction agrees."""
    graph = lowered(net)
    seen = set()
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        if spec.zero_copy or spec.signature() in seen:
            continue
        seen.add(spec.signature())
        for capacity in (16000, 6000):
            params = replace(SIRACUSA_L1, capacity=capacity)
            prob = _Problem(spec, params)
            fits = [o for o in prob.options(pareto=False) if o[3] <= capacity]
            try:
                sol = solve_spec(spec, params, cache=False)
            except TilingError:
                assert not fits
                continue
            best = min(fits, key=lambda o: o[4])
            assert sol.total_cycles == best[4] // prob._width
            assert sol.tile_sizes == {d: prob.cands[d][k] for d, k in prob.choice(best[0]).items()}
            if len(fits) < 600:
                built = prob.model("cycles", capacity, pareto=False)
                assert built.solve(params).value(built.cost) == best[4]


def test_cp_sat_model_is_the_one_cp_model_builds(monkeypatch):
    """``tiling/cpsat.py`` writes the same model proto as OR-Tools' ``cp_model.CpModel`` for the
    tiler's calls (variables, linear equalities, exactly-one, objective, decision strategy)."""
    from ortools.sat.python import cp_model
    from Deeploy.tiling import cpsat
    graph = lowered(DEEPLOY_TEST / "Tests/Models/ResNet8")
    specs = {s.signature(): s for s in (layer_spec(n, graph) for n in graph.nodes) if not s.zero_copy}
    for spec in specs.values():
        for objective, capacity in (("cycles", 16000), ("footprint", None)):
            prob = _Problem(spec, replace(SIRACUSA_L1, capacity=16000))
            ours = prob.model(objective, capacity).model.proto
            with monkeypatch.context() as m:
                m.setattr(cpsat, "CpModel", cp_model.CpModel)
                m.setattr(cpsat, "weighted_sum", cp_model.LinearExpr.weighted_sum)
                theirs = prob.model(objective, capacity).model.proto
            assert str(ours) == str(theirs)


def test_auto_buffering_is_never_worse():
    graph = lowered(DEEPLOY_TEST / "Tests/Models/ResNet8")
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        results = {}
        for mode in ("double", "single", "auto"):
            try:
                results[mode] = solve_spec(spec, replace(SIRACUSA_L1, capacity=8000, buffering=mode)).total_cycles
            except TilingError:
                results[mode] = math.inf
        assert results["auto"] == min(results.values())


# ---- convolution halos -------------------------------------------------------------------------
def test_convolution_halos_are_exact():
    """Interior input tiles of a tiled convolution span (t-1)*stride + (k-1)*dilation + 1 rows;
    border tiles are clipped by the padding."""
    seen = 0
    for net in NETWORKS:
        graph = lowered(net)
        for node in graph.nodes:
            if node.op != "RequantizedConv":
                continue
            p = node.params.base
            spec = layer_spec(node, graph)
            sol = solve_spec(spec, replace(SIRACUSA_L1, capacity=4000))
            t = sol.tile_of("OH")
            x = spec.operands[0]
            rows = x.axes[1] if p.channels_last else x.axes[2]
            ranges = tile_ranges(p.out_hw[0], t)
            for lo, hi in ranges:
                a, b = rows.range(lo, hi)
                want_lo = lo * p.stride[0] - p.pads[0]
                want_hi = (hi - 1) * p.stride[0] - p.pads[0] + (p.kernel[0] - 1) * p.dilation[0] + 1
                assert (a, b) == (max(0, want_lo), min(p.in_hw[0], want_hi))
                if want_lo >= 0 and want_hi <= p.in_hw[0]:
                    assert b - a == (hi - lo - 1) * p.stride[0] + (p.kernel[0] - 1) * p.dilation[0] + 1
            seen += len(ranges) > 1
    assert seen > 0


# ---- errors and dispatch -----------------------------------------------------------------------
def test_every_siracusa_op_has_a_tiling_family():
    missing = {op for op in SIRACUSA.bindings if op_named(op).tiling not in FAMILIES}
    assert not missing, missing


def test_op_without_rule_raises_naming_it():
    graph = lowered(DEEPLOY_TEST / "Tests/Models/ResNet8")
    node = graph.nodes[0]
    fake = Node("mystery_layer", "FancyOp", node.inputs, node.outputs, params=node.params)
    with pytest.raises(TilingError, match="layer 'mystery_layer': operator FancyOp has no tiling rule"):
        layer_spec(fake, graph)


def _softmax_graph(tmp_path, width):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, width])
    node = helper.make_node("iSoftmax", ["x"], ["y"], name="wide_softmax", coeffA=1, coeffB=85, coeffC=3778,
                            log2=63, n_levels=256)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    graph = load_onnx(tmp_path / "m.onnx")
    assign_input_types(graph, {"x": np.zeros((1, 4, width), dtype=np.int64) - 5})
    infer_graph(graph)
    return run_passes(graph, SIRACUSA_PASSES)


def test_reduced_axis_error_names_layer_constraint_and_smallest_l1(tmp_path):
    graph = _softmax_graph(tmp_path, 4096)
    node = graph.nodes[0]
    ctx = RuleContext(bind(graph, SIRACUSA, 8)[0].scratch)
    assert ctx.scratch > 0  # the kernel's scratch counts
    with pytest.raises(TilingError) as info:
        tile_layer(node, graph, replace(SIRACUSA_L1, capacity=8000), ctx)
    err = info.value
    text = str(err)
    assert "layer 'wide_softmax' (iSoftmax)" in text and "L1 = 8000 B" in text
    assert "the reduced axis of iSoftmax (4096 elements) stays whole" in err.details   # under -v
    assert "input 'x' 2 x 4096 B" in err.details and "output 'y' 2 x 4096 B" in err.details
    assert err.min_bytes == 2 * 4096 + 2 * 4096 + ctx.scratch
    assert f"the smallest --l1 that fits is {err.min_bytes} B" in text
    ok = tile_layer(node, graph, replace(SIRACUSA_L1, capacity=err.min_bytes), ctx, cache=False)
    assert ok.l1_bytes == err.min_bytes and ok.tile_of("rows") == 1
    with pytest.raises(TilingError):
        tile_layer(node, graph, replace(SIRACUSA_L1, capacity=err.min_bytes - 1), ctx, cache=False)
    # single buffering needs one copy of each row
    single = replace(SIRACUSA_L1, capacity=2 * 4096 + ctx.scratch, buffering="single")
    assert tile_layer(node, graph, single, ctx).l1_bytes == 2 * 4096 + ctx.scratch


@pytest.mark.parametrize("net", [n for n in NETWORKS if n.name in ("miniMobileNetv2", "microLlama128", "CCT")],
                         ids=lambda p: str(p.relative_to(p.parents[2])))
def test_tiny_l1_errors_give_the_smallest_l1(net):
    """Far below --l1 8000: every layer either fits or names its smallest --l1, verified."""
    graph = lowered(net)
    failures = 0
    for node in graph.nodes:
        spec = layer_spec(node, graph)
        try:
            solve_spec(spec, replace(SIRACUSA_L1, capacity=TINY))
        except TilingError as err:
            failures += 1
            assert err.layer == node.name and err.op == node.op and err.capacity == TINY
            assert err.min_bytes == min_footprint(spec, SIRACUSA_L1).l1_bytes
            sol = _solve_or_min(spec, TINY)
            assert sol.l1_bytes == err.min_bytes
    assert failures > 0


# ---- two levels --------------------------------------------------------------------------------
def test_two_level_tiling_from_l3():
    graph = lowered(DEEPLOY_TEST / "Tests/Models/ResNet8")
    node = next(n for n in graph.nodes if n.name == "stage0.conv1")
    spec = layer_spec(node, graph)
    total = sum(o.nbytes for o in spec.operands)
    result = solve_two_level(spec, l2_bytes=total // 2, l1=replace(SIRACUSA_L1, capacity=8000), staging=L3_STAGING)
    assert result.l2.level == "L2" and result.l2.num_tiles > 1 and result.l2.l1_bytes <= total // 2
    assert result.l2.scratch_bytes == 0
    assert result.l1.level == "L1" and result.l1.l1_bytes <= 8000
    inner = restrict(spec, result.l2.tile_sizes)
    simulate(inner, result.l1)
    simulate(replace(spec, scratch=0), result.l2)
    assert result.total_cycles >= result.l2.num_tiles * result.l1.compute_cycles
    with pytest.raises(TilingError, match="smallest --l2 that fits"):
        solve_two_level(spec, l2_bytes=64, l1=SIRACUSA_L1, staging=L3_STAGING)


# ---- time and memory ----------------------------------------------------------------------------
def test_tiling_microllama128_time_and_memory():
    """Tiling every layer of microLlama128 (corpus, 329 layers): as the compiler would (rules, then
    solving with identical layers sharing one solve, cold cache) and with every layer solved on
    its own; then the peak memory of one pass (traced separately: tracing slows Python)."""
    graph = lowered(CORPUS / "Models/microLlama/INT8/microLlama128")
    clear_cache()
    start = time.perf_counter()
    tiled = tile_graph(graph, SIRACUSA_L1)
    pipeline = time.perf_counter() - start
    specs = [layer_spec(n, graph) for n in graph.nodes]
    start = time.perf_counter()
    each = [solve_spec(s, SIRACUSA_L1, cache=False) for s in specs]
    uncached = time.perf_counter() - start
    assert list(tiled.values()) == each
    clear_cache()
    tracemalloc.start()
    tile_graph(graph, SIRACUSA_L1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    solving = sum(s.solve_seconds for s in each)
    print(f"\ntiling microLlama128 ({len(specs)} layers, {sum(not s.zero_copy for s in each)} tiled, L1 "
          f"{SIRACUSA_L1.capacity} B): {pipeline:.2f} s rules + solves (identical layers solved once, "
          f"{cache_info()} distinct), {uncached:.2f} s solving every layer on its own "
          f"({solving:.2f} s in the solver, max {max(s.solve_seconds for s in each) * 1000:.0f} ms per layer); "
          f"peak traced Python memory {peak / 2**20:.1f} MiB, process max RSS {rss:.0f} MiB")


def test_same_tiles_in_a_fresh_process():
    """Determinism across processes (hash seeds): a fresh interpreter gives the same tilings."""
    net = CORPUS / "Models/microLlama/INT8/microLlama128"
    graph = lowered(net)
    here = [[s.layer, list(s.tile), list(s.loop_order), s.double_buffered, s.total_cycles, s.l1_bytes]
            for s in (tile_layer(n, graph, SIRACUSA_L1) for n in graph.nodes)]
    code = f"""
import json, sys
sys.path.insert(0, {str(REPO)!r})
from DeeployTest.test_suite.test_tiling_model import lowered
from Deeploy.tiling import tile_layer
from Deeploy.targets.siracusa.platform import SIRACUSA_L1
from pathlib import Path
g = lowered(Path({str(net)!r}))
print(json.dumps([[s.layer, list(s.tile), list(s.loop_order), s.double_buffered, s.total_cycles, s.l1_bytes]
                  for s in (tile_layer(n, g, SIRACUSA_L1) for n in g.nodes)]))
"""
    env = dict(os.environ, PYTHONHASHSEED="12345")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == here
