"""Memory planning is a function (``memory/planner.py``): ``plan_memory`` maps the graph, its
layers, the levels and a ``Placement`` to a read-only ``MemoryPlan`` and changes none of its
inputs; the decisions that depend on a plan (constants moved to L3 to fit ``--l2``, the weight
memory's contents) are read from one and planned again, never written into it."""

from __future__ import annotations

import dataclasses

import pytest

from Deeploy.binding import bind
from Deeploy.compiler import plan_network
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.frontend.io_data import load_npz_arrays, map_arrays
from Deeploy.memory.planner import BufferKind, Placement, arena_scratch, choose_streams, plan_memory
from Deeploy.passes.graph_outputs import copy_shared_outputs
from Deeploy.passes.loop_rolling import roll_loops
from Deeploy.passes.manager import run_passes
from Deeploy.passes.region_schedule import schedule_regions, stack_types
from Deeploy.targets import get_platform
from Deeploy.tiling.network import TilingOptions, spill_constants, staging_budget
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST
from DeeployTest.test_suite.test_rolled import AUTO

LLAMA = CORPUS / "Models/microLlama/INT8/microLlama64"
KWS = DEEPLOY_TEST / "Tests" / "Models" / "KWS_DSCNN"


def _bound(test_dir, target, rolled: bool = False):
    graph = load_onnx(test_dir / "network.onnx")
    npz = test_dir / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    infer_graph(graph)
    graph = run_passes(graph, (*target.passes, copy_shared_outputs), None)
    if rolled:
        graph, _ = roll_loops(graph, AUTO)
    graph = stack_types(schedule_regions(graph))
    return graph, bind(graph, target, 8)


def _fingerprint(graph, layers) -> tuple:
    """What planning could change of its inputs: nodes, tensors, regions and the layers."""
    nodes = tuple((n.name, n.op, tuple(n.inputs), tuple(n.outputs), repr(sorted(n.attrs.items())), repr(n.params))
                  for n in graph.nodes)
    tensors = tuple((t.name, t.shape, t.dtype, t.is_constant) for t in graph.tensors.values())
    return (nodes, tensors, tuple(graph.inputs), tuple(graph.outputs), repr(graph.regions),
            tuple((layer.node.name, layer.variant, layer.scratch, layer.shared_offset) for layer in layers))


@pytest.fixture(scope="module")
def rolled_llama():
    if not LLAMA.is_dir():
        pytest.skip(f"{LLAMA} not found")
    target = get_platform("Siracusa")
    return (*_bound(LLAMA, target, rolled=True), target)


def _decisions(graph, l2, l3) -> Placement:
    """Streams of the rolled region (parameters in L3), one more constant moved there, some scratch."""
    streams = choose_streams(graph, l2, l3, {})
    member = {name for s in streams for members in s.members for name, _ in members}
    other = next(t.name for t in graph.constants() if t.name not in member and t.name not in graph.state)
    return Placement(levels={other: "L2"}, streams=streams, scratch={graph.nodes[0].name: 100})


def test_plan_memory_is_a_function_of_its_inputs(rolled_llama):
    """Equal inputs give equal plans; the graph, the layers and the placement stay as they were."""
    graph, layers, target = rolled_llama
    l2, l3 = target.level("L2"), target.level("L3")
    placement = _decisions(graph, l2, l3)
    assert placement.streams and all(s.offset == 0 for s in placement.streams)
    before = _fingerprint(graph, layers)
    first = plan_memory(graph, layers, l2, l3, placement)
    second = plan_memory(graph, layers, l2, l3, placement)
    assert first == second
    assert _fingerprint(graph, layers) == before
    assert placement == _decisions(graph, l2, l3) and all(s.offset == 0 for s in placement.streams)
    # the decisions are followed: streamed members in the arena, the moved constant, the scratch
    member = placement.streams[0].members[0][0][0]
    assert first.placements[member].kind == BufferKind.STREAMED and first.placements[member].level == "L2"
    (moved, level), = placement.levels.items()
    assert first.placements[moved].kind == BufferKind.CONSTANT and first.placements[moved].level == level
    assert graph.nodes[0].name in first.scratch_offsets
    assert any(b.kind == BufferKind.SCRATCH and b.size == 100 for b in first.buffers)


def test_memory_plan_and_placement_are_read_only(rolled_llama):
    graph, layers, target = rolled_llama
    placement = _decisions(graph, target.level("L2"), target.level("L3"))
    plan = plan_memory(graph, layers, target.level("L2"), target.level("L3"), placement)
    name = next(iter(plan.placements))
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.arena_size = 0
    with pytest.raises(TypeError):
        plan.placements[name] = plan.placements[name]
    with pytest.raises(TypeError):
        plan.scratch_offsets["x"] = 0
    with pytest.raises(TypeError):
        plan.stream_buffers["x"] = 0
    assert isinstance(plan.buffers, tuple) and isinstance(plan.streams, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        placement.streams = ()
    with pytest.raises(TypeError):
        placement.levels["x"] = "L3"


def test_spilling_reads_the_plan_and_plans_again():
    """``spill_constants`` names the constants to move and leaves the plan as it was; the plan
    made with them in L3 fits ``--l2``."""
    if not LLAMA.is_dir():
        pytest.skip(f"{LLAMA} not found")
    target = get_platform("Siracusa")
    graph, layers = _bound(LLAMA, target)
    options = TilingOptions(l1=64000, l2=200000)
    l2 = target.level("L2")
    plan = plan_memory(graph, layers, l2, l2, Placement())
    assert staging_budget(graph, plan, options) < 0
    moved = spill_constants(graph, plan, options)
    assert moved
    assert plan == plan_memory(graph, layers, l2, l2, Placement())
    assert {plan.placements[name].level for name in moved} == {"L2"}
    spilled = plan_memory(graph, layers, l2, l2, Placement(levels=dict.fromkeys(moved, "L3")))
    assert {spilled.placements[name].level for name in moved} == {"L3"}
    assert staging_budget(graph, spilled, options) >= 0


def test_weight_memory_is_chosen_on_a_plan_and_planned_again():
    """``place_weights`` returns the blobs for the weight memory and leaves the plan it read as it
    was; ``plan_network`` plans again with them as ``WEIGHT`` placements of that level."""
    target = get_platform("Siracusa_w_neureka").configure(neureka_wmem=True)
    graph, layers = _bound(KWS, target)
    level = target.level(target.default_level)
    plan = plan_memory(graph, layers, level)
    weights, notes = target.place_weights(graph, layers, plan, target, None, 8, None)
    blobs = {layer.node.inputs[1] for layer in layers if layer.node.op == "NeurekaConv"}
    assert blobs and set(weights) == blobs and set(weights.values()) == {"WMEM"} and notes
    assert plan == plan_memory(graph, layers, level)
    assert not any(p.kind == BufferKind.WEIGHT for p in plan.placements.values())
    final, _ = plan_network(graph, layers, target, None, 8)
    assert {n for n, p in final.placements.items() if p.kind == BufferKind.WEIGHT} == blobs
    assert {final.placements[n].level for n in blobs} == {"WMEM"}
    assert final.arena_size == plan.arena_size and final.scratch_offsets == plan.scratch_offsets
    assert final == plan_memory(graph, layers, level, None,
                                Placement(weights=weights, scratch=arena_scratch(layers)))
