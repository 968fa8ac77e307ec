"""One command line: the runners and ``deeploy`` take both spellings of every long flag, suggest the
nearest flag or platform on a typo, list the platforms and the default of ``--platform`` in every
command's help, and ``analyze`` and ``validate`` take the flags of ``compile``."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from Deeploy.cli import main
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

ADD = DEEPLOY_TEST / "Tests" / "Kernels" / "Add" / "Regular" / "network.onnx"
MINI = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx"


def _runner(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(DEEPLOY_TEST / name), *args], capture_output=True, text=True)


def test_both_spellings(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(ADD), "-o", str(out), "--emitTestbench", "--input-type", "input_0=int8"]) == 0
    assert (out / "main.c").is_file()
    helped = _runner("testRunner_tiled_siracusa.py", "--help").stdout
    for pair in (("--profileTiling", "--profile-tiling"), ("--defaultMemLevel", "--default-mem-level"),
                 ("--gen-dir", "--genDir"), ("--plotMemAlloc", "--plot-mem-alloc")):
        assert all(flag in helped for flag in pair), pair


def test_did_you_mean_on_unknown_flags(capsys):
    proc = _runner("testRunner_tiled_siracusa.py", "-t", "Tests/Kernels/Add/Regular", "--doublebufer")
    assert proc.returncode == 2 and "did you mean --doublebuffer" in proc.stderr, proc.stderr
    with pytest.raises(SystemExit) as exc:
        main(["compile", str(ADD), "-o", "never", "--doublebufer"])
    assert exc.value.code == 2 and "did you mean --doublebuffer" in capsys.readouterr().err


def test_platform_names_any_case_and_suggested(tmp_path, capsys):
    assert main(["compile", str(ADD), "-o", str(tmp_path / "out"), "--platform", "siracusa"]) == 0
    assert '"platform": "Siracusa"' in (tmp_path / "out" / "manifest.json").read_text()
    with pytest.raises(SystemExit):
        main(["compile", str(ADD), "-o", str(tmp_path / "never"), "--platform", "Sirakusa"])
    err = capsys.readouterr().err
    assert "unknown platform 'Sirakusa': did you mean Siracusa?" in err and not (tmp_path / "never").exists()


@pytest.mark.parametrize("command", ["compile", "analyze", "validate", "ops"])
def test_platform_help_names_choices_and_default(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    names = re.search(r"--platform NAME the target platform: ([\w, ]+) \(any case; default Generic\)", text)
    assert names, text
    assert {"CortexM", "GAP9", "Generic", "MemPool", "Siracusa", "Siracusa_w_neureka", "Snitch"} <= \
        set(names[1].split(", ")), text


def test_analyze_and_validate_take_the_compile_flags(capsys):
    assert main(["analyze", str(MINI), "--platform", "Siracusa_w_neureka", "--neureka-wmem"]) == 0
    assert re.search(r"^WMEM: [1-9]\d* B used", capsys.readouterr().out, re.M)
    with pytest.raises(SystemExit) as exc:
        main(["validate", "--help"])
    assert exc.value.code == 0
    helped = capsys.readouterr().out
    assert all(flag in helped for flag in ("--neureka-wmem", "--no-npu-for", "--wmem-size", "--loop-rolling"))


def test_compile_summary_says_tiling_memory_and_engines(tmp_path, capsys):
    """The summary says whether the layers are tiled, the memory each level uses and how many
    layers run on each engine (the NPU's included)."""
    out = tmp_path / "npu"
    assert main(["compile", str(MINI), "--platform", "Siracusa_w_neureka", "--l1", "64000", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    npu = sum(1 for t in manifest["tiles"] if t["engine"] == "neureka")
    assert npu and f"{npu} tiled into L1 on neureka" in printed and re.search(r"Memory: peak L1 [1-9]\d* B", printed)
    assert main(["compile", str(MINI), "-o", str(tmp_path / "host")]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"Layers: \d+ on \w+.*; untiled$", printed, re.M) and "Memory: peak L2" in printed


def test_unsupported_op_points_to_deeploy_ops_and_the_nearest(tmp_path, capsys):
    """An op the platform does not run: one line naming it, `deeploy ops` and the nearest op the
    platform runs; the nodes with -v."""
    from onnx import TensorProto, helper, save
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Reluu", ["x"], ["y"], name="act")], "g", [x], [y])
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / "net.onnx")
    assert main(["compile", str(tmp_path / "net.onnx"), "-o", str(tmp_path / "out")]) == 1
    line, = capsys.readouterr().err.splitlines()   # first: the input's type, with the flag that gives it
    assert len(line) <= 160 and "--input-type x=int8" in line, line
    assert main(["compile", str(tmp_path / "net.onnx"), "-o", str(tmp_path / "out"), "--input-type", "x=int8"]) == 1
    line, = capsys.readouterr().err.splitlines()
    assert len(line) <= 160 and "Reluu" in line and "all: deeploy ops --platform Generic" in line, line
    assert "nearest: Reluu -> Relu?" in line and not (tmp_path / "out").exists()
    assert main(["compile", str(tmp_path / "net.onnx"), "-o", str(tmp_path / "out"), "--input-type", "x=int8",
                 "-v"]) == 1
    assert "Reluu (1): 'act'" in capsys.readouterr().err
