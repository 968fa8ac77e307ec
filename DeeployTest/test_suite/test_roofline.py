"""The roofline report (``Deeploy/analysis/roofline.py``): on a real run of microLlama64_parallel
(tiled, --l1 64000, 8 cores) every layer lies under its roofs, recomputed here from the report's
raw quantities and the platform's published figures (specs/siracusa-timing.md); the bytes the
report replays from the tile schedule are the bytes the plugin recorded for the DMA transfers
in each layer; the HTML holds one point per plotted layer; the weight-streaming line of a
region is checked on a hand-built graph; platforms without a cycle model are refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from Deeploy.analysis.roofline import LayerPoint, region_streams
from Deeploy.analysis.roofs import Roof
from Deeploy.cli import main
from Deeploy.ir.graph import Graph, Node, Tensor
from Deeploy.ir.dtypes import INT8
from Deeploy.ir.region import Region
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST

LLAMA = CORPUS / "Models" / "microLlama" / "INT8" / "microLlama64_parallel"
# spec "Cluster": 8 cores; the cores' widest instruction is the PULP DSP extension's 4-way int8
# dot product (cv.sdotsp.b: 4 multiply-accumulates, 8 counted ops), one instruction per cycle
PEAK = 8 * 8.0
# spec "Memories and DMA": cluster DMA 8 B/cycle (L2 <-> L1); L3 (HyperBus) 1 byte per cycle
DMA = {"L2": 8.0, "L3": 1.0}


def _runner(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DEEPLOY_TEST / script), *args], capture_output=True, text=True,
                          cwd=DEEPLOY_TEST, timeout=900)


def _dma_bytes_per_layer(gen, manifest) -> dict[int, dict[str, int]]:
    """Bytes of the DMA transfers the plugin recorded while each layer ran (its marker window)."""
    from Deeploy.runtime.abi import LAYER_BASE
    from Deeploy.targets.siracusa.execute import last_run
    from Deeploy.targets.siracusa.platform import TIMING
    from Deeploy.targets.siracusa.records import read_records
    from Deeploy.targets.siracusa.timing import DMA_CLUSTER, model_cycles
    timing = last_run(model_cycles(read_records(gen / "build" / "records.txt"), TIMING))
    out: dict[int, dict[str, int]] = {}
    for lt in timing.layers:
        index = manifest.layer_of_marker(LAYER_BASE + lt.layer).index
        moved = out.setdefault(index, {})
        for d in timing.dma:
            if lt.start <= d.issue < lt.start + lt.cycles:
                level = "L2" if d.engine == DMA_CLUSTER else "L3"
                moved[level] = moved.get(level, 0) + d.bytes
    return out


@pytest.mark.skipif(not (LLAMA / "network.onnx").is_file(), reason="external corpus missing")
def test_microllama_parallel_layers_under_their_roofs(tmp_path):
    from Deeploy.manifest import read_manifest
    gen = tmp_path / "gen"
    proc = _runner("testRunner_tiled_siracusa.py", "-t", str(LLAMA), "--cores=8", "--l1", "64000", "--roofline",
                   "--gen-dir", str(gen))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "modelled cycles of the run's profile" in proc.stdout
    report = json.loads((gen / "roofline.json").read_text())
    assert report["cycles"] == "profile" and len(report["layers"]) > 200 and report["no_cycles"] == []
    recorded = _dma_bytes_per_layer(gen, read_manifest(gen / "network"))
    for p in report["layers"]:
        assert p["engine"] == "cluster", p
        achieved = p["ops"] / p["cycles"]
        roofs = [PEAK] + [p["ops"] / b * DMA[lv] for lv, b in p["bytes"].items() if b]
        assert achieved <= min(roofs), (p["name"], achieved, roofs)
        # the replayed schedule moves what the program moved
        assert {lv: b for lv, b in p["bytes"].items() if b} == recorded[p["index"]], (p["name"], recorded[p["index"]])
    runtime = int(re.search(r"^Runtime: (\d+) cycles$", proc.stdout, re.M).group(1))
    assert sum(p["cycles"] for p in report["layers"]) <= runtime
    page = (gen / "roofline.html").read_text()
    svg = ET.fromstring(re.search(r"<svg\b.*?</svg>", page, re.S).group(0))
    circles = [c for c in svg.iter("{http://www.w3.org/2000/svg}circle") if c.get("class") in ("pt", "pt overhead")]
    assert len(circles) == len(report["layers"])


def test_region_streaming_bandwidth():
    """Two iterations of MatMul(x, W_i): 64 B of weights per iteration over 32 cycles per
    iteration need 2 B/cycle; L3 gives 1 B/cycle (200%)."""
    g = Graph("g", {"x": Tensor("x", (1, 8), INT8)}, [], ["x"], ["y1"])
    for i in range(2):
        g.tensors[f"w{i}"] = Tensor(f"w{i}", (8, 8), INT8, value=np.full((8, 8), i + 1, dtype=np.int64))
        g.tensors[f"y{i}"] = Tensor(f"y{i}", (1, 8), INT8)
        g.nodes.append(Node(f"mm{i}", "MatMul", ["x" if i == 0 else "y0", f"w{i}"], [f"y{i}"]))
    g.regions = [Region("stack", (("mm0",), ("mm1",)))]
    points = [LayerPoint(i, f"mm{i}", "MatMul", "cluster", 128, {"L2": 80}, "L2", 1.6, 32.0, 4.0, 8.0, "p", 8.0, "b",
                         8.0, "compute") for i in range(2)]
    streams, notes = region_streams(g, points, Roof("L3 DMA", 1.0, "test"))
    assert notes == [] and len(streams) == 1
    s = streams[0]
    assert (s.iterations, s.body_layers, s.parameter_bytes, s.body_cycles) == (2, 1, 64, 32.0)
    assert s.needed == 2.0 and s.share == 2.0


def test_rolled_body_occurrences_go_back_to_their_iterations():
    """A rolled body runs under the first iteration's marker: its occurrences, in time order, are
    the iterations in order; a layer outside any region sums its occurrences."""
    from Deeploy.analysis.roofline import LayerWork, spread_iterations
    g = Graph("g", {}, [], [], [])
    g.regions = [Region("r", (("a0", "b0"), ("a1", "b1"), ("a2", "b2")))]
    roof = Roof("x", 1.0, "")
    work = [LayerWork(k, n, "Add", "cluster", False, 1, {}, roof, {}, None)
            for k, n in enumerate(["a0", "b0", "a1", "b1", "a2", "b2", "tail"])]
    runs = {0: [(30.0, 7.0), (0.0, 5.0), (10.0, 6.0)], 1: [(5.0, 1.0), (15.0, 2.0)], 3: [(40.0, 9.0)],
            6: [(50.0, 1.0), (60.0, 2.0)]}
    cycles = spread_iterations(g, work, runs)
    assert [cycles[k] for k in (0, 2, 4)] == [5.0, 6.0, 7.0]      # first iteration's marker, 3 runs
    assert [cycles[k] for k in (1, 3, 5)] == [1.0, 2.0, 9.0]      # two rolled runs, the last iteration peeled
    assert cycles[6] == 3.0


@pytest.mark.skipif(not (CORPUS / "Models" / "microLlama" / "INT8" / "microLlama64" / "network.onnx").is_file(),
                    reason="external corpus missing")
def test_rolled_microllama_every_layer_has_its_cycles(tmp_path):
    """microLlama64 rolled (--loop-rolling, Siracusa 8 cores): every layer with arithmetic gets its
    own iteration's cycles and lies under its roofs; the region reports its 8 iterations."""
    gen = tmp_path / "gen"
    proc = _runner("testRunner_siracusa.py", "-t", str(CORPUS / "Models" / "microLlama" / "INT8" / "microLlama64"),
                   "--cores=8", "--loop-rolling", "--roofline", "--gen-dir", str(gen))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads((gen / "roofline.json").read_text())
    compiled = json.loads((gen / "network" / "manifest.json").read_text())
    with_ops = {p["name"] for p in report["layers"]}
    assert len(with_ops) > 200 and [r["iterations"] for r in report["regions"]] == [8], report["regions"]
    path = 4.0   # untiled: the cluster's path to L2 serves one word (4 B) per cycle (TimingModel l2_path_cycles)
    for p in report["layers"]:
        assert p["ops"] / p["cycles"] <= min([PEAK] + [p["ops"] / b * path for b in p["bytes"].values() if b]), p
    assert report["no_cycles"] == []
    assert len(with_ops) + len(report["skipped"]) == sum(1 for layer in compiled["layers"] if layer["runs"])


