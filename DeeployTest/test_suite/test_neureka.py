"""Siracusa_w_neureka: the platform as data, the NPU weight encoding (decoded back by a decoder
written from the spec's description of the layout) and the engine assignment rules."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from Deeploy.errors import DeeployError
from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.passes.manager import run_passes
from Deeploy.targets import get_platform
from Deeploy.targets.siracusa.platform import SIRACUSA, SIRACUSA_PASSES
from Deeploy.targets.npu.assign import decisions, npu_reason, refactor_plane
from Deeploy.targets.npu.lower import make_assign_engines
from Deeploy.targets.siracusa_w_neureka.ops import NEUREKA_SPEC
from Deeploy.targets.siracusa_w_neureka.platform import PLATFORM, with_wmem_size
from Deeploy.targets.siracusa_w_neureka.weights import encode_weights
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from DeeployTest.test_suite.op_cases.npu import row_bit, naive_npu_weights

RNG = np.random.default_rng(10)


# ---- platform -------------------------------------------------------------------------------
def test_platform_is_siracusa_plus_npu_and_weight_memory():
    p = get_platform("Siracusa_w_neureka")
    assert [e.name for e in p.engines] == ["cluster", "neureka"]
    assert p.engine().name == "cluster" and not p.engine("neureka").forked
    assert [m.name for m in p.memory] == ["L1", "L2", "L3", "WMEM"]
    assert p.level("WMEM").size == 4 * 1024 * 1024
    assert all(p.bindings[op] is kernels for op, kernels in SIRACUSA.bindings.items())
    assert [k.engine for k in p.bindings["NeurekaConv"]] == ["neureka"]
    assert p.timing is SIRACUSA.timing and p.tiling.staging is SIRACUSA.tiling.staging
    assert p.libraries == (*SIRACUSA.libraries, "NPU", "Neureka")   # the NPU drivers' shared queue, its driver
    assert tuple(p.passes[:len(SIRACUSA_PASSES)]) == SIRACUSA_PASSES
    assert "WMEM" in p.linker_script(p.memory)


def test_weight_memory_size():
    assert with_wmem_size(1 << 20).level("WMEM").size == 1 << 20
    assert get_platform("Siracusa_w_neureka").level("WMEM").size == 4 << 20   # the default is untouched
    with pytest.raises(DeeployError, match="multiple of 32"):
        with_wmem_size(1000)


# ---- weight encoding --------------------------------------------------------------------------
def _decode(blob, mode, offset, cout, cin):
    return naive_npu_weights(blob, mode, offset, cout, cin)


@pytest.mark.parametrize("mode,cout,cin", [("1x1", 5, 32), ("1x1", 3, 70), ("3x3", 4, 28), ("3x3", 3, 45),
                                           ("3x3dw", 1, 60), ("3x3dw", 1, 7)])
def test_weights_decode_back(mode, cout, cin):
    if mode == "3x3dw":
        w = RNG.integers(-128, 128, size=(cin, 1, 3, 3))
    else:
        w = RNG.integers(-128, 128, size=(cout, cin) + ((1, 1) if mode == "1x1" else (3, 3)))
    enc = encode_weights(w, mode)
    sub = 32 if mode == "1x1" else 28
    major = -(-cin // sub)
    assert enc.shape == {"1x1": (cout, major, 32), "3x3": (cout, major, 8, 32), "3x3dw": (1, major, 8, 32)}[mode]
    assert enc.offset == w.min() and enc.data.dtype == np.uint8
    assert np.array_equal(_decode(enc.data, mode, enc.offset, cout, cin), w)


def test_weights_padding_and_offset():
    """Padded channels store 0 and the 3x3 rows' last 4 bits are 0; a known 1x1 word."""
    w = np.zeros((1, 2, 1, 1), np.int64)
    w[0, :, 0, 0] = (-3, 2)                      # offset -3: stored 0 and 5 = 0b101
    enc = encode_weights(w, "1x1")
    row = enc.data[0, 0]
    assert enc.offset == -3
    assert [row_bit(row, b * 32 + 1) for b in range(8)] == [1, 0, 1, 0, 0, 0, 0, 0]
    assert sum(row_bit(row, i) for i in range(256)) == 2
    enc3 = encode_weights(RNG.integers(-128, 128, size=(2, 5, 3, 3)), "3x3")
    assert all(row_bit(r, i) == 0 for r in enc3.data.reshape(-1, 32) for i in range(252, 256))
    with pytest.raises(ValueError, match="do not fit"):
        encode_weights(np.zeros((2, 2, 3, 3)), "1x1")


# ---- engine assignment ----------------------------------------------------------------------------
def test_refactor_plane_fills_the_array():
    assert refactor_plane(36, 6) == (6, 6)
    assert refactor_plane(72, 6) in ((6, 12), (12, 6))
    assert refactor_plane(7, 6) in ((1, 7), (7, 1))
    assert refactor_plane(1, 6) == (1, 1)


