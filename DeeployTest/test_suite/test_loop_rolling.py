"""Loop-rolling discovery: repeated blocks found automatically (``--loop-rolling``) and by module
path (``--loop-body-hierarchy``), recorded as regions, and what their bodies read."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

from Deeploy.errors import DeeployError
from Deeploy.frontend import assign_input_types, infer_graph, load_npz_arrays, load_onnx, map_arrays
from Deeploy.ir import InputKind, body_attributes, body_inputs
from Deeploy.ir.onnx_export import to_onnx
from Deeploy.passes.graph_outputs import copy_shared_outputs
from Deeploy.passes.loop_hierarchy import hierarchy_region, parse_hierarchy
from Deeploy.passes.loop_rolling import LoopRolling, find_repeats, roll_loops
from Deeploy.passes.manager import run_passes
from Deeploy.targets import get_platform
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, REPO

STACKS = DEEPLOY_TEST / "Tests" / "Models" / "Stacks"
LLAMAS = CORPUS / "Models" / "microLlama" / "INT8"


def _graph(folder: Path, platform: str = "Generic", rename=None):
    """The graph as compile_graph hands it to discovery: typed, after the platform's passes."""
    graph = load_onnx(folder / "network.onnx")
    if rename:
        for n in graph.nodes:
            n.name = rename(n.name)
    inputs = map_arrays(folder / "inputs.npz", load_npz_arrays(folder / "inputs.npz"), graph.inputs, graph, "input")
    assign_input_types(graph, inputs)
    infer_graph(graph)
    return run_passes(graph, (*get_platform(platform).passes, copy_shared_outputs))


@pytest.mark.parametrize("name", ["microLlama64", "microLlama128", "microLlama64_parallel"])
@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_discovery_finds_the_eight_decoder_layers_of_the_corpus_llamas(name, platform):
    graph = _graph(LLAMAS / name, platform)
    regions = find_repeats(graph)
    assert [r.iterations for r in regions] == [8]
    (region,) = regions
    # a whole decoder layer: one of each layer's two iRMSNorms and its softmax per iteration (on
    # Siracusa fused with the RequantShift after it)
    softmax = "RequantizediSoftmax" if platform == "Siracusa" else "iSoftmax"
    ops = [next(n.op for n in graph.nodes if n.name == name) for name in region.instances[0]]
    assert ops.count("iRMSNorm") == 2 and ops.count(softmax) == 1
    # every node but the embedding side and the final norm is in the region
    outside = [n.op for n in graph.nodes if n.name not in region.node_names()]
    assert softmax not in outside and outside.count("iRMSNorm") == 1
    # softmax and hardswish coefficients differ per layer: value attributes, not structure
    attrs = {attr for (_, attr) in body_attributes(graph, region)}
    assert {"coeffB", "coeffC", "log2"} <= attrs


@pytest.mark.parametrize("layers", [2, 4, 8, 16])
def test_decoder_stacks_roll_into_n_iterations_of_one_layer(layers):
    graph = _graph(STACKS / f"Decoder{layers}")
    regions = find_repeats(graph)
    assert [r.iterations for r in regions] == [layers]
    body = regions[0].instances[0]
    # the body is one whole layer: every node of layer 0, nothing else
    assert {n.split(".")[1] for n in body} == {"0"}
    assert len(body) == sum(1 for n in graph.nodes if n.name.startswith("layers.0."))


def test_hierarchy_by_metadata_finds_the_same_body_as_discovery():
    graph = _graph(STACKS / "Decoder8", "Siracusa")
    auto = find_repeats(graph)[0]
    named = hierarchy_region(graph, ("layers", "layers.0"))
    assert named.iterations == 8 and named.node_names() == auto.node_names()
    assert named.mismatch(graph) is None


def test_hierarchy_reads_the_name_scopes_not_only_the_names():
    # node names that say nothing: only the pkg.torch.onnx.name_scopes metadata tells the layers apart
    graph = _graph(STACKS / "Decoder4", rename=lambda name: f"node_{abs(hash(name)) % 10**8}")
    assert all(not n.name.startswith("layers") for n in graph.nodes)
    region = hierarchy_region(graph, parse_hierarchy("layers,layers.0"))
    assert region.iterations == 4
    assert all(n.scopes[1:3] == ("layers", f"layers.{i}")
               for i, instance in enumerate(region.instances) for n in graph.nodes if n.name in instance)


def test_hierarchy_falls_back_to_node_name_prefixes_without_metadata():
    graph = _graph(STACKS / "Decoder8NoMetadata", "Siracusa")
    assert not any(n.scopes for n in graph.nodes)
    region = hierarchy_region(graph, ("layers", "layers.0"))
    assert region.iterations == 8
    assert all(name.startswith(f"layers.{i}.") for i, instance in enumerate(region.instances) for name in instance
               if not name.endswith("_transpose"))