def test_generic_refuses_roofline(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx"),
                 "--platform", "Generic", "-o", str(out), "--roofline"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no cycle model" in err[0] and not out.exists(), err
    proc = _runner("testRunner_generic.py", "-t", "Tests/Models/miniMobileNetv2", "--roofline",
                   "--gen-dir", str(tmp_path / "g"))
    assert proc.returncode != 0 and "Generic has no cycle model" in proc.stderr


def test_compile_roofline_estimates(tmp_path, capsys):
    """deeploy compile --roofline: the tiler's estimates, under the same roofs, files written."""
    out = tmp_path / "out"
    assert main(["compile", str(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx"),
                 "--platform", "Siracusa", "--l1", "16000", "-o", str(out), "--roofline"]) == 0
    printed = capsys.readouterr().out
    assert "cycles estimated by the tiler's cost model" in printed
    report = json.loads((out / "roofline.json").read_text())
    assert report["cycles"] == "estimate" and report["layers"]
    for p in report["layers"]:
        assert p["ops"] / p["cycles"] <= min([PEAK] + [p["ops"] / b * DMA[lv] for lv, b in p["bytes"].items() if b])
    page = (out / "roofline.html").read_text()   # one point per layer, overhead-bound ones outlined
    assert page.count('class="pt"') + page.count('class="pt overhead"') == len(report["layers"])


def test_analyze_roofline_json(capsys):
    """deeploy analyze --roofline --json: the report without writing anything, estimated cycles."""
    assert main(["analyze", str(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx"),
                 "--platform", "Siracusa", "--roofline", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cycles"] == "estimate" and not report["tiled"] and report["layers"]
    assert all(p["bytes"] and set(p["bytes"]) <= {"L2"} for p in report["layers"])   # untiled: all data in L2


def test_npu_peaks_are_the_specs():
    """specs/neureka.md "Throughput": 1152 MAC/cycle (1x1), 1134 (3x3), about 40 (3x3 depthwise)."""
    from Deeploy.targets.siracusa_w_neureka.roofs import npu_peak_macs
    assert npu_peak_macs("1x1") == 1152 and npu_peak_macs("3x3") == 1134 and round(npu_peak_macs("3x3dw")) == 40


def test_point_labels_never_overlap():
    """Labels of points close together go beside them where no other label is, or are left out
    (the point's numbers still show when pointed at): never written over each other."""
    from Deeploy.analysis.roofline import Roofline
    from Deeploy.analysis.roofline_plot import roofline_html
    ops = ["RequantizedGemm", "RequantizedMatMul", "RequantShift", "RequantizedAdd", "Concat", "iRMSNorm",
           "RequantizedMul", "Transpose", "RequantizediSoftmax", "RequantizediHardswish", "Gather", "Softmax"]
    points = [LayerPoint(k, f"layer{k}", op, "cluster", 1000, {"L2": 500}, "L2", 1.5 + 0.05 * k, 1000.0 - k,
                         1.0 + 0.03 * (k % 5), PEAK, "cluster", DMA["L2"], "L2 DMA", 12.0, "overhead")
              for k, op in enumerate(ops)]
    report = Roofline("Siracusa", "net.onnx", 8, True, "profile", points, {"cluster": Roof("cluster", PEAK, "")},
                      {"L2 DMA": Roof("L2 DMA", DMA["L2"], "")})
    labels = [(float(x), float(y), text) for x, y, text in
              re.findall(r'<text class="label" x="([\d.]+)" y="([\d.]+)">([^<]*)</text>', roofline_html(report, "t"))]
    assert len(labels) >= 4, labels
    for k, (x, y, text) in enumerate(labels):
        for x2, y2, text2 in labels[k + 1:]:
            apart = x + 7 * len(text) <= x2 or x2 + 7 * len(text2) <= x or abs(y - y2) >= 14
            assert apart, (text, x, y, text2, x2, y2)


def _layer(dtype):
    """A forked cluster layer with one output of dtype, and its graph (what ``cluster_peak`` reads)."""
    from types import SimpleNamespace
    g = Graph("g", {"y": Tensor("y", (4,), dtype)}, [], [], ["y"])
    engine = SimpleNamespace(name="cluster", forked=True)
    return SimpleNamespace(engine=engine, node=Node("n", "Add", [], ["y"])), g


def test_cluster_peaks_integer_simd_and_shared_fpus():
    """Spec "Cluster": 8 cores, each one 4-way int8 dot product (8 ops) per cycle: 64 ops/cycle for an
    integer layer; 4 FPUs shared by the 8 cores, one fmadd.s (2 ops) each per cycle: 8 for a float one."""
    from Deeploy.ir.dtypes import FLOAT32
    from Deeploy.targets.siracusa.roofs import cluster_peak
    assert cluster_peak(*_layer(INT8), 8).value == PEAK
    assert cluster_peak(*_layer(FLOAT32), 8).value == 2 * 4
    assert cluster_peak(*_layer(FLOAT32), 2).value == 2 * 2   # 2 cores, an FPU each


def test_overhead_bound_when_neither_roof_explains_the_cycles():
    """1024 ops on 128 bytes of L1 under a 64 ops/cycle peak and 64 B/cycle: the roof is 64 ops/cycle
    (compute). At 50 cycles (20.5 ops/cycle, 32% of it) the roof explains the cycles; at 80 cycles
    (12.8 ops/cycle, 20%) neither roof does: overhead-bound, as with half the cycles overhead."""
    from Deeploy.analysis.roofline import LayerWork, _point
    w = LayerWork(0, "mm", "MatMul", "cluster", False, 1024, {"L1": 128}, Roof("p", 64.0, "test"),
                  {"L1": Roof("b", 64.0, "test")}, None)
    assert _point(w, 50.0).bound == "compute"
    assert _point(w, 80.0).bound == "overhead"
    assert _point(w, 50.0, overhead=25.0).bound == "overhead"