def _network(path):
    graph = load_onnx(path / "network.onnx")
    values = dict(np.load(path / "inputs.npz"))
    assign_input_types(graph, {graph.inputs[0]: next(iter(values.values()))})
    infer_graph(graph)
    return run_passes(graph, SIRACUSA_PASSES)


def test_assignment_on_mobilenet():
    graph = _network(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2")
    got = {n.name: (engine, why) for n, engine, why in decisions(graph, NEUREKA_SPEC)}
    assert got["stem"] == ("cluster", "stride 2x2 (the driver supports stride 1)")
    assert got["block0.expand"] == ("neureka", "NPU 1x1 mode")
    assert got["block1.dw"] == ("neureka", "NPU 3x3dw mode")
    assert got["classifier"] == ("neureka", "NPU 1x1 mode")
    assert all(e == "cluster" for n, e, _ in decisions(graph, NEUREKA_SPEC) if not n.op.startswith("RequantizedConv")
               and n.op != "RequantizedGemm")
    kept = {n.name: e for n, e, _ in decisions(graph, NEUREKA_SPEC, frozenset({"block1.dw", "classifier"}))}
    assert kept["block1.dw"] == kept["classifier"] == "cluster" and kept["block1.expand"] == "neureka"
    lines = []
    lowered, modified = make_assign_engines(NEUREKA_SPEC, ["classifier"])(graph, lines.append)
    assert modified and lowered is not graph
    assert "engine cluster for RequantizedGemm 'classifier': kept on the cluster by --no-npu-for" in lines
    ops = {n.name: n.op for n in lowered.nodes}
    assert ops["classifier"] == "RequantizedGemm" and ops["block1.dw"] == ops["block0.expand"] == "NeurekaConv"
    assert ops["stem"] == "RequantizedConv"


def _one_node(tmp_path, node, inits, x_shape, y_shape):
    nodes = node if isinstance(node, list) else [node]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                          [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in inits.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "m.onnx")
    graph = load_onnx(tmp_path / "m.onnx")
    assign_input_types(graph, {"x": RNG.integers(-128, 128, size=x_shape)})
    infer_graph(graph)
    graph = run_passes(graph, SIRACUSA_PASSES)
    return npu_reason(next(n for n in graph.nodes if n.name == "n"), graph, NEUREKA_SPEC)


@pytest.mark.parametrize("kernel,pads,group,cin,expected", [
    (5, 0, 1, 4, "kernel 5x5"),
    (3, 3, 1, 4, "padding 3 beyond"),
    (3, 1, 2, 4, "group 2"),
    (3, 1, 1, 4, None),    # int8 x int8 over 36 taps: int32 accumulators, no bias
])
def test_conv_rules(tmp_path, kernel, pads, group, cin, expected):
    w = RNG.integers(-128, 128, size=(4, cin // group, kernel, kernel))
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="n", kernel_shape=[kernel, kernel], pads=[pads] * 4,
                            group=group)
    out = 8 + 2 * pads - kernel + 1
    reason = _one_node(tmp_path, node, {"w": w}, [1, cin, 8, 8], [1, 4, out, out])
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_matmul_of_two_activations_stays_on_cluster(tmp_path):
    node = helper.make_node("MatMul", ["x", "x"], ["y"], name="n")
    reason = _one_node(tmp_path, node, {}, [4, 4], [4, 4])
    assert "not an int8 constant" in reason


def test_matmul_with_constant_weights_runs_on_npu(tmp_path):
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="n")
    assert _one_node(tmp_path, node, {"w": RNG.integers(-128, 128, size=(16, 8))}, [4, 16], [4, 8]) is None


def test_conv_with_bias_but_no_requant_stays_on_cluster(tmp_path):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="n", kernel_shape=[1, 1])
    reason = _one_node(tmp_path, node, {"w": RNG.integers(-128, 128, size=(4, 4, 1, 1)), "b": np.arange(4)},
                       [1, 4, 6, 6], [1, 4, 6, 6])
    assert "bias without requantization" in reason


def _requantized_matmul(mul, add, div=2**8):
    rq = helper.make_node("RequantShift", ["h", "mul", "add"], ["y"], name="rq", **{
        k: numpy_helper.from_array(np.array([v], np.float32)) for k, v in
        (("div", div), ("n_levels_out", 256), ("signed", 1))})
    return [helper.make_node("MatMul", ["x", "w"], ["h"], name="n"), rq], {"mul": mul, "add": add}