def test_hierarchy_accepts_torchscript_style_names():
    # /layers.3/self_attn/... as the TorchScript exporter names nodes
    graph = _graph(STACKS / "Decoder8NoMetadata", rename=lambda name: "/" + name.replace(".", "/").replace("layers/", "layers.", 1))
    assert all(not n.name.startswith("layers.") for n in graph.nodes)
    assert any(n.name.startswith("/layers.3/") for n in graph.nodes)
    assert hierarchy_region(graph, ("layers", "layers.0")).iterations == 8


def test_encoder_decoder_gives_both_groups_by_metadata_and_automatically():
    graph = _graph(STACKS / "EncoderDecoder")
    work, notes = roll_loops(graph, LoopRolling(hierarchies=(("encoder", "encoder.layer.0"),
                                                              ("decoder", "decoder.layer.0"))))
    assert [(r.name, r.iterations) for r in work.regions] == [("encoder", 3), ("decoder", 2)]
    assert len(notes) == 2 and "3 iterations of a 13-node body" in notes[0]
    auto = find_repeats(graph)
    assert [(r.iterations, r.body_size) for r in auto] == [(3, 13), (2, work.regions[1].body_size)]
    assert [r.node_names() for r in auto] == [r.node_names() for r in work.regions]
    # automatic discovery fills in around a named group
    both, _ = roll_loops(graph, LoopRolling(auto=True, hierarchies=(("decoder", "decoder.layer.0"),)))
    assert [(r.name, r.iterations) for r in both.regions] == [("decoder", 2), ("loop0", 3)]
    assert graph.regions == []   # the graph given is not edited


def test_hierarchy_errors_name_the_flag_and_the_fix():
    graph = _graph(STACKS / "EncoderDecoder")
    with pytest.raises(DeeployError, match=r"no node belongs to 'blocks\.0'"):
        hierarchy_region(graph, ("blocks", "blocks.0"))
    with pytest.raises(DeeployError, match="must end in its instance number"):
        hierarchy_region(graph, ("encoder", "encoder.layer"))
    with pytest.raises(DeeployError, match="is not inside the group"):
        hierarchy_region(graph, ("decoder", "encoder.layer.0"))
    with pytest.raises(DeeployError, match="GROUP,BODY"):
        parse_hierarchy("a,b,c")


def test_a_body_that_does_not_repeat_is_refused():
    graph = _graph(STACKS / "EncoderDecoder")
    for n in graph.nodes:   # encoder layers 1 and 2 moved to another module: layer 0 stands alone
        if any(s in ("encoder.layer.1", "encoder.layer.2") for s in n.scopes):
            n.scopes = ("", "other", n.name)
    with pytest.raises(DeeployError, match=r"'encoder\.layer\.0' does not repeat: only instance 0 found"):
        hierarchy_region(graph, ("encoder", "encoder.layer.0"))


def test_instances_that_differ_are_refused_naming_where():
    graph = _graph(STACKS / "Decoder4")
    layer2 = next(n for n in graph.nodes if n.name == "layers.2.context_Transpose")
    layer2.attrs["perm"] = [0, 2, 3, 1]   # structure: another permutation in layer 2 only
    with pytest.raises(DeeployError, match=r"instances differ: .*iteration 2 differs at body position \d+: "
                                           r"'layers\.2\.context_Transpose'"):
        hierarchy_region(graph, ("layers", "layers.0"))
    # automatic discovery does not roll across the odd layer
    assert all(r.iterations < 4 for r in find_repeats(graph))


def test_value_attributes_may_differ_structure_may_not():
    graph = _graph(STACKS / "Decoder2")
    region = find_repeats(graph)[0]
    act = next(n for n in graph.nodes if n.name == "layers.1.mlp.act")
    act.attrs["six"] = act.attrs["six"] + 2   # a coefficient: per iteration
    assert region.mismatch(graph) is None
    k = next(k for k, name in enumerate(region.instances[0]) if name == "layers.0.mlp.act")
    assert body_attributes(graph, region)[(k, "six")][1] == act.attrs["six"]


