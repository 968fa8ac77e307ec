"""GAP9_w_ne16: NE16's weight layout, CONF0 and job model as specs/gap9.md §3 gives them (expected
values written out here from the spec, not from the code); the engine assignment (int8 inputs
shifted to uint8 with the bias corrected, bit-exact; NE16 only where it pays off); and runs under
QEMU, bit-exact, of each NE16 layer kind (generated fixtures) and of a network."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from Deeploy.frontend import assign_input_types, infer_graph, load_onnx
from Deeploy.ops.fused import is_fused
from Deeploy.passes.manager import run_passes
from Deeploy.reference import run_reference
from Deeploy.targets import get_platform
from Deeploy.targets.gap9_w_ne16.ops import NE16_SPEC, config_word
from Deeploy.targets.gap9_w_ne16.params import NE16
from Deeploy.targets.gap9_w_ne16.weights import encode_weights
from Deeploy.targets.npu.assign import decisions
from Deeploy.targets.npu.job import NpuConvParams
from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.layers import conv_rq, image
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

PLATFORM = get_platform("GAP9_w_ne16")
TILED = RunnerPlatform("GAP9_w_ne16", "TEST_GAP9_W_NE16_TILED")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-riscv32") is None or
                                shutil.which("riscv64-unknown-elf-gcc") is None,
                                reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


# ---- the spec's weight layout, CONF0 and throughput constants --------------------------------
def _spec_weights(blob: np.ndarray, offset: int, cout: int, cin: int, taps: int, dw: bool) -> np.ndarray:
    """The weights read back bit by bit as the spec lays them out: per output channel (depthwise:
    one, over the C channels), 16-channel groups x 8 bit planes (LSB first) x taps x a 16-bit
    little-endian mask, channel c of the group at bit c."""
    flat = blob.reshape(-1)
    groups = -(-cin // 16)
    w = np.zeros((cout, cin, taps), np.int64)
    for k in range(cout):
        for c in range(cin):
            for t in range(taps):
                value = 0
                for b in range(8):
                    base = ((0 if dw else k) * groups + c // 16) * 8 * taps * 2 + (b * taps + t) * 2
                    mask = int(flat[base]) | int(flat[base + 1]) << 8
                    value |= ((mask >> (c % 16)) & 1) << b
                w[k, c, t] = value + offset
    return w


@pytest.mark.parametrize("mode,shape", [("1x1", (5, 37, 1, 1)), ("3x3", (3, 20, 3, 3)), ("3x3dw", (19, 1, 3, 3))])
def test_weight_layout_is_the_specs(mode, shape):
    w = np.random.default_rng(3).integers(-128, 128, size=shape)
    enc = encode_weights(w, mode)
    taps = shape[2] * shape[3]
    if mode == "3x3dw":
        back = _spec_weights(enc.data, enc.offset, 1, shape[0], taps, True)[0].reshape(shape)
    else:
        back = _spec_weights(enc.data, enc.offset, shape[0], shape[1], taps, False).reshape(shape)
    assert enc.offset == w.min() and enc.data.dtype == np.uint8 and (back == w).all()
    assert enc.nbytes == (1 if mode == "3x3dw" else shape[0]) * -(-(shape[0] if mode == "3x3dw" else shape[1]) // 16) \
        * 8 * taps * 2


def _params(mode, normquant, shift=0, scale8=False, out_signed=True) -> NpuConvParams:
    return NpuConvParams(mode, 32, 16, 1, (3, 3), (3, 3), (0, 0, 0, 0), -128, normquant, shift, out_signed,
                         (1, 3, 3, 16), scale8=scale8)


def test_conf0_bits_are_the_specs():
    """CONF0 (spec §3): weight bits - 1 in [2:0], mode [6:5], norm-quant 4, norm mode [13:12],
    weight offset mode 15, shift [20:16], quant mode [22:21], identity 23, norm bias 25."""
    assert config_word(_params("1x1", True, shift=9, scale8=True)) == \
        0b111 | 2 << 5 | 1 << 4 | 0 << 12 | 1 << 15 | 9 << 16 | 0 << 21 | 1 << 23 | 1 << 25
    assert config_word(_params("3x3dw", True, shift=31, out_signed=False)) == \
        0b111 | 1 << 5 | 1 << 4 | 2 << 12 | 1 << 15 | 31 << 16 | 1 << 25
    assert config_word(_params("3x3", False)) == 0b111 | 0 << 5 | 1 << 15 | 2 << 21 | 1 << 23


def test_job_cycles_from_the_spec_constants():
    """One 3x3x32 output subtile: per 16-channel input subtile a load (19 in 1x1, 31 in 3x3) and
    17 + 1 (1x1) or 8 (3x3) cycles per output channel; 4 outputs quantised per cycle, a 32-byte
    store per pixel, 6 cycles FIFO/control."""
    assert NE16.job_cycles("1x1", 3, 3, 32, 16) == (19 + 17 + 32) + 288 // 4 + 9 + 6
    assert NE16.job_cycles("1x1", 3, 3, 32, 32) == 2 * (19 + 17 + 32) + 288 // 4 + 9 + 6
    assert NE16.job_cycles("3x3", 3, 3, 32, 16) == (31 + 17 + 32 * 8) + 288 // 4 + 9 + 6
    assert NE16.job_cycles("3x3dw", 3, 3, 16, 16) == (31 + 17 + 16 * 8) + 144 // 4 + 9 + 6
    assert NE16.job_cycles("1x1", 4, 3, 32, 16, out_bytes=4) == 2 * ((19 + 17 + 32) + 288 // 4 + 9 * 4 + 6)
    assert NE16.job_cycles("1x1", 3, 3, 40, 16) == NE16.job_cycles("1x1", 3, 3, 32, 16) + \
        (19 + 17 + 8) + -(-72 // 4) + 9 + 6



def test_1x1_pixels_fill_the_subtiles():
    """A 1x1 job's pixels are independent: 64 of them (a linear layer's 64 rows as 8 x 8) take
    ceil(64 / 9) = 8 subtiles of 3 x 3 (as 3 x 21 and a last pixel, two jobs), not 9, where the
    subtile saved costs more than programming the second job (230 core cycles); 3x3 modes keep
    the plane's 3 x 3 = 9."""
    subtile = 2 * (2 * (19 + 17 + 32) + 288 // 4 + 9 + 6)      # 64 output / 32 input channels: 446
    assert NE16.job_cycles("1x1", 8, 8, 64, 32) == 8 * subtile
    assert NE16.job_cycles("1x1", 3, 3, 64, 32) == subtile                        # one job as before
    small = (19 + 17 + 32) + 288 // 4 + 9 + 6                     # 32 output / 16 input channels: 155
    assert NE16.job_cycles("1x1", 8, 8, 32, 16) == 9 * small
    assert NE16.job_cycles("3x3", 8, 8, 32, 16) == 9 * NE16.job_cycles("3x3", 3, 3, 32, 16)

# ---- assignment: int8 inputs, pays off --------------------------------------------------------
def _two_linears(rng) -> Net:
    """An int8 activation read by two requantized linear layers (as q and k projections are)."""
    net = Net("MatMul")
    x = net.input("input_0", ints_in(rng, -128, 127, (36, 128)))
    outs = [net.calib_rqs(net.node("MatMul", [x, net.const(weights(rng, (128, n)), f"{name}.weight")], name=name),
                          offset_rng=rng, name=f"{name}.rqs") for name, n in (("a", 64), ("b", 72))]
    net.output(*outs)
    return net


def _lowered(folder: Path, net: Net):
    write_test(net, folder)
    graph = load_onnx(folder / "network.onnx")
    assign_input_types(graph, dict(zip(graph.inputs, (np.load(folder / "inputs.npz")[k] for k in
                                                      np.load(folder / "inputs.npz").files))))
    infer_graph(graph)
    return graph, run_passes(graph, PLATFORM.passes)


def test_int8_inputs_are_shifted_once_and_stay_bit_exact(tmp_path):
    """NE16 reads uint8: an int8 input gets one RequantShift (+128, uint8) shared by the jobs
    reading it, and their biases the correction; the lowered graph computes the same outputs."""
    graph, lowered = _lowered(tmp_path, _two_linears(np.random.default_rng(1)))
    ops = [n.op for n in lowered.nodes]
    assert ops.count("Ne16Conv") == 2 and ops.count("RequantShift") == 1
    shift = next(n for n in lowered.nodes if n.op == "RequantShift")
    assert lowered.tensors[shift.outputs[0]].dtype.name == "uint8"
    assert all(n.inputs[0] == shift.outputs[0] for n in lowered.nodes if n.op == "Ne16Conv")
    x = {graph.inputs[0]: np.load(tmp_path / "inputs.npz")[np.load(tmp_path / "inputs.npz").files[0]]}
    want, got = run_reference(graph, x), run_reference(lowered, x)
    assert all(np.array_equal(np.asarray(want[o]), np.asarray(got[o])) for o in graph.outputs)


def test_ne16_only_where_it_pays_off(tmp_path):
    """A layer NE16 runs slower than the cluster (a 3x3 depthwise convolution of 2 channels on
    16 x 16: 2 of the 16 channels of each input subtile in use) stays on the cluster, with both
    prices in its reason; wider linear layers go to NE16."""
    rng = np.random.default_rng(2)
    net = Net("Conv")
    x = net.input("input_0", image(rng, (1, 2, 16, 16)))
    net.output(conv_rq(net, rng, x, 2, 3, group=2, name="dw"))
    graph, _ = _lowered(tmp_path, net)
    layouted = run_passes(graph, PLATFORM.passes[:-1])
    (engine, why), = [(e, r) for n, e, r in decisions(layouted, NE16_SPEC) if is_fused(n.op)]
    assert engine == "cluster" and why.startswith("the NPU does not pay off") and "on the cluster" in why
    graph, _ = _lowered(tmp_path / "wide", _two_linears(rng))
    assert [e for n, e, _ in decisions(run_passes(graph, PLATFORM.passes[:-1]), NE16_SPEC)
            if is_fused(n.op)] == ["ne16", "ne16"]


# ---- runs under QEMU: each layer kind, and a network ------------------------------------------
def _run(test_dir: Path, gen: Path, l1: int, capsys, profile: str | None = None, verbose: bool = False) -> dict[str, str]:
    args = argparse.Namespace(test=str(test_dir), verbose=verbose, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, l1=l1, l2=TilingOptions.l2, defaultMemLevel="L2", doublebuffer=True,
                              profileTiling=profile, plotMemAlloc=False, timeout=None)
    code = run_test(args, TILED, {"cores": 8, "tiling": TilingOptions(l1, TilingOptions.l2, "L2", True)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    (gen / "out.txt").write_text(out)
    model = onnx.load(gen / "deeployStates" / "backend_post_binding.onnx")
    return {n.name: n.op_type for n in model.graph.node
            if any(p.key == "deeploy.engine" and p.value == "ne16" for p in n.metadata_props)}


def _conv_net(c, h, w, k, kernel, group=1, pads=None, unsigned=False):
    def build(rng):
        net = Net("Conv")
        x = net.input("input_0", image(rng, (1, c, h, w)) - (0 if unsigned else 128))
        net.output(conv_rq(net, rng, x, k, kernel, group=group, pads=pads, name="layer"))
        return net
    return build


def _plain_1x1(rng):
    """uint8 inputs, raw int32 sums (NE16's 32-bit outputs without normquant)."""
    net = Net("Conv")
    x = net.input("input_0", image(rng, (1, 24, 6, 7)))
    wt = net.const(weights(rng, (40, 24, 1, 1)), "layer.weight")
    net.output(net.node("Conv", [x, wt], {"group": 1, "kernel_shape": [1, 1], "pads": [0, 0, 0, 0],
                                          "strides": [1, 1]}, name="layer"))
    return net


def _linear(rng):
    """A MatMul with constant int8 weights and a requantization (a linear layer: a 1x1 job), wide
    enough for NE16 to beat the cluster's dot-product GEMM."""
    net = Net("MatMul")
    a = net.input("input_0", ints_in(rng, -128, 127, (18, 128)))
    y = net.node("MatMul", [a, net.const(weights(rng, (128, 64)), "layer.weight")], name="layer")
    net.output(net.calib_rqs(y, offset_rng=rng, name="layer.rqs"))
    return net


def _linear_64(rng):
    """A linear layer of 64 rows (as microLlama's), 128 -> 72 channels."""
    net = Net("MatMul")
    a = net.input("input_0", ints_in(rng, -128, 127, (64, 128)))
    y = net.node("MatMul", [a, net.const(weights(rng, (128, 72)), "layer.weight")], name="layer")
    net.output(net.calib_rqs(y, offset_rng=rng, name="layer.rqs"))
    return net


LAYERS = {"1x1": _conv_net(40, 9, 7, 48, 1), "1x1_plain_uint8": _plain_1x1,
          "3x3_padded": _conv_net(20, 8, 7, 36, 3, pads=(1, 0, 2, 1)),
          "3x3_depthwise": _conv_net(40, 9, 8, 40, 3, group=40, unsigned=True), "linear": _linear}


@needs_qemu
@pytest.mark.parametrize("kind", LAYERS)
def test_layer_kind_runs_bit_exact(kind, tmp_path, capsys):
    """Each NE16 layer kind, tiled into L1 (several tiles at 6000 B), matches the reference bit-exactly."""
    write_test(LAYERS[kind](np.random.default_rng(len(kind))), tmp_path / "net")
    on_ne16 = _run(tmp_path / "net", tmp_path / "gen", 6000, capsys)
    assert list(on_ne16.values()) == ["Ne16Conv"], on_ne16


@needs_qemu
def test_linear_rows_fill_the_subtiles(tmp_path, capsys):
    """A linear layer of 64 rows (tiled over its output channels) runs bit-exactly, each tile as
    two jobs, 3 x 21 pixels and one, busy for 8 subtiles of 3 x 3 (ceil(64 / 9)), not 9 (its
    rows as 8 x 8): 128 input (8 subtiles of 16) and 72 output channels, per 32-channel output subtile 8 loads of
    19 + 17 + its channels, 4 outputs quantised per cycle, a store per pixel and 6 cycles."""
    write_test(_linear_64(np.random.default_rng(64)), tmp_path / "net")
    on_ne16 = _run(tmp_path / "net", tmp_path / "gen", 64000, capsys, "all")
    assert list(on_ne16) == ["layer"], on_ne16
    line = next(x for x in (tmp_path / "gen" / "out.txt").read_text().splitlines() if x.startswith("[layer] "))
    tiles, busy, jobs = re.search(r"\] (\d+) tiles? .*NPU busy (\d+) cycles \((\d+) jobs?\)", line).groups()
    subtile = sum(8 * (19 + 17 + k) + -(-9 * k // 4) + 9 + 6 for k in (32, 32, 8))
    assert (int(busy), int(jobs)) == (8 * subtile, 2 * int(tiles)), line


@needs_qemu
def test_mobilenet_runs_bit_exact(capsys):
    """miniMobileNetv2 tiled with NE16 layers matches bit-exactly; the profile gives each NE16
    layer's busy cycles (its job model) and utilisation against NE16's peak, 162 MAC/cycle."""
    gen = DEEPLOY_TEST / "TEST_GAP9_W_NE16_TILED" / "suite" / "miniMobileNetv2"
    on_ne16 = _run(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2", gen, 64000, capsys, "all")
    assert {"block0.expand", "block1.expand", "block3.project"} <= set(on_ne16)
    line = next(x for x in (gen / "out.txt").read_text().splitlines() if x.startswith("[block3.project]"))
    busy, jobs, util = re.search(r"NPU busy (\d+) cycles \((\d+) jobs?\), utilisation (\d+\.\d)%", line).groups()
    # block3.project: 1x1 over 4x4 pixels, 48 -> 24 channels (the network's last block): its 16
    # pixels as 3 x 5 and 1 x 1, two jobs of 2 and 1 subtiles (3, not 4 as 4 x 4)
    assert int(busy) == NE16.job_cycles("1x1", 4, 4, 24, 48) == 3 * (3 * (19 + 17 + 24) + 9 * 24 // 4 + 9 + 6)
    assert int(jobs) == 2
    assert util == f"{100 * 4 * 4 * 24 * 48 / (int(busy) * 162):.1f}", line


@needs_qemu
def test_single_tile_ne16_layers_run_straight_line(capsys):
    """NE16 layers of few tiles run straight-line code (their kernel called on core 0, not the
    table loop): no tile-loop overhead, and programming its job costs the core a few hundred
    cycles beyond the job (the job registers are near the core, not across the SoC interconnect).
    The engine choice prices such a layer of one tile (its input not shifted to uint8) at its measured cycles
    within 10%: the job and the core's programming of it."""
    gen = DEEPLOY_TEST / "TEST_GAP9_W_NE16_TILED" / "suite" / "miniMobileNetv2_straight"
    _run(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2", gen, 64000, capsys, "all", verbose=True)
    manifest = json.loads((gen / "network" / "manifest.json").read_text())
    tiles = [t for t in manifest["tiles"] if t["engine"] == "ne16"]
    assert tiles and {t["loop"] for t in tiles} == {"code"}, tiles
    c = (gen / "network" / "Network.c").read_text()
    assert all(f"deeploy_t{t['index']}_kernel(&tile);" in c for t in tiles)
    out = (gen / "out.txt").read_text().splitlines()
    summaries = {t["layer"]: next(x for x in out if x.startswith(f"[{t['layer']}] ")) for t in tiles}
    one_tile = set()
    for name, summary in summaries.items():
        count = int(re.match(r"\[[^]]+\] (\d+) tiles? ", summary).group(1))
        kernel, overhead, busy = (int(re.search(rf"{what} (\d+)", summary).group(1))
                                  for what in ("compute", "overhead", "NPU busy"))
        assert overhead < 100 * count and kernel - busy < 400 * count, summary
        if count == 1:
            one_tile.add(name)
    prices = dict(re.findall(r"engine ne16 for \w+ '([^']+)': NPU \w+ mode: (\d+) modelled cycles on the NPU",
                             "\n".join(out)))
    assert set(prices) == set(summaries), prices
    unshifted = [n for n in one_tile if not any(x.startswith(f"[{n}.npu_unsigned]") for x in out)]
    assert unshifted, summaries
    for name in unshifted:
        kernel = int(re.search(r"compute (\d+)", summaries[name]).group(1))
        assert abs(int(prices[name]) - kernel) <= 0.1 * kernel, (name, prices[name], kernel)


def test_deeploy_compile_for_gap9_w_ne16(tmp_path):
    """`deeploy compile --platform GAP9_w_ne16` tiles onto NE16 and takes --no-npu-for; an option
    the platform does not have (the weight memory's), or no --l1 (NE16 works in L1 only), is one
    error line naming the fix, no traceback and no output folder."""
    import subprocess
    import sys
    model = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx"
    cmd = [sys.executable, "-m", "Deeploy.cli", "compile", str(model), "--platform", "GAP9_w_ne16", "-o"]
    ok = subprocess.run(cmd + [str(tmp_path / "a"), "--l1", "64000", "--no-npu-for", "block1.expand", "-v"],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "engine cluster for RequantizedConv 'block1.expand': kept on the cluster by --no-npu-for" in ok.stdout
    assert "engine ne16 for RequantizedConv 'block2.expand': NPU 1x1 mode" in ok.stdout
    bad = subprocess.run(cmd + [str(tmp_path / "b"), "--l1", "64000", "--wmem-size", "4096"], capture_output=True,
                         text=True)
    assert bad.returncode != 0 and "Traceback" not in bad.stderr, bad.stderr
    assert "platform GAP9_w_ne16 takes no --wmem-size: drop it (it is for another platform)" in bad.stderr
    assert not (tmp_path / "b").exists()
    untiled = subprocess.run(cmd + [str(tmp_path / "c")], capture_output=True, text=True)
    assert untiled.returncode != 0 and "Traceback" not in untiled.stderr, untiled.stderr
    assert ("platform GAP9_w_ne16 compiles tiled only (NE16 reads and writes only the TCDM (L1)): give --l1, "
            "e.g. --l1 64000") in untiled.stderr
    assert not (tmp_path / "c").exists()
