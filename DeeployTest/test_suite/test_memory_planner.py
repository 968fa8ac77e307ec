"""The static planner: live buffers never overlap, the arena is close to the peak of live
bytes, views share their input's storage, graph inputs and outputs stay dedicated."""

from __future__ import annotations

import numpy as np
import pytest

from Deeploy.binding import bind
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.frontend.io_data import load_npz_arrays, map_arrays
from Deeploy.memory.lifetimes import Interval, alias_roots, lifetimes
from Deeploy.memory.planner import BufferKind, peak_live_bytes, place_intervals, plan_memory
from Deeploy.passes.manager import run_passes
from Deeploy.targets import get_platform
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, network_dirs

NETWORKS = network_dirs(DEEPLOY_TEST, "Tests/Models") + network_dirs(CORPUS, "Models/miniMobileNetv2")


def _check_placement(intervals, offsets):
    for i, a in enumerate(intervals):
        for j in range(i + 1, len(intervals)):
            b = intervals[j]
            if a.overlaps(b) and a.size and b.size:
                oa, ob = offsets[i], offsets[j]
                assert oa + a.size <= ob or ob + b.size <= oa, (a, b, oa, ob)


def test_random_intervals_never_collide():
    rng = np.random.default_rng(0)
    for _ in range(50):
        ivs = []
        for k in range(40):
            first = int(rng.integers(0, 30))
            ivs.append(Interval(f"t{k}", int(rng.integers(1, 500)) * 4, first, first + int(rng.integers(0, 8))))
        offsets, total = place_intervals(ivs, 4)
        _check_placement(ivs, offsets)
        assert total >= peak_live_bytes(ivs)
        assert all(off % 4 == 0 for off in offsets)


def test_chain_reuses_memory():
    ivs = [Interval(f"t{k}", 100, k, k + 1) for k in range(10)]  # each lives two steps
    offsets, total = place_intervals(ivs, 4)
    assert total == peak_live_bytes(ivs) == 200


@pytest.mark.parametrize("test_dir", NETWORKS, ids=[p.name for p in NETWORKS])
def test_network_plan_is_valid(test_dir):
    platform = get_platform("Generic")
    graph = load_onnx(test_dir / "network.onnx")
    npz = test_dir / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    infer_graph(graph)
    graph = run_passes(graph, platform.passes)
    layers = bind(graph, platform)
    plan = plan_memory(graph, layers, platform.level("L2"))
    roots = alias_roots(graph)
    sizes = {n: p for n, p in plan.placements.items() if p.kind == BufferKind.ACTIVATION and n not in roots}
    ivs = lifetimes(graph, {n: graph.tensors[n].nbytes for n in sizes}, roots)
    _check_placement(ivs, [plan.placements[iv.name].offset for iv in ivs])
    assert plan.lower_bound <= plan.arena_size <= 1.25 * plan.lower_bound + 64
    for name, root in roots.items():
        assert plan.placements[name] == plan.placements[root]
    for k, name in enumerate(graph.outputs):
        assert plan.placements[name].kind == "output" and plan.placements[name].index == k
