"""``deeploy sweep``: configs and their errors, point sampling, the local backend (a small sweep
on Siracusa, resumed, a failing point recorded with its error line, a timed-out point), the
Pareto front and the report. The Ray backend: ``test_sweep_ray.py`` (marker ``ray``)."""

from __future__ import annotations

import csv
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from Deeploy.cli import main
from Deeploy.sweep.config import load_config
from Deeploy.sweep.report import best_within, pareto_front, write_report
from Deeploy.sweep.runner import run_sweep
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

ADD = DEEPLOY_TEST / "Tests" / "Kernels" / "Add" / "Regular"
CROSS = shutil.which("qemu-system-riscv32") is not None and shutil.which("riscv64-unknown-elf-gcc") is not None
needs_cross = pytest.mark.skipif(not CROSS, reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")


def _config(tmp_path: Path, text: str, name: str = "sweep.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.parametrize("text,fragment", [
    ("networks: [{add}]\nll1: [8000]\n", "key 'll1': unknown key; did you mean 'l1'?"),
    ("networks: [{add}]\nl1: [8000, 8k]\n", "key 'l1': value '8k': argument --l1: '8k' is not a number of bytes"),
    ("networks: [{add}]\ndefaultMemLevel: [L4]\n", "key 'defaultMemLevel': value 'L4': argument --defaultMemLevel"),
    ("networks: [{add}]\ndoublebuffer: [yes please]\n", "flag 'doublebuffer' is a switch: give true or false"),
    ("networks: [{add}]\nl1: {{from: 8000, to: 4000, step: 1000}}\n", "key 'l1': the range needs from <= to"),
    ("networks: [{add}, no/such/net]\n", "key 'networks': 'no/such/net' not found"),
    ("networks: [{add}]\nplatforms: [Siracusa, Sirakusa]\n", "key 'platforms': unknown platform 'Sirakusa'"),
    ("platforms: [Siracusa]\n", "names no networks"),
    ("networks: [{add}\n", "is not valid YAML"),
])
def test_config_errors_name_the_key_and_write_nothing(tmp_path, capsys, text, fragment):
    config = _config(tmp_path, text.format(add=ADD))
    assert main(["sweep", str(config), "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and fragment in err and err.count("\n") == 1, err
    assert str(config) in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flags,fragment", [
    (["--ray-address", "127.0.0.1:6379"], "--ray-address needs --ray"),
    (["--ray", "--jobs", "2"], "with --ray the cluster's CPUs decide: drop --jobs"),
    (["--jobs", "0"], "--jobs 0: give at least 1"),
    (["extra.yaml"], "deeploy sweep takes one config file"),
])
def test_command_line_errors(tmp_path, capsys, flags, fragment):
    config = _config(tmp_path, f"networks: [{ADD}]\n")
    assert main(["sweep", str(config), *flags, "-o", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_cross_product_ranges_and_toml(tmp_path):
    config = _config(tmp_path, f'networks = ["{ADD}"]\nplatforms = ["Siracusa", "Siracusa_w_neureka"]\n'
                               'l1 = {from = 4000, to = 32000, factor = 2}\ndoublebuffer = [false, true]\n'
                               'cores = 8\n', "sweep.toml")
    points = load_config(config).points()
    assert len(points) == 2 * 4 * 2
    assert sorted({dict(p.flags)["l1"] for p in points}) == [4000, 8000, 16000, 32000]
    assert len({p.key for p in points}) == len(points)
    assert points[0].argv() == ["--l1", "4000", "--cores", "8"]
    assert points[1].argv() == ["--l1", "4000", "--doublebuffer", "--cores", "8"]


def test_networks_by_glob(tmp_path):
    config = _config(tmp_path, f"networks: ['{ADD.parent}/*', '{ADD}']\n")
    models = load_config(config).models
    assert models == tuple(sorted(p / "network.onnx" for p in ADD.parent.iterdir() if (p / "network.onnx").is_file()))
    assert len(models) > 1


def test_latin_hypercube_sample_covers_every_value_once(tmp_path):
    config = _config(tmp_path, f"networks: [{ADD}]\nl1: [1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000]\n"
                               "l2: {from: 100000, to: 800000, step: 100000}\ncores: [1, 2, 3, 4, 5, 6, 7, 8]\n")
    cfg = load_config(config)
    sample = cfg.points(samples=8)
    assert len(sample) == 8     # 8 strata per axis of 8 values: every value exactly once
    for name in ("l1", "l2", "cores"):
        assert len({dict(p.flags)[name] for p in sample}) == 8
    assert [p.key for p in cfg.points(samples=8)] == [p.key for p in sample]   # same seed, same sample
    assert len(cfg.points(samples=1000)) == 8 ** 3                              # more than all: all


def test_pareto_front_and_best_within_budget():
    points = [(8000, 900), (16000, 500), (16000, 700), (32000, 500), (64000, 300), (4000, 1200)]
    assert pareto_front(points) == [5, 0, 1, 4]
    records = [{"network": "n", "status": "ok", "cycles": c, "peak_L1": l1, "peak_L2": 0} for l1, c in points]
    records.append({"network": "n", "status": "fail", "cycles": None, "peak_L1": 100})
    assert best_within(records)["n"]["cycles"] == 300
    assert best_within(records, l1=20000)["n"]["cycles"] == 500
    assert best_within(records, l1=1000) == {}


def test_a_point_that_hangs_is_recorded_as_timed_out(tmp_path):
    config = _config(tmp_path, f"networks: [{ADD}]\nplatforms: [Generic]\ntimeout: 0.2\n")
    assert run_sweep(config, tmp_path / "out", say=lambda _: None) == 0
    (record,) = [json.loads(line) for line in (tmp_path / "out" / "results.jsonl").read_text().splitlines()]
    assert record["status"] == "timeout" and "timed out after" in record["error"]


def test_report_of_records(tmp_path):
    out = tmp_path / "res"
    out.mkdir()
    (out / "sweep.json").write_text("{}")
    rows = [("Siracusa", 8000, False, 900), ("Siracusa", 16000, True, 500), ("Siracusa", 16000, False, 700),
            ("Siracusa_w_neureka", 8000, True, 400)]
    with open(out / "results.jsonl", "w") as f:
        for k, (platform, l1, db, cycles) in enumerate(rows):
            f.write(json.dumps({"key": str(k), "network": "net", "platform": platform, "status": "ok", "error": "",
                                "flags": {"l1": l1, "doublebuffer": db}, "cycles": cycles, "peak_L1": l1,
                                "peak_L2": 20000, "peak_L3": 0}) + "\n")
        f.write(json.dumps({"key": "9", "network": "net", "platform": "Siracusa", "status": "fail",
                            "error": "tile does not fit", "flags": {"l1": 100}}) + "\n")
        f.write('{"key": "torn')   # a line a killed sweep left half-written
    page = write_report(out, tmp_path / "report.html", l1_budget=10000).read_text()
    assert page.count('class="ring"') == 2 + 1 + 1 + 1     # Siracusa L1: 2 on the front, L2: 1; NPU: 1 and 1
    assert "Siracusa: cycles vs L1" in page and "Siracusa_w_neureka: cycles vs L1" in page
    assert "tile does not fit" in page and "table class=\"sortable\"" in page
    best = page.split("Best configuration per network")[1].split("Every point")[0]
    assert "Siracusa_w_neureka" in best and "400" in best


def test_report_of_a_folder_without_results(tmp_path, capsys):
    assert main(["sweep", "report", str(tmp_path), "-o", str(tmp_path / "r.html")]) == 1
    err = capsys.readouterr().err
    assert "holds no sweep results (results.jsonl)" in err and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def _records(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


@needs_cross
def test_local_sweep_records_resumes_and_retries(tmp_path):
    """2 L1 sizes x SB/DB of a small network on Siracusa: every point runs, bit-exact (its testbench
    passes) with cycles, split, peaks and code size; a re-run runs nothing; a point the compiler
    refuses is recorded with its error line and runs again only with --retry-failed."""
    out = tmp_path / "out"
    config = _config(tmp_path, f"networks: [{ADD}]\nplatforms: [Siracusa]\nl1: [2000, 8000]\n"
                               "doublebuffer: [false, true]\n")
    lines = []
    assert run_sweep(config, out, jobs=2, say=lines.append) == 0
    records = _records(out)
    assert len(records) == 4 and {r["status"] for r in records} == {"ok"}
    assert {(r["flags"]["l1"], r["flags"]["doublebuffer"]) for r in records} == \
        {(2000, False), (2000, True), (8000, False), (8000, True)}
    for r in records:
        assert r["cycles"] > 0 and r["cycles"] == pytest.approx(r["compute"] + r["exposed_dma"] + r["overhead"], abs=1)
        assert 0 < r["peak_L1"] <= r["flags"]["l1"] and r["peak_L2"] > 0 and r["code_text"] > 0
    with open(out / "results.csv") as f:
        table = list(csv.DictReader(f))
    assert [row["key"] for row in table] == [r["key"] for r in records]
    assert [float(row["cycles"]) for row in table] == [r["cycles"] for r in records]

    lines.clear()
    assert run_sweep(config, out, say=lines.append) == 0
    assert "4 with results" in lines[0] and "0 to run" in lines[0] and len(_records(out)) == 4

    bad = _config(tmp_path, f"networks: [{ADD}]\nplatforms: [Siracusa]\nl1: [8000]\nneureka-wmem: [true]\n",
                  "bad.yaml")
    assert run_sweep(bad, out, say=lambda _: None) == 0
    failed = _records(out)[-1]
    assert failed["status"] == "fail" and failed["error"].startswith("platform Siracusa takes no --neureka-wmem")
    assert run_sweep(bad, out, say=lambda _: None) == 0 and len(_records(out)) == 5
    assert run_sweep(bad, out, retry_failed=True, say=lambda _: None) == 0
    assert Counter(r["key"] for r in _records(out))[failed["key"]] == 2