@pytest.mark.parametrize("mul,add,expected", [
    (np.arange(1, 9), np.arange(8) * 3, None),                 # per output column: fits
    (np.full((4, 1), 3), 0, "neither per tensor nor per output channel"),   # per row
    (np.asarray(2**22), 0, "may exceed int32"),                # acc * scale beyond int32
    (np.asarray(3 * 2**14), 5, None),     # beyond int32 unless the 2**8 scale and shift share is divided out
])
def test_requant_rules(tmp_path, mul, add, expected):
    nodes, consts = _requantized_matmul(mul, add)
    consts["w"] = RNG.integers(-128, 128, size=(16, 8))
    reason = _one_node(tmp_path, nodes, consts, [4, 16], [4, 8])
    assert reason is None if expected is None else expected in reason


def test_no_npu_for_names_an_unknown_layer():
    graph = _network(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2")
    with pytest.raises(DeeployError, match=r"--no-npu-for: no layer named 'nosuch'") as refused:
        make_assign_engines(NEUREKA_SPEC, ["nosuch"])(graph)
    assert refused.value.details.startswith("layers on the NPU: block0.expand")
    configured = get_platform("Siracusa_w_neureka").configure(no_npu_for=["classifier"], wmem_size=1 << 20)
    assert configured.level("WMEM").size == 1 << 20
    lowered, _ = configured.passes[-1](graph)
    assert {n.name: n.op for n in lowered.nodes}["classifier"] == "RequantizedGemm"


def test_npu_tiles_cost_the_npu_model():
    """The tiler prices an NPU layer's tiles with the NPU's job model: a 6-row tile costs as
    much as a 5-row one (one spatial subtile either way), 7 rows cost a second subtile."""
    from Deeploy.targets.siracusa_w_neureka.params import NEUREKA
    from Deeploy.tiling.costs import compute_cycles
    from Deeploy.tiling.families import layer_spec
    from Deeploy.tiling.network import with_kernel_cycles
    tiles = PLATFORM.tiling.tiles
    graph = _network(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2")
    graph, _ = make_assign_engines(NEUREKA_SPEC)(graph)
    infer_graph(graph)
    node = next(n for n in graph.nodes if n.name == "block1.expand")
    spec = with_kernel_cycles(layer_spec(node, graph), node, graph, tiles)
    p = node.params
    full = {d.name: d.size for d in spec.dims}
    assert compute_cycles(spec, full, tiles) == p.batch * NEUREKA.job_cycles("1x1", *p.out_plane, p.cout, p.cin)
    ext = dict(full, OW=p.out_plane[1], N=1)
    assert spec.tile_cycles(dict(ext, OH=5)) == spec.tile_cycles(dict(ext, OH=6)) < spec.tile_cycles(dict(ext, OH=7))


def test_deeploy_compile_takes_the_npu_options(tmp_path):
    import subprocess
    import sys
    model = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx"
    cmd = [sys.executable, "-m", "Deeploy.cli", "compile", str(model), "-o"]
    ok = subprocess.run(cmd + [str(tmp_path / "a"), "--platform", "Siracusa_w_neureka", "--no-npu-for", "classifier",
                               "--wmem-size", str(1 << 20), "-v"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "engine cluster for RequantizedGemm 'classifier': kept on the cluster by --no-npu-for" in ok.stdout
    bad = subprocess.run(cmd + [str(tmp_path / "b"), "--platform", "Siracusa", "--no-npu-for", "classifier"],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "platform Siracusa takes no --no-npu-for" in bad.stdout + bad.stderr
    assert not (tmp_path / "b").exists()


def test_normquant_divides_out_the_power_of_two_scale_and_shift_share(tmp_path):
    """The lowered job's scale, bias and shift give the requantization's result for every
    accumulator: floor((acc * mul + add + 2**(shift-1)) / 2**shift), with smaller products."""
    mul, add, div = np.asarray([12 * 2**10, 5 * 2**11, 0, -3 * 2**12]), np.asarray([7, -1000, 3, 99]), 2**16
    nodes, consts = _requantized_matmul(mul, add, div)
    consts["w"] = RNG.integers(-128, 128, size=(16, 4))
    _one_node(tmp_path, nodes, consts, [4, 16], [4, 4])
    graph = load_onnx(tmp_path / "m.onnx")
    assign_input_types(graph, {"x": RNG.integers(-128, 128, size=(4, 16))})
    infer_graph(graph)
    lowered, _ = make_assign_engines(NEUREKA_SPEC)(run_passes(graph, SIRACUSA_PASSES))
    job = next(n for n in lowered.nodes if n.op == "NeurekaConv")
    scale, bias = (np.asarray(lowered.tensors[t].value, np.int64) for t in job.inputs[2:4])
    shift = job.attrs["shift"]
    assert shift == 16 - 11 and list(scale) == [6, 5, 0, -6]      # 2**11 divides every scale
    for acc in [-2**18, -12345, -1, 0, 1, 777, 2**18 - 1]:
        want = [(acc * int(m) + int(a) + 2**15) >> 16 for m, a in zip(mul, add)]
        assert [(acc * int(m) + int(b)) >> shift for m, b in zip(scale, bias)] == want
