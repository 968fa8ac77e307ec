"""The files a profiled run writes and the graph snapshots: trace.json follows the Trace Event
Format (structure, tracks, no overlapping events on a track) and agrees with profile.json and the
text profile; every labelled line of the text profile sums to its total; profile.html is one
self-contained page; the ONNX snapshots of several networks pass onnx.checker."""

from __future__ import annotations

import argparse
import html
import json
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import onnx
import pytest

from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from Deeploy.tiling.network import TilingOptions
from DeeployTest.testUtils.runner import RunnerPlatform, run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401 (QEMU present)

MODELS = DEEPLOY_TEST / "Tests" / "Models"
PARTS = re.compile(r"(\d+) cycles = compute (\d+) \+ exposed DMA (\d+) \(issue (\d+), wait (\d+)\) \+ overhead (\d+) "
                   r"\(set-up (\d+), between kernels (-?\d+)\)")


def _profiled_run(test_dir: Path, gen: Path, capsys, l1: int, level: str = "L2", profile="all",
                  roofline: bool = False) -> str:
    args = argparse.Namespace(test=str(test_dir), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=8, l1=l1, l2=TilingOptions.l2, defaultMemLevel=level, doublebuffer=True,
                              profileTiling=profile, plotMemAlloc=False, timeout=None, roofline=roofline)
    code = run_test(args, RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED"),
                    {"cores": 8, "tiling": TilingOptions(l1, TilingOptions.l2, level, True)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    return out


def check_trace(trace: dict, profile: dict) -> None:
    """The Trace Event Format's structure, and the totals of profile.json."""
    assert set(trace) >= {"traceEvents"} and isinstance(trace["traceEvents"], list)
    named, tracks = set(), defaultdict(list)
    for ev in trace["traceEvents"]:
        assert {"name", "ph", "pid", "tid"} <= set(ev), ev
        assert ev["ph"] in ("X", "M"), ev
        if ev["ph"] == "M":
            assert ev["name"] in ("process_name", "thread_name", "process_sort_index", "thread_sort_index"), ev
            if ev["name"] == "thread_name":
                named.add((ev["pid"], ev["tid"]))
            continue
        assert isinstance(ev["ts"], (int, float)) and isinstance(ev["dur"], (int, float)), ev
        assert ev["ts"] >= 0 and ev["dur"] >= 0, ev
        tracks[(ev["pid"], ev["tid"])].append(ev)
    assert tracks and set(tracks) <= named, set(tracks) - named
    clock = trace["otherData"]["clock_mhz"]
    for track, events in tracks.items():
        events.sort(key=lambda e: e["ts"])
        for a, b in zip(events, events[1:]):   # one after the other, in whole nanoseconds too (no event nests)
            assert round(a["ts"] * 1000) + round(a["dur"] * 1000) <= round(b["ts"] * 1000), (track, a, b)
        for ev in events:   # both ends rounded to the nanosecond
            assert abs(ev["dur"] * clock - ev["args"]["cycles"]) <= clock / 1000 + 1e-6 * ev["args"]["cycles"], ev
    layers = [e for e in trace["traceEvents"] if e.get("cat") == "layer"]
    assert [e["name"] for e in layers] == [e["name"] for e in profile["layers"]]
    assert sum(e["args"]["cycles"] for e in layers) == pytest.approx(profile["cycles"], abs=len(layers))
    for entry in profile["layers"]:
        assert entry["compute"] + entry["exposed_dma"] + entry["overhead"] == pytest.approx(entry["cycles"], abs=1e-6)
        assert min(entry["compute"], entry["exposed_dma"], entry["overhead"]) >= 0, entry
        assert 0 <= entry["overhead_setup"] <= entry["overhead"] + 1e-6, entry
    for engine in profile["engines"]["dma"]:
        busy = sum(e["args"]["cycles"] for e in trace["traceEvents"]
                   if e.get("cat") == "dma" and e["pid"] == 3 and e["tid"] == engine["engine"])
        assert busy == pytest.approx(engine["busy"], abs=1.0), engine


def check_text(out: str, profile: dict) -> None:
    """Every labelled line sums to its total, the network total comes last and matches profile.json."""
    lines = [line for line in out.splitlines() if PARTS.search(line)]
    assert lines, out
    for line in lines:
        total, compute, dma, issue, wait, overhead, setup, between = map(int, PARTS.search(line).groups())
        assert abs(compute + dma + overhead - total) <= 2 and abs(issue + wait - dma) <= 1, line
        assert abs(setup + between - overhead) <= 1 and setup >= 0 and between >= 0, line
    last = out.strip().splitlines()[-1]
    assert last.startswith("Network total: "), last
    assert int(PARTS.search(last).group(1)) == round(profile["cycles"])
    assert f"Runtime: {round(profile['cycles'])} cycles" in out


def check_files(gen: Path, out: str) -> None:
    profile = json.loads((gen / "profile.json").read_text())
    check_trace(json.loads((gen / "trace.json").read_text()), profile)
    check_text(out, profile)
    page = (gen / "profile.html").read_text()
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert page.count("<rect class=\"compute\"") >= sum(1 for e in profile["layers"] if e["compute"] > 0)
    assert all(e["name"] in page for e in profile["layers"])


def test_tiled_profile_files(tmp_path, capsys):
    out = _profiled_run(MODELS / "miniMobileNetv2", tmp_path / "gen", capsys, 16000, profile="tiles")
    check_files(tmp_path / "gen", out)
    assert "[stem L1]" in out and "load phase" in out


def test_profile_level_selects_the_staging_tiles(tmp_path, capsys):
    """--profileTiling=L3 on a network with operands in L3: only the L3 <-> L2 tiles are listed."""
    out = _profiled_run(MODELS / "miniMobileNetv2", tmp_path / "gen", capsys, 16000, "L3", "L3")
    check_files(tmp_path / "gen", out)
    assert re.search(r"^\[\S+ L2\]\[SB\]", out, re.M) and not re.search(r"^\[\S+ L1\]\[", out, re.M), out
    tiles = [t for e in json.loads((tmp_path / "gen" / "profile.json").read_text())["layers"] for t in e.get("tiles", [])]
    assert tiles and {t["level"] for t in tiles} == {"L2"}


def test_profile_summary_names_the_largest_loss(tmp_path, capsys):
    """A bare --profileTiling: the summary comes first (the split, the cycles per op type as
    profile.json's layers add up, the largest loss with its remedy), then the layers grouped by op
    type, no tile's phases. microLlama64 at --l1 64000 runs one-tile layers whose straight-line loops
    cost next to nothing, so the tile-loop overhead is not its largest loss. The roofline calls the
    layers whose cycles are mostly overhead, or that reach less than a quarter of their roof,
    overhead-bound."""
    out = _profiled_run(MODELS / "microLlama" / "microLlama64", tmp_path / "gen", capsys, 64000, profile="all",
                        roofline=True)
    check_files(tmp_path / "gen", out.split("\nRoofline of ")[0])   # the roofline follows the profile
    profile = json.loads((tmp_path / "gen" / "profile.json").read_text())
    lines = out.splitlines()
    first = lines.index("Profile summary (modelled cycles):")
    assert lines.index(next(line for line in lines if line.startswith("Per layer, by op type"))) > first
    assert "load phase" not in out and "][Tile " not in out
    per_op = defaultdict(float)
    for entry in profile["layers"]:
        per_op[entry["op"]] += entry["cycles"]
    for op, cycles in per_op.items():
        share = 100 * cycles / profile["cycles"]
        assert re.search(rf"^    {op} +\d+ layers? +{round(cycles)} cycles +{share:.1f}%", out, re.M), (op, out)
    loss = next(line for line in lines if "Largest loss:" in line or "No large loss:" in line)
    between = sum(e["overhead"] - e["overhead_setup"] for e in profile["layers"])
    setup = sum(e["overhead_setup"] for e in profile["layers"])
    assert between < 0.02 * profile["cycles"], profile   # one-tile layers: straight-line loops, no bookkeeping
    name, lost = max((("tile-loop overhead", between), ("layer set-up overhead", setup),
                      ("exposed DMA", profile["exposed_dma"])), key=lambda x: x[1])
    if lost >= 0.1 * profile["cycles"]:
        assert loss.startswith(f"  Largest loss: {name}, {round(lost)} cycles"), loss
    if lost >= 0.1 * profile["cycles"] and name == "exposed DMA":
        # a one-tile layer's loads cannot overlap its own kernel: --doublebuffer is no remedy
        one_tile = sum(e["exposed_dma"] for e in profile["layers"] if len(e["tiles"]) == 1)
        assert ("in one-tile layers" in loss) == (one_tile >= 0.5 * lost), loss
        if all(len(e["tiles"]) <= 1 for e in profile["layers"]):
            assert "--doublebuffer prefetches" not in loss, loss
    else:
        assert loss.startswith("  No large loss: compute is"), loss
    # profile.json and profile.html carry the same: totals per op type, the loss, alike layers together
    assert {e["op"]: e["cycles"] for e in profile["op_types"]} == pytest.approx(dict(per_op))
    assert profile["largest_loss"] == loss.strip()
    assert any(e["layers"] > 1 and "*" in e["name"] for e in profile["largest"]), profile["largest"]
    page = (tmp_path / "gen" / "profile.html").read_text()
    assert "Cycles per op type" in page and html.escape(profile["largest_loss"]) in page
    assert all(f">{e['op']} x{e['layers']}<" in page or f">{e['op']}<" in page for e in profile["op_types"])
    roofline = json.loads((tmp_path / "gen" / "roofline.json").read_text())
    mostly_overhead = {e["name"] for e in profile["layers"] if e["overhead"] >= 0.5 * e["cycles"]}
    unexplained = {p["name"] for p in roofline["layers"]
                   if p["name"] in mostly_overhead or p["ops"] / p["cycles"] < 0.25 * p["roof"]}
    assert {p["name"] for p in roofline["layers"] if p["bound"] == "overhead"} == unexplained
    assert (f"overhead-bound: {len(unexplained)} of" in out) == bool(unexplained), out


@pytest.mark.slow
def test_tiled_profile_files_microllama64_parallel(tmp_path, capsys):
    out = _profiled_run(MODELS / "microLlama" / "microLlama64_parallel", tmp_path / "gen", capsys, 64000)
    check_files(tmp_path / "gen", out)


SNAPSHOT_NETWORKS = ["miniMobileNetv2", "CCT", "KWS_DSCNN", "microLlama/microLlama64", "Float/Llama", "Float/MobileNet"]


@pytest.mark.parametrize("network", SNAPSHOT_NETWORKS)
def test_snapshots_pass_onnx_checker(network, tmp_path):
    """Custom ops in the deeploy domain with an opset import, kernel annotations as metadata."""
    d = MODELS / network
    graph = load_onnx(d / "network.onnx")
    assign_input_types(graph, map_arrays(d / "inputs.npz", load_npz_arrays(d / "inputs.npz"), graph.inputs, graph,
                                         "input"))
    compile_graph(graph, "Siracusa", tmp_path / "out", snapshot_dir=tmp_path / "states", cores=8)
    snapshots = sorted((tmp_path / "states").glob("*.onnx"))
    assert [p.name for p in snapshots] == ["backend_post_binding.onnx", "frontend.onnx", "middleware.onnx"]
    for path in snapshots:
        model = onnx.load(path)
        onnx.checker.check_model(model)
        imports = {o.domain for o in model.opset_import}
        for node in model.graph.node:
            assert node.domain in imports, (path.name, node.name, node.domain)
            if node.domain == "":
                assert onnx.defs.has(node.op_type, ""), node.op_type
    bound = onnx.load(tmp_path / "states" / "backend_post_binding.onnx")
    for node in bound.graph.node:
        meta = {p.key: p.value for p in node.metadata_props}
        assert meta.get("deeploy.kernel") and meta.get("deeploy.engine"), node.name
        assert not any(a.name.startswith("deeploy") for a in node.attribute), node.name


def test_profile_names_the_network_and_engines(tmp_path, capsys):
    """The pages name the test network (-t), not the folder they are generated into (--gen-dir)."""
    _profiled_run(MODELS / "miniMobileNetv2", tmp_path / "mini", capsys, 16000)
    profile = json.loads((tmp_path / "mini" / "profile.json").read_text())
    assert profile["network"] == "miniMobileNetv2" and profile["platform"] == "Siracusa"
    assert [e["name"] for e in profile["engines"]["dma"]] == ["cluster", "L3"]
    page = (tmp_path / "mini" / "profile.html").read_text()
    assert "<title>Cycles per layer - Siracusa: miniMobileNetv2</title>" in page


def test_untiled_profile_files(tmp_path, capsys):
    """--profileUntiled writes the same files; the layers' forks are their compute."""
    args = argparse.Namespace(test=str(MODELS / "miniMobileNetv2"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(tmp_path / "gen"), cores=8, profileUntiled=True, plotMemAlloc=False,
                              timeout=None)
    assert run_test(args, RunnerPlatform("Siracusa", "TEST_SIRACUSA"), {"cores": 8}) == 0
    out = capsys.readouterr().out
    check_files(tmp_path / "gen", out)
    profile = json.loads((tmp_path / "gen" / "profile.json").read_text())
    forked = [e for e in profile["layers"] if e["forks"]]
    assert forked and all(e["compute"] > 0 for e in forked)


RUNNER = DEEPLOY_TEST / "testRunner_tiled_siracusa.py"


@pytest.mark.parametrize("flags, message", [
    (["--toolchain=LLVM"], "build with GCC only"),
    (["-p", "Generic"], "use testRunner_generic.py"),
    (["--platform=Snitch"], "this runner compiles for Siracusa, not 'Snitch'"),
    (["--profileTiling=L5"], "'L5' is not a memory level"),
])
def test_peer_flags_refused_with_a_hint(flags, message, tmp_path):
    proc = subprocess.run([sys.executable, str(RUNNER), "-t", str(MODELS / "miniMobileNetv2"), "--gen-dir",
                           str(tmp_path / "gen"), *flags], capture_output=True, text=True)
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "gen").exists()


def test_profile_tiling_on_the_untiled_runner_is_refused_with_a_hint(tmp_path):
    for flag in ("--profileTiling", "--profileTiling=L2"):
        proc = subprocess.run([sys.executable, str(DEEPLOY_TEST / "testRunner_siracusa.py"), "-t",
                               str(MODELS / "miniMobileNetv2"), "--gen-dir", str(tmp_path / "gen"), flag],
                              capture_output=True, text=True)
        assert proc.returncode == 2 and "--profileUntiled" in proc.stderr, proc.stderr
        assert not (tmp_path / "gen").exists()


def test_peer_flags_accepted(tmp_path):
    """The peer's command line: -p Siracusa, --toolchain=GCC, --profileTiling=L2."""
    proc = subprocess.run([sys.executable, str(RUNNER), "-t", str(MODELS / "miniMobileNetv2"), "--l1", "16000",
                           "-p", "Siracusa", "--toolchain=GCC", "--profileTiling=L2", "--gen-dir", str(tmp_path / "gen")],
                          capture_output=True, text=True, cwd=DEEPLOY_TEST)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "[stem L1][" in proc.stdout and proc.stdout.strip().splitlines()[-1].startswith("Network total:")
    assert json.loads((tmp_path / "gen" / "profile.json").read_text())["tile_levels"] == ["L1"]
