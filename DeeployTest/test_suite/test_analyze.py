"""``deeploy analyze``: the report of every corpus network (in-process), its structure and
totals, one layer's ops against the ONNX file, the tiles of a tiled compile, the CSV form, and
that nothing is written."""

from __future__ import annotations

import csv
import io
import json
import re
import tempfile

import numpy as np
import onnx
import pytest

from Deeploy.cli import main
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST, REJECTED, network_dirs

ALL = network_dirs(CORPUS, "Kernels", "Models")
MINI = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"


def _analyze(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["analyze", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def check_report(report: dict, l1: int | None = None) -> None:
    """The structure and totals every report must have."""
    assert set(report) == {"platform", "source", "cores", "tiled", "layers", "levels", "totals", "notes", "regions"}
    assert report["regions"] == []   # no --loop-rolling
    layers, totals = report["layers"], report["totals"]
    assert layers and [r["index"] for r in layers] == list(range(len(layers)))
    levels = [lv["name"] for lv in report["levels"]]
    for r in layers:
        assert r["kernel"] and r["engine"] and r["op"] and r["name"], r
        assert r["ops"] >= 0 and r["output_bytes"] > 0 or not r["runs"], r
        assert set(r["memory"]) == set(levels), r
        if report["tiled"] and r["tiles"] is not None:
            assert r["tiles"] >= 1 and r["tile_shape"] and r["buffering"] in ("SB", "DB"), r
            assert r["memory"]["L1"] <= l1, r
    assert totals["layers"] == len(layers)
    assert totals["running_layers"] == sum(r["runs"] for r in layers)
    assert totals["ops"] == sum(r["ops"] for r in layers)
    assert totals["tiles"] == sum(r["tiles"] or 0 for r in layers)
    if report["tiled"]:
        assert all(r["tiles"] for r in layers if r["runs"]), "a running layer of a tiled compile has no tiles"
    for lv in report["levels"]:
        assert 0 <= lv["peak"] <= lv["used"], lv
        assert lv["capacity"] is None or lv["used"] <= lv["capacity"], lv
        assert lv["peak"] == max(r["memory"][lv["name"]] for r in layers)
    data = next(lv for lv in report["levels"] if lv["name"] == "L2")
    assert data["used"] >= totals["activation_arena"]


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_every_corpus_network(platform, corpus, capsys):
    """Every corpus network gives a report (Siracusa: tiled at --l1 64000) or, for the ones the
    compiler refuses (conftest.REJECTED: analyze reads no expected outputs, so only a refusal of
    the inputs remains), its one-line error."""
    extra = ["--l1", "64000"] if platform == "Siracusa" else []
    reported = refused = 0
    for test_dir in ALL:
        code, out, err = _analyze(capsys, test_dir / "network.onnx", "--platform", platform, "--json", *extra)
        reason = REJECTED.get(str(test_dir.relative_to(CORPUS)))
        if reason is not None and code != 0:
            assert code == 1 and re.search(reason, err) and len(err.strip().splitlines()) == 1, (test_dir, err)
            refused += 1
            continue
        assert code == 0, (test_dir, err)
        report = json.loads(out)
        assert report["platform"] == platform and report["tiled"] == (platform == "Siracusa")
        check_report(report, 64000)
        reported += 1
    assert reported + refused == len(ALL) and refused <= len(REJECTED)


def test_conv_ops_match_the_onnx_file(capsys):
    """The first Conv's ops are 2 MACs per output element and weight of its window, from the ONNX
    file's own shapes; its weight bytes are its constant inputs'."""
    model = onnx.shape_inference.infer_shapes(onnx.load(MINI / "network.onnx"))
    conv = next(n for n in model.graph.node if n.op_type == "Conv")
    weights = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.value_info}
    shapes.update({v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in model.graph.output})
    w = weights[conv.input[1]]
    out_elems = int(np.prod(shapes[conv.output[0]]))
    code, out, _ = _analyze(capsys, MINI / "network.onnx", "--json")
    assert code == 0
    layer = next(r for r in json.loads(out)["layers"] if r["name"] == conv.name)
    assert layer["ops"] == 2 * out_elems * int(np.prod(w.shape[1:]))
    assert layer["output_bytes"] == out_elems * 4   # the Conv accumulates into int32 on Generic


def test_tiled_report_and_csv(tmp_path, capsys, monkeypatch):
    """Siracusa at --l1 16000: the tiled layers' L1 stays within --l1, the table, JSON and CSV
    agree, and neither the working folder nor the temporary folder keeps anything."""
    monkeypatch.chdir(tmp_path)
    scratch = tmp_path.parent / f"{tmp_path.name}-tmp"   # a temporary folder of its own: other tests analyze too
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    args = [MINI / "network.onnx", "--platform", "Siracusa", "--l1", "16000"]
    code, out, _ = _analyze(capsys, *args, "--json")
    assert code == 0
    report = json.loads(out)
    check_report(report, 16000)
    code, text, _ = _analyze(capsys, *args, "--csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert code == 0 and len(rows) == len(report["layers"]) + 1 and rows[-1]["name"] == "total"
    assert int(rows[-1]["ops"]) == report["totals"]["ops"]
    assert [int(r["mem_L1"]) for r in rows[:-1]] == [r["memory"]["L1"] for r in report["layers"]]
    code, table, _ = _analyze(capsys, *args)
    assert code == 0 and f"ops {report['totals']['ops']}," in table and "L1: " in table
    assert list(tmp_path.iterdir()) == []
    assert list(scratch.iterdir()) == []


def test_bad_model_is_one_line(tmp_path, capsys):
    bad = tmp_path / "net.onnx"
    bad.write_bytes(b"not onnx")
    code, out, err = _analyze(capsys, bad)
    assert code == 1 and err.startswith("error: ") and len(err.strip().splitlines()) == 1 and "Traceback" not in err
