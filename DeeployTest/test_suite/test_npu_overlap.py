"""NPU jobs running while the cluster works (GAP9_w_ne16; the NPU code is Neureka's too): the
order that leaves independent layers for a job's flight, the layer left in flight until its reader
(modelled cycles below the parts' sum, bit-exact), none where the reader follows at once, and the
int8 -> uint8 shift folded into a requantising producer or an iRMSNorm."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from Deeploy.reference import run_reference
from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from DeeployTest.test_suite.test_ne16 import _lowered, _run, needs_qemu


def _linear(net: Net, rng, x: str, n: int, name: str) -> str:
    """A requantised linear layer NE16 runs (constant int8 weights, wide enough to pay off)."""
    return net.calib_rqs(net.node("MatMul", [x, net.const(weights(rng, (net.shape(x)[-1], n)), f"{name}.weight")],
                                  name=name), offset_rng=rng, name=f"{name}.rqs")


def _attention(net: Net, rng, a: str, name: str) -> str:
    """A MatMul of two activations (the cluster's: NE16 takes constant weights only)."""
    b = net.input(f"{name}_b", ints_in(rng, -128, 127, (net.shape(a)[-1], 64)))
    return net.calib_rqs(net.node("MatMul", [a, b], name=name), offset_rng=rng, name=f"{name}.rqs")


def _net(parts: str, dependent: bool = False, seed: int = 3, rows: int = 64) -> Net:
    """``parts``: "npu", "cluster" or both: a linear layer on NE16 reading a RequantShift of an
    int32 input, and a MatMul of two activations on the cluster (``rows`` rows), reading an input
    of its own or (``dependent``) the linear layer's output. The graph's order puts the MatMul
    (one level from the inputs) before the linear layer (two levels)."""
    rng = np.random.default_rng(seed)
    net = Net("MatMul")
    acc = net.input("input_0", ints_in(rng, -40000, 40000, (36, 128)).astype(np.int32))
    z = net.input("input_1", ints_in(rng, -128, 127, (rows, 96))) if not dependent else None
    outs = []
    if "npu" in parts:
        outs.append(_linear(net, rng, net.rqs(acc, 3, 500, 10, name="producer"), 96, "proj"))
    if "cluster" in parts:
        outs.append(_attention(net, rng, outs[0] if dependent else z, "scores"))
    net.output(*outs)
    return net


def test_independent_layers_run_in_a_jobs_flight(tmp_path):
    """The cluster layer the graph orders before the linear layer moves after its job (started
    as early as its input allows); one that reads the job stays after it."""
    graph, lowered = _lowered(tmp_path / "free", _net("npu+cluster"))
    names = [n.name for n in graph.nodes]
    assert names.index("scores") < names.index("proj"), names
    assert [n.name for n in lowered.nodes] == ["producer", "proj", "scores"], lowered.nodes
    _, lowered = _lowered(tmp_path / "dependent", _net("npu+cluster", dependent=True))
    assert [n.name for n in lowered.nodes] == ["producer", "proj", "scores"], lowered.nodes


def test_a_requantising_producer_writes_the_jobs_uint8_input(tmp_path):
    """A RequantShift to int8 read only by an NE16 layer writes uint8 itself (adding 128 << shift
    to its offset) instead of a second RequantShift adding 128; the outputs stay the same."""
    graph, lowered = _lowered(tmp_path, _net("npu"))
    assert [(n.op, n.name) for n in lowered.nodes] == [("RequantShift", "producer"), ("Ne16Conv", "proj")]
    assert lowered.tensors[lowered.nodes[0].outputs[0]].dtype.name == "uint8"
    x = {graph.inputs[0]: np.load(tmp_path / "inputs.npz")[np.load(tmp_path / "inputs.npz").files[0]]}
    want, got = run_reference(graph, x), run_reference(lowered, x)
    assert all(np.array_equal(np.asarray(want[o]), np.asarray(got[o])) for o in graph.outputs)


def test_the_shift_folds_through_moves_of_the_requantised_values(tmp_path):
    """Between the requantisation and the linear layer a Transpose and a Reshape (they move values
    only): they move uint8, the requantisation writes it, no shift is left; same outputs."""
    rng = np.random.default_rng(5)
    net = Net("MatMul")
    acc = net.input("input_0", ints_in(rng, -40000, 40000, (2, 64, 36)).astype(np.int32))
    moved = net.node("Transpose", [net.rqs(acc, 3, 500, 10, name="producer")], {"perm": [1, 0, 2]}, name="move")
    flat = net.node("Reshape", [moved, net.const(np.array([64, 72]), "shape", np.int64)], name="flat")
    net.output(_linear(net, rng, flat, 96, "proj"))
    graph, lowered = _lowered(tmp_path, net)
    assert [n.op for n in lowered.nodes] == ["RequantShift", "Transpose", "Reshape", "Ne16Conv"], lowered.nodes
    assert {lowered.tensors[n.outputs[0]].dtype.name for n in lowered.nodes[:3]} == {"uint8"}
    x = {graph.inputs[0]: np.load(tmp_path / "inputs.npz")[np.load(tmp_path / "inputs.npz").files[0]]}
    want, got = run_reference(graph, x), run_reference(lowered, x)
    assert all(np.array_equal(np.asarray(want[o]), np.asarray(got[o])) for o in graph.outputs)


def test_an_rmsnorm_writes_the_jobs_uint8_input(tmp_path):
    """An iRMSNorm to int8 read only by an NE16 layer writes uint8 itself (its output offset 128)
    instead of a RequantShift adding 128 after it; the outputs stay the same."""
    rng = np.random.default_rng(7)
    net = Net("MatMul")
    x = net.input("input_0", ints_in(rng, -128, 127, (36, 128)))
    norm = net.node("iRMSNorm", [x, net.const(ints_in(rng, -8_000_000, 8_000_000, (128,)).astype(np.int32), "w")],
                    {"D": 1 << 16, "n_levels": 256}, name="norm")
    net.output(_linear(net, rng, norm, 96, "proj"))
    graph, lowered = _lowered(tmp_path, net)
    assert [(n.op, n.name) for n in lowered.nodes] == [("iRMSNorm", "norm"), ("Ne16Conv", "proj")], lowered.nodes
    assert lowered.tensors[lowered.nodes[0].outputs[0]].dtype.name == "uint8"
    x = {graph.inputs[0]: np.load(tmp_path / "inputs.npz")[np.load(tmp_path / "inputs.npz").files[0]]}
    want, got = run_reference(graph, x), run_reference(lowered, x)
    assert all(np.array_equal(np.asarray(want[o]), np.asarray(got[o])) for o in graph.outputs)


def _runtime(out: str) -> int:
    return int(re.search(r"^Runtime: (\d+) cycles$", out, re.M).group(1))


def _profile(gen: Path, finish: bool = False) -> dict[str, dict]:
    """The profile's layer rows by name: the layers' own spans, or (``finish``) the waits for their jobs."""
    return {e["name"]: e for e in json.loads((gen / "profile.json").read_text())["layers"] if e.get("finish", False) == finish}


@needs_qemu
def test_an_npu_layer_overlaps_an_independent_cluster_layer(tmp_path, capsys):
    """Bit-exact (the uint8 producer too), with the job in flight over the cluster layer: the network takes fewer modelled
    cycles than its two parts alone, by most of the shorter of the two, and the NE16 layer's own
    span is shorter than its job (the wait comes at the end of the run)."""
    cycles = {}
    for parts in ("npu", "cluster", "npu+cluster"):
        write_test(_net(parts), tmp_path / parts)
        _run(tmp_path / parts, tmp_path / f"gen_{parts}", 64000, capsys, "all")
        cycles[parts] = _runtime((tmp_path / f"gen_{parts}" / "out.txt").read_text())
    both = tmp_path / "gen_npu+cluster"
    assert "_finish();" in (both / "network" / "Network.c").read_text()
    layers = _profile(both)
    job = int(re.search(r"NPU busy (\d+)", (both / "out.txt").read_text()).group(1))
    shorter = min(job, layers["scores"]["cycles"])
    assert cycles["npu+cluster"] < cycles["npu"] + cycles["cluster"] - shorter * 3 // 4, (cycles, shorter)
    assert layers["proj"]["cycles"] < job, (layers["proj"], job)


@needs_qemu
def test_the_profile_charges_the_wait_to_the_npu_layer(tmp_path, capsys):
    """A cluster layer shorter than the job in flight over it: the cores' wait for the job is a
    row of the NE16 layer (``finish``, named so in the text profile), not overhead of the cluster
    layer run before the wait; the NE16 layer's rows hold the job."""
    write_test(_net("npu+cluster", rows=4), tmp_path / "net")
    _run(tmp_path / "net", tmp_path / "gen", 64000, capsys, "all")
    out = (tmp_path / "gen" / "out.txt").read_text()
    job = int(re.search(r"NPU busy (\d+)", out).group(1))
    layers, waits = _profile(tmp_path / "gen"), _profile(tmp_path / "gen", finish=True)
    assert layers["scores"]["cycles"] < job, (layers["scores"], job)
    assert layers["scores"]["overhead"] < 200, layers["scores"]
    assert list(waits) == ["proj"], waits
    # the job runs from the NE16 layer's kernel (then its wait for the copies it issued for the
    # cluster layer) through the cluster layer into the wait
    own = layers["proj"]["cycles"] - layers["proj"]["tiles"][0]["load"]
    assert own + layers["scores"]["cycles"] + waits["proj"]["compute"] >= job, (layers, waits)
    assert "Ne16Conv 'proj' -> Ne16Conv_u8_s8: the wait for its jobs in flight and their write-back" in out


@needs_qemu
def test_a_reader_of_the_job_waits_for_it(tmp_path, capsys):
    """A cluster layer reading the NE16 layer's output leaves nothing to overlap: the job is
    waited for inside its layer (its span holds the whole job), bit-exact."""
    write_test(_net("npu+cluster", dependent=True), tmp_path / "net")
    _run(tmp_path / "net", tmp_path / "gen", 64000, capsys, "all")
    assert "_finish();" not in (tmp_path / "gen" / "network" / "Network.c").read_text()
    job = int(re.search(r"NPU busy (\d+)", (tmp_path / "gen" / "out.txt").read_text()).group(1))
    assert _profile(tmp_path / "gen")["proj"]["cycles"] >= job


def _chain(rng) -> Net:
    """A linear layer on NE16 ("proj"), a cluster layer beside its job ("scores"), a cluster layer
    reading it ("mix": the wait for proj comes before it) and a last linear layer on NE16 ("last",
    64 x 96 constant weights) reading that."""
    net = Net("MatMul")
    acc = net.input("input_0", ints_in(rng, -40000, 40000, (36, 128)).astype(np.int32))
    proj = _linear(net, rng, net.rqs(acc, 3, 500, 10, name="producer"), 96, "proj")
    scores = _attention(net, rng, net.input("input_1", ints_in(rng, -128, 127, (64, 96))), "scores")
    mix = net.calib_rqs(net.node("MatMul", [proj, net.input("mix_b", ints_in(rng, -128, 127, (96, 64)))], name="mix"),
                        offset_rng=rng, name="mix.rqs")
    net.output(scores, _linear(net, rng, mix, 96, "last"))
    return net


@needs_qemu
def test_a_cluster_layer_loads_the_next_npu_layers_weights(tmp_path, capsys):
    """The cluster layer before an NPU layer, also one that first waits for another NPU layer's
    jobs, loads the first tile of the NPU layer's weights while it computes (cross-layer prefetch):
    the NPU layer moves at least a quarter of its weights (NE16's layout: as many bytes as the int8
    matrix, 64 x 96) fewer than its input, weights, output and scale and bias (at most 8 bytes a
    channel) together; bit-exact."""
    write_test(_chain(np.random.default_rng(4)), tmp_path / "net")
    _run(tmp_path / "net", tmp_path / "gen", 64000, capsys, "all", verbose=True)
    out = (tmp_path / "gen" / "out.txt").read_text()
    assert "prefetch: 'mix.rqs' loads the first tile of last.npu_weights" in out or \
        "prefetch: 'mix' loads the first tile of last.npu_weights" in out, out
    assert "_finish();" in (tmp_path / "gen" / "network" / "Network.c").read_text()
    last = _profile(tmp_path / "gen")["last"]
    own = 36 * 64 + 64 * 96 + 36 * 96 + 96 * 8
    assert last["dma"]["bytes"] <= own - 64 * 96 // 4, last["dma"]


@needs_qemu
def test_an_npu_layer_loads_the_next_layers_first_tile(tmp_path, capsys):
    """An NPU layer left with its jobs in flight loads the first tile of the cluster layer beside
    them while it programs its jobs (cross-layer prefetch), and waits for those copies before it
    returns: the cluster layer's first tile finds its inputs in L1; bit-exact."""
    write_test(_chain(np.random.default_rng(4)), tmp_path / "net")
    _run(tmp_path / "net", tmp_path / "gen", 64000, capsys, "all", verbose=True)
    out = (tmp_path / "gen" / "out.txt").read_text()
    assert "prefetch: 'proj' loads the first tile of" in out and "for 'scores' " in out, out
    # QEMU copies at issue time, so only the code shows the wait: after the last job's start
    code = (tmp_path / "gen" / "network" / "Network.c").read_text()
    run = re.search(r"static void (\w+)_run\(void\) \{(.*?)\n\}\nstatic void \1_finish", code, re.S).group(2)
    assert "deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);" in run.split("_kernel(&tile);")[-1], run
    first = _profile(tmp_path / "gen")["scores"]["tiles"][0]
    assert first["load_dma_wait"] == 0, first


@pytest.mark.parametrize("model", ["microLlama/microLlama64_parallel", "miniMobileNetv2"])
def test_npu_layers_in_flight_receive_their_weights_clear_of_live_tiles(model, tmp_path):
    """GAP9_w_ne16 (--l1 64000, double-buffered): in microLlama64_parallel, NE16 layers left with
    their jobs in flight (the attention's and MLP's projections) get the first tile of their weights
    from the layer before, also where that layer runs beside another NE16 layer's jobs. In both
    networks no slot loaded ahead overlaps an L1 tile live meanwhile (an in-flight layer's tiles
    live up to the layer that waits for it), all within --l1, and none is loaded from a tensor a
    job in flight at that time has yet to write back. In microLlama64_parallel the NPU layers hand
    over too, to the first layer beside their jobs and after them, and the layers beside an NPU
    layer's jobs among themselves."""
    d = DEEPLOY_TEST / "Tests" / "Models" / model
    graph = load_onnx(d / "network.onnx")
    npz = d / "inputs.npz"
    assign_input_types(graph, map_arrays(npz, load_npz_arrays(npz), graph.inputs, graph, "input"))
    result = compile_graph(graph, "GAP9_w_ne16", tmp_path / "out", cores=8,
                           tiling=TilingOptions(64000, TilingOptions.l2, "L2", True))
    tiled, names = result.tiled, [layer.node.name for layer in result.layers]
    assert tiled.overlaps.deferred
    if model.startswith("microLlama"):
        receivers = {names[m] for m in tiled.prefetches.ahead}
        for proj in ("self_attn.q_proj", "self_attn.v_proj", "mlp.up_proj"):
            k = names.index(f"layers.1.{proj}_MatMul")
            assert k in tiled.overlaps.deferred and names[k] in receivers, proj
            assert any(k - 1 in range(j + 1, stop) for stop, js in tiled.overlaps.finish.items() for j in js), proj
            assert tiled.prefetches.issuer.get(k, -1) in tiled.overlaps.l1_base, proj     # beside its jobs
        assert tiled.prefetches.issuer.get(names.index("layers.1.self_attn.o_proj_MatMul")) is not None
        windows = [range(j + 1, stop) for stop, js in tiled.overlaps.finish.items() for j in js]
        assert any(n in w and m in w for n, m in tiled.prefetches.issuer.items() for w in windows)
    until = {j: stop - 1 for stop, js in tiled.overlaps.finish.items() for j in js}
    written = {o: k for k, layer in enumerate(result.layers) for o in layer.node.outputs}
    tiles = [b for b in result.manifest.buffers if b.level == "L1"]
    index = {layer: k for k, layer in enumerate(names)}
    live = [(b, b.first, until.get(index[b.name.split(":")[0]], b.last)) for b in tiles]
    assert all(0 <= b.offset and b.offset + b.size <= 64000 for b in tiles)
    early = [(b, lo, hi) for b, lo, hi in live if b.first < b.last]
    assert early
    for b, lo, hi in early:
        k = written.get(b.name.split(": ")[1].split(" tile")[0], -1)
        assert not k < b.first <= until.get(k, -1), (b, "loaded before the job in flight writes it back")
        for c, clo, chi in live:
            if c is not b and clo <= hi and lo <= chi:
                assert b.offset + b.size <= c.offset or c.offset + c.size <= b.offset, (b, c)