def test_body_inputs_are_classified():
    graph = _graph(STACKS / "Decoder8")
    region = hierarchy_region(graph, ("layers", "layers.0"))
    by_slot = {(region.instances[0][b.position], b.slot): b for b in body_inputs(graph, region)}
    carried = by_slot[("layers.0.input_norm", 0)]
    assert carried.kind == InputKind.CARRIED and carried.tensors[0] == "input"
    assert carried.tensors[1] == next(n.outputs[0] for n in graph.nodes if n.name == "layers.0.residual_mlp_Add.rqs")
    weights = by_slot[("layers.0.self_attn.q_proj_MatMul", 1)]
    assert weights.kind == InputKind.PER_ITERATION
    assert weights.tensors == tuple(f"layers.{i}.self_attn.q_proj.weight" for i in range(8))
    cache = by_slot[("layers.0.k_Concat", 0)]   # each layer's own KV-cache input
    assert cache.kind == InputKind.PER_ITERATION and cache.tensors == tuple(f"layers.past_key_{i}" for i in range(8))
    mask = by_slot[("layers.0.mask_Add", 1)]     # the one requantised mask every layer reads
    assert mask.kind == InputKind.INVARIANT and len(set(mask.tensors)) == 1


def test_snapshots_keep_name_scopes_and_show_regions():
    graph = _graph(STACKS / "Decoder2")
    work, _ = roll_loops(graph, LoopRolling(auto=True))
    model = to_onnx(work)
    meta = {n.name: {p.key: p.value for p in n.metadata_props} for n in model.graph.node}
    assert meta["layers.1.input_norm"]["deeploy.region"].startswith("loop0[1].")
    assert meta["layers.1.input_norm"]["pkg.torch.onnx.name_scopes"] == \
        "['', 'layers', 'layers.1', 'layers.1.input_norm']"
    onnx.checker.check_model(model)


def test_no_repeat_reports_so_and_records_nothing():
    graph = _graph(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2")
    work, notes = roll_loops(graph, LoopRolling(auto=True))   # its blocks differ in shape from one to the next
    assert work.regions == []
    assert notes == ["--loop-rolling: no block repeats (no two consecutive structurally identical blocks)"]


def test_cli_refuses_a_bad_body_in_one_line(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "Deeploy.cli", "compile", str(STACKS / "Decoder2" / "network.onnx"),
                           "-o", str(out), "--loop-body-hierarchy", "layers,layers.0.mlp"],
                          capture_output=True, text=True, cwd=REPO, timeout=300)
    assert proc.returncode != 0 and not out.exists()
    assert proc.stderr.strip().count("\n") == 0 and "must end in its instance number" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_analyze_reports_the_regions_and_each_layers_place():
    from Deeploy.analyze import analyze_graph, format_table
    graph = load_onnx(STACKS / "Decoder2" / "network.onnx")
    assign_input_types(graph, map_arrays(STACKS / "Decoder2" / "inputs.npz",
                                         load_npz_arrays(STACKS / "Decoder2" / "inputs.npz"), graph.inputs, graph, "input"))
    report = analyze_graph(graph, "Generic", loop_rolling=LoopRolling(auto=True))
    (region,) = report.regions
    assert region["iterations"] == 2 and region["inputs"]["carried"] >= 1
    placed = [r.region for r in report.layers if r.region]
    assert len(placed) == 2 * region["body_size"] and placed[0].startswith("loop0[0].")
    assert f"loop region loop0: 2 iterations of a {region['body_size']}-node body" in format_table(report)


@pytest.mark.parametrize("runner", ["testRunner_generic.py", "testRunner_siracusa.py", "testRunner_tiled_siracusa.py",
                                    "testRunner_siracusa_w_neureka.py", "testRunner_tiled_siracusa_w_neureka.py"])
def test_every_runner_takes_the_loop_flags(runner):
    proc = subprocess.run([sys.executable, runner, "--help"], capture_output=True, text=True, cwd=DEEPLOY_TEST,
                          timeout=120)
    assert proc.returncode == 0 and "--loop-rolling" in proc.stdout and "--loop-body-hierarchy" in proc.stdout


@pytest.mark.parametrize("model", ["microLlama/microLlama64", "Stacks/Decoder4", "KWS_DSCNN"])
def test_rolling_notes_add_up(tmp_path, capsys, model):
    """The notes of a rolled network agree: the region's per-iteration constants (found on the
    graph) are the ones the compiled loop stacks, in count and bytes, and those bytes are part of
    the network's constants (equal constants of every iteration are one invariant input, stored once)."""
    from Deeploy.cli import main
    onnx_file = DEEPLOY_TEST / "Tests" / "Models" / model / "network.onnx"
    assert main(["compile", str(onnx_file), "--platform", "Siracusa", "--loop-rolling", "-o", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    found = re.search(r"(\d+) per-iteration \((\d+) constants, (\d+) B over the iterations", out)
    compiled = re.search(r"compiled: (\d+) per-iteration constants stacked, (\d+) B of the network's constants", out)
    constants = int(re.search(r"^  constants: +(\d+) B", out, re.M).group(1))
    assert found and compiled, out
    assert int(found[1]) >= int(found[2]) and (found[2], found[3]) == compiled.groups(), out
    assert 0 < int(compiled[2]) <= constants, out
