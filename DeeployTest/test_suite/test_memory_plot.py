"""The memory-allocation plot: well-formed HTML with inline SVG, one rectangle per buffer at the
place its steps, offset and size say, the capacity line, escaping, determinism, input errors."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET

import pytest

from Deeploy.codegen.memory_plot import PlotBuffer, PlotLevel, write_manifest_plot, write_memory_plot
from Deeploy.compiler import compile_graph
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from Deeploy.tiling.network import TilingOptions
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

SVG = "{http://www.w3.org/2000/svg}"
TOL = 0.011   # coordinates are written with two decimals

STEPS = [f"{k}: {op}" for k, op in enumerate(["Conv_0", "Relu_1", "MaxPool_2", "Gemm_3", "Softmax_4"])]


def _levels() -> list[PlotLevel]:
    l1 = PlotLevel("L1", 64 * 1024, (
        PlotBuffer("conv: x tile (slot 1/2)", 0, 8192, 0, 0, "tile"),
        PlotBuffer("conv: x tile (slot 2/2)", 8192, 8192, 0, 0, "tile"),
        PlotBuffer("conv: w", 16384, 4096, 0, 0, "constant"),
        PlotBuffer("gemm: y tile", 0, 20000, 3, 4, "tile"),
        PlotBuffer("tiny", 40000, 1, 2, 2, "scratch"),
        PlotBuffer("empty", 100, 0, 1, 1, "scratch"),
    ))
    l2 = PlotLevel("L2", 512 * 1024, (
        PlotBuffer("input", 0, 150528, 0, 0, "input"),
        PlotBuffer("conv_out", 150528, 200704, 0, 1, "activation"),
        PlotBuffer("relu_out", 0, 100000, 1, 2, "activation"),
        PlotBuffer("pool_out", 100000, 50176, 2, 3, "activation"),
        PlotBuffer("logits", 351232, 4000, 3, 4, "output"),
        PlotBuffer("dma buffer", 400000, 2048, 1, 3, "staging"),
        PlotBuffer("oddball", 402048, 1000, 4, 4, "mystery"),
    ))
    l3 = PlotLevel("L3", None, ())
    return [l1, l2, l3]


def _svgs(text: str) -> list[ET.Element]:
    return [ET.fromstring(m) for m in re.findall(r"<svg\b.*?</svg>", text, flags=re.S)]


def _doc(text: str) -> ET.Element:
    assert text.startswith("<!DOCTYPE html>\n")
    return ET.fromstring(text[len("<!DOCTYPE html>\n"):])


def _buffer_rects(svg: ET.Element) -> list[ET.Element]:
    return [r for r in svg.iter(f"{SVG}rect") if r.get("class", "").split()[:1] == ["b"]]


def _expected_geometry(svg: ET.Element, b: PlotBuffer) -> tuple[float, float, float, float]:
    x0, step_px = float(svg.get("data-x0")), float(svg.get("data-step-px"))
    y0, byte_px = float(svg.get("data-y0")), float(svg.get("data-byte-px"))
    min_h = float(svg.get("data-min-h"))
    h = max(b.size * byte_px, min_h)
    return x0 + b.first * step_px, (b.last + 1 - b.first) * step_px, y0 - b.offset * byte_px - h, h


def test_file_is_wellformed_and_rects_match_buffers(tmp_path):
    levels = _levels()
    out = write_memory_plot(tmp_path / "plot.html", "net: memory", STEPS, levels)
    assert out == tmp_path / "plot.html"
    text = out.read_text(encoding="utf-8")

    root = _doc(text)                                   # the whole page parses as XML
    assert root.tag == "html" and root.find("body") is not None
    assert "<script src" not in text and "http://" not in text.replace("http://www.w3.org/2000/svg", "")

    svgs = _svgs(text)
    assert [s.get("data-level") for s in svgs] == ["L1", "L2"]   # L3 is empty: no plot
    for svg, level in zip(svgs, levels):
        assert int(svg.get("data-steps")) == len(STEPS)
        rects = _buffer_rects(svg)
        assert len(rects) == len(level.buffers)
        for rect, b in zip(rects, level.buffers):
            assert rect.find(f"{SVG}title").text.split("\n")[0] == b.label
            x, w, y, h = _expected_geometry(svg, b)
            got = [float(rect.get(a)) for a in ("x", "width", "y", "height")]
            assert got == pytest.approx([x, w, y, h], abs=TOL), b
        # sizes scale linearly with bytes, steps with columns
        byte_px = float(svg.get("data-byte-px"))
        big = max(level.buffers, key=lambda b: b.size)
        assert big.size * byte_px > 20
        # the plot's address range covers every buffer
        top = float(svg.get("data-y0")) - float(svg.get("data-byte-px")) * max(b.offset + b.size for b in level.buffers)
        assert top >= 0


def test_tooltip_gives_label_offset_size_steps(tmp_path):
    text = write_memory_plot(tmp_path / "p.html", "t", STEPS, _levels()).read_text()
    svg = _svgs(text)[1]
    tip = _buffer_rects(svg)[3].find(f"{SVG}title").text   # pool_out
    assert tip.startswith("pool_out\n")
    assert "offset 100000" in tip and "size 50176 B" in tip
    assert "2..3" in tip and "2: MaxPool_2" in tip and "3: Gemm_3" in tip


def test_capacity_line_and_peak(tmp_path):
    text = write_memory_plot(tmp_path / "p.html", "t", STEPS, _levels()).read_text()
    for svg, cap, peak in zip(_svgs(text), (64 * 1024, 512 * 1024), (40001, 403048)):
        assert int(svg.get("data-capacity")) == cap
        assert int(svg.get("data-peak")) == peak
        lines = [ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "cap"]
        assert len(lines) == 1
        y = float(svg.get("data-y0")) - cap * float(svg.get("data-byte-px"))
        assert float(lines[0].get("y1")) == pytest.approx(y, abs=TOL)
        assert float(lines[0].get("y2")) == pytest.approx(y, abs=TOL)
        assert float(lines[0].get("y1")) >= 0
    css = _doc(text).find("head/style").text
    assert re.search(r"\.cap\{[^}]*stroke-dasharray", css)
    # headings give the peak
    h2 = [re.sub(r"<[^>]+>", "", h) for h in re.findall(r"<h2>(.*?)</h2>", text)]
    assert h2[0].startswith("L1") and "peak" in h2[0] and "40001 B" in h2[0] and "65536 B" in h2[0]
    assert h2[1].startswith("L2") and "403048 B" in h2[1]
    assert "no buffers" in h2[2]


def test_capacity_exceeded_is_flagged(tmp_path):
    lv = PlotLevel("L1", 1000, (PlotBuffer("a", 0, 800, 0, 0), PlotBuffer("b", 800, 400, 0, 0)))
    text = write_memory_plot(tmp_path / "p.html", "t", ["0: A"], [lv]).read_text()
    assert "exceeds capacity by 200 B" in text
    svg = _svgs(text)[0]
    line = next(ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "cap")
    top_rect = _buffer_rects(svg)[1]
    assert float(top_rect.get("y")) < float(line.get("y1"))        # the overflowing buffer pokes above


def test_huge_capacity_is_noted_not_drawn(tmp_path):
    lv = PlotLevel("L3", 64 << 20, (PlotBuffer("w", 0, 300_000, 0, 1, "constant"),))
    text = write_memory_plot(tmp_path / "p.html", "t", ["0: A", "1: B"], [lv]).read_text()
    svg = _svgs(text)[0]
    assert not [ln for ln in svg.iter(f"{SVG}line") if ln.get("class") == "cap"]
    assert any("above the plotted range" in (t.text or "") for t in svg.iter(f"{SVG}text"))
    assert 300_000 * float(svg.get("data-byte-px")) > 200    # the buffer keeps a readable height


def test_empty_levels_say_no_buffers(tmp_path):
    levels = [PlotLevel("L1", 1024, ()), PlotLevel("L2", None, [])]
    text = write_memory_plot(tmp_path / "p.html", "t", [], levels).read_text()
    _doc(text)
    assert not _svgs(text)
    assert text.count('<p class="empty">no buffers</p>') == 2


def test_labels_are_escaped(tmp_path):
    nasty = '<script>alert("x")</script> & \'q\' \x01'
    lv = PlotLevel("L<2>", 4096, (PlotBuffer(nasty, 0, 64, 0, 0, "<kind>"),))
    text = write_memory_plot(tmp_path / "p.html", "title </h1><b>", ["0: <op & co>"], [lv]).read_text()
    assert "<script>alert" not in text and "<b>" not in text and "<op" not in text and "<kind>" not in text
    root = _doc(text)
    assert root.find("head/title").text == "title </h1><b>"
    svg = _svgs(text)[0]
    assert svg.get("data-level") == "L<2>"
    title = _buffer_rects(svg)[0].find(f"{SVG}title").text
    assert title.split("\n")[0] == nasty.replace("\x01", "\ufffd")
    assert "0: <op & co>" in title
    assert any(t.text == "0: <op & co>" for t in svg.iter(f"{SVG}text"))


def test_legend_lists_kinds_present(tmp_path):
    text = write_memory_plot(tmp_path / "p.html", "t", STEPS, _levels()).read_text()
    legend = _doc(text).find("body/ul")
    names = [li.find("span").tail for li in legend.findall("li")]
    assert names == ["input", "output", "constant", "activation", "tile", "scratch", "staging", "mystery", "capacity"]
    css = _doc(text).find("head/style").text
    classes = [li.find("span").get("class").split()[1] for li in legend.findall("li")[:-1]]
    colours = [re.search(rf"\.{c}\{{fill:(#[0-9a-f]{{6}})", css).group(1) for c in classes]
    assert len(set(colours)) == len(colours)
    # each buffer rect carries its kind's class
    svg = _svgs(text)[1]
    kind_cls = dict(zip(names, classes))
    for rect, b in zip(_buffer_rects(svg), _levels()[1].buffers):
        assert rect.get("class") == f"b {kind_cls[b.kind]}"


def test_output_is_deterministic_and_atomic(tmp_path):
    a = write_memory_plot(tmp_path / "a.html", "t", STEPS, _levels()).read_bytes()
    b = write_memory_plot(tmp_path / "sub" / "b.html", "t", list(STEPS), _levels()).read_bytes()
    assert a == b
    # overwriting replaces the file and leaves no temporary behind
    write_memory_plot(tmp_path / "a.html", "other", STEPS[:1], [PlotLevel("L1", None, ())])
    assert "other" in (tmp_path / "a.html").read_text()
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["a.html", "b.html"]


def test_many_buffers_and_steps_stay_small_and_fast(tmp_path):
    n_steps, n_bufs = 400, 5000
    steps = [f"{k}: Conv_{k}_with_a_rather_long_node_name" for k in range(n_steps)]
    bufs = tuple(PlotBuffer(f"layer{i % n_steps}: tensor_{i} tile (slot {i % 2 + 1}/2)", (i * 37) % 200_000,
                            64 + (i * 13) % 4000, i % n_steps, min(n_steps - 1, i % n_steps + i % 5),
                            ("tile", "constant", "scratch", "staging")[i % 4])
                 for i in range(n_bufs))
    out = write_memory_plot(tmp_path / "big.html", "big", steps, [PlotLevel("L1", 256 * 1024, bufs)])
    size = out.stat().st_size
    assert size < 400 * n_bufs + 300 * n_steps + 20_000, size
    svg = _svgs(out.read_text())[0]
    rects = _buffer_rects(svg)
    assert len(rects) == n_bufs
    for rect, b in zip(rects[::97], bufs[::97]):
        got = [float(rect.get(a)) for a in ("x", "width", "y", "height")]
        assert got == pytest.approx(list(_expected_geometry(svg, b)), abs=TOL)
    # every step keeps a readable width (the panel scrolls sideways); labels are thinned so they do not overlap
    assert float(svg.get("data-step-px")) >= 7
    assert re.search(r'<div class="scroll"><svg[^>]*data-level="L1"', out.read_text())
    labels = [t for t in svg.iter(f"{SVG}text") if (t.get("transform") or "").startswith("translate")]
    assert 0 < len(labels) < n_steps
    xs = [float(re.match(r"translate\(([\d.]+),", t.get("transform")).group(1)) for t in labels]
    assert min(b - a for a, b in zip(xs, xs[1:])) >= 13 - TOL


def test_zoom_and_layer_filter_controls(tmp_path):
    """The page carries its zoom buttons and layer filter inline, and every buffer its steps for the filter."""
    text = write_memory_plot(tmp_path / "p.html", "t", STEPS, _levels()).read_text()
    root = _doc(text)
    ids = {e.get("id") for e in root.iter() if e.get("id")}
    assert {"zin", "zout", "zfit", "filter"} <= ids
    assert "<script src" not in text and text.count("<script>") == 1
    for svg, level in zip(_svgs(text), _levels()):
        for rect, b in zip(_buffer_rects(svg), level.buffers):
            assert (int(rect.get("data-first")), int(rect.get("data-last"))) == (b.first, b.last)


def test_tile_slots_are_coloured_by_role(tmp_path):
    """In a tiled network's plot, L1 tile slots of inputs, weights and outputs and the kernel
    scratch each have their own colour (from the operands' roles in the manifest)."""
    d = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
    graph = load_onnx(d / "network.onnx")
    assign_input_types(graph, map_arrays(d / "inputs.npz", load_npz_arrays(d / "inputs.npz"), graph.inputs, graph,
                                         "input"))
    result = compile_graph(graph, "Siracusa", tmp_path / "out", cores=8,
                           tiling=TilingOptions(16000, TilingOptions.l2, "L2", True))
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    constants = {b["name"] for b in manifest["buffers"] if b["kind"] == "constant"}
    tiles = [b for b in manifest["buffers"] if b["kind"] == "tile"]
    for b in tiles:   # the role agrees with what the tile's tensor is
        tensor = b["name"].split(": ", 1)[1].rsplit(" tile", 1)[0]
        assert (b["role"] == "weight") == (tensor in constants), b
    assert {b["role"] for b in tiles} == {"input", "weight", "output"}
    text = write_manifest_plot(tmp_path / "p.html", "t", result.manifest).read_text()
    legend = [li.find("span").tail for li in _doc(text).find("body/ul").findall("li")]
    assert {"input tile", "weight tile", "output tile"} <= set(legend), legend
    css = _doc(text).find("head/style").text
    classes = [li.find("span").get("class").split()[1] for li in _doc(text).find("body/ul").findall("li")[:-1]]
    colours = [re.search(rf"\.{c}\{{fill:(#[0-9a-f]{{6}})", css).group(1) for c in classes]
    assert len(set(colours)) == len(colours)


@pytest.mark.parametrize("make, message", [
    (lambda: PlotBuffer("a", 0, -1, 0, 0), "negative size"),
    (lambda: PlotBuffer("a", -4, 1, 0, 0), "negative offset"),
    (lambda: PlotBuffer("a", 0, 1, 3, 2), "last step 2 before first step 3"),
    (lambda: PlotBuffer("a", 0, 1, -1, 0), "negative first step"),
    (lambda: PlotBuffer("a", 0, 1.5, 0, 0), "size must be an integer"),
    (lambda: PlotLevel("L1", -1, ()), "negative capacity"),
])
def test_inconsistent_buffers_raise(make, message):
    with pytest.raises(ValueError, match=message):
        make()


@pytest.mark.parametrize("steps, buf", [
    (["0: A", "1: B"], PlotBuffer("late", 0, 8, 1, 2)),
    (["0: A", "1: B"], PlotBuffer("later", 0, 8, 5, 5)),
    ([], PlotBuffer("nothing scheduled", 0, 8, 0, 0)),
])
def test_step_out_of_range_raises(tmp_path, steps, buf):
    with pytest.raises(ValueError, match=rf"{buf.label!s}.*out of range.*{len(steps)} step"):
        write_memory_plot(tmp_path / "p.html", "t", steps, [PlotLevel("L1", 1024, (buf,))])
    assert not list(tmp_path.iterdir())    # nothing written


def test_numpy_integers_are_accepted(tmp_path):
    np = pytest.importorskip("numpy")
    b = PlotBuffer("a", np.int64(16), np.int32(32), np.int64(0), np.int64(0), "tile")
    assert type(b.offset) is int and type(b.size) is int
    write_memory_plot(tmp_path / "p.html", "t", ["0: A"], [PlotLevel("L1", np.int64(64), (b,))])
