"""Every error ``deeploy`` and the test runners print is one line of at most 160 characters that
says what to do (a flag, a value, a command or the file to give); what led to it only with -v.
The cases drive the user's mistakes one by one; each names the words of its fix."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from Deeploy.cli import main
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

LIMIT = 160
ADD = str(DEEPLOY_TEST / "Tests" / "IntKernels" / "Add" / "Regular" / "network.onnx")
MINI = str(DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2" / "network.onnx")
ADD_TEST = "Tests/IntKernels/Add/Regular"


def _workspace(tmp_path):
    """relu.onnx (input 'x' declared float, no samples), bad.npz (wrong shape), reluu.onnx (an op
    no platform runs), mine/ (a folder of the user's) and a file."""
    def save(op, name):
        vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in ("x", "y")]
        graph = helper.make_graph([helper.make_node(op, ["x"], ["y"], name="act")], "g", vi[:1], vi[1:])
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), tmp_path / name)
    save("Relu", "relu.onnx")
    save("Reluu", "reluu.onnx")
    np.savez(tmp_path / "bad.npz", np.zeros((3, 3)))
    (tmp_path / "mine").mkdir()
    for name in ("notes.txt", "data.csv", "plot.png"):
        (tmp_path / "mine" / name).write_text("mine")
    (tmp_path / "a_file").write_text("x")


# (id, deeploy arguments, words of the fix)
CLI_CASES = [
    ("output-holds-user-files", ["compile", ADD, "-o", "mine"], "name a new or empty folder"),
    ("output-is-a-file", ["compile", ADD, "-o", "a_file"], "name a new folder"),
    ("input-without-type", ["compile", "relu.onnx", "-o", "out"], "give --input-type x=int8"),
    ("unknown-element-type", ["compile", "relu.onnx", "-o", "out", "--input-type", "x=int9"], "expected one of int8"),
    ("input-type-of-no-input", ["compile", "relu.onnx", "-o", "out", "--input-type", "q=int8"], "name one of x"),
    ("missing-inputs-file", ["compile", "relu.onnx", "-o", "out", "--inputs", "none.npz"], "numpy.savez"),
    ("inputs-of-wrong-shape", ["compile", "relu.onnx", "-o", "out", "--inputs", "bad.npz"],
     "give the tensor's shape [4]"),
    ("l1-too-small", ["compile", MINI, "--platform", "Siracusa", "--l1", "500", "-o", "out"], "the smallest --l1 that fits"),
    ("l1-beyond-the-platform", ["compile", MINI, "--platform", "Siracusa", "--l1", "100000000", "-o", "out"],
     "or less"),
    ("l2-too-small", ["compile", MINI, "--platform", "Siracusa", "--l1", "64000", "--l2", "5000",
                      "--defaultMemLevel", "L2", "-o", "out"], "use --defaultMemLevel L3 or --l2"),
    ("too-many-cores", ["compile", ADD, "--platform", "Siracusa", "--cores", "9", "-o", "out"], "use --cores 8 or fewer"),
    ("cores-on-the-host", ["compile", ADD, "--cores", "2", "-o", "out"], "drop --cores"),
    ("option-of-another-platform", ["compile", ADD, "--platform", "Siracusa", "--cpu", "cortex-m4", "-o", "out"],
     "--cpu: drop it"),
    ("unknown-cortexm-core", ["compile", ADD, "--platform", "CortexM", "--cpu", "cortex-m7", "-o", "out"],
     "use --cpu cortex-m4"),
    ("sram-budget", ["compile", ADD, "--platform", "CortexM", "--sram", "100", "-o", "out"], "give a multiple of 4"),
    ("no-npu-for-unknown-layer", ["compile", MINI, "--platform", "Siracusa_w_neureka", "--no-npu-for", "foo",
                                  "-o", "out"], "name layers the NPU runs"),
    ("weight-memory-size", ["compile", MINI, "--platform", "Siracusa_w_neureka", "--wmem-size", "100", "-o", "out"],
     "give a positive multiple of 32"),
    ("loop-body-not-found", ["compile", MINI, "--loop-body-hierarchy", "foo,foo.0", "-o", "out"],
     "check the module path"),
    ("bad-name", ["compile", ADD, "--name", "2x", "-o", "out"], "e.g. --name kws"),
    ("tiling-on-the-host", ["compile", ADD, "--l1", "8000", "-o", "out"], "drop --l1"),
    ("roofline-on-the-host", ["compile", ADD, "--roofline", "-o", "out"], "use a platform with one"),
    ("testbench-without-inputs", ["compile", "relu.onnx", "--input-type", "x=int8", "--emit-testbench", "-o", "out"],
     "give --inputs"),
    ("unsupported-op", ["compile", "reluu.onnx", "--input-type", "x=int8", "-o", "out"], "deeploy ops --platform Generic"),
    ("run-not-an-output", ["run", "mine"], "deeploy compile"),
    ("platform-typo", ["compile", ADD, "--platform", "Sirakusa", "-o", "out"], "did you mean Siracusa?"),
    ("unknown-platform", ["ops", "--platform", "Xyzzy"], "use one of CortexM"),
    ("flag-typo", ["compile", ADD, "-o", "out", "--doublebufer"], "did you mean --doublebuffer"),
    ("unknown-flag", ["compile", ADD, "-o", "out", "--zzzz"], "--help lists the options"),
]

# (id, runner, arguments, words of the fix)
RUNNER_CASES = [
    ("test-folder-missing", "testRunner_generic.py", ["-t", "Tests/Nope"], "give a folder holding network.onnx"),
    ("profile-tiling-untiled", "testRunner_siracusa.py", ["-t", ADD_TEST, "--profileTiling"], "use --profileUntiled"),
    ("runner-of-another-platform", "testRunner_siracusa.py", ["-t", ADD_TEST, "-p", "Generic"],
     "use testRunner_generic.py"),
    ("llvm", "testRunner_siracusa.py", ["-t", ADD_TEST, "--toolchain=LLVM"], "--toolchain=GCC"),
    ("runner-cores", "testRunner_siracusa.py", ["-t", ADD_TEST, "--cores=9"], "give 1 to 8"),
    ("runner-cortexm-core", "testRunner_cortexm.py", ["-t", ADD_TEST, "--cpu", "cortex-m7"], "use cortex-m4"),
    ("runner-l1-beyond-the-platform", "testRunner_tiled_siracusa.py", ["-t", ADD_TEST, "--l1", "100000000"],
     "or less"),
    ("runner-flag-of-another-runner", "testRunner_siracusa.py", ["-t", ADD_TEST, "--doublebufer"], "--help"),
    ("roofline-generic-runner", "testRunner_generic.py", ["-t", ADD_TEST, "--roofline"],
     "use testRunner_siracusa.py --roofline"),
]


def _check(stderr: str, fix: str) -> str:
    """The one error line of ``stderr`` (after argparse's usage, if any): short, with its fix."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    errors = [line for line in lines if line.startswith("error: ") or ": error: " in line]
    assert len(errors) == 1 and errors[0] == lines[-1], stderr
    if lines[0].startswith("error: "):
        assert len(lines) == 1, stderr          # no usage: the error alone
    line = errors[0]
    assert len(line) <= LIMIT, f"{len(line)} characters: {line}"
    assert fix in line, line
    return line


@pytest.mark.parametrize("args, fix", [c[1:] for c in CLI_CASES], ids=[c[0] for c in CLI_CASES])
def test_cli_errors_are_one_short_line_with_the_fix(tmp_path, monkeypatch, capsys, args, fix):
    _workspace(tmp_path)
    monkeypatch.chdir(tmp_path)
    try:
        code = main(args)
    except SystemExit as exc:
        code = exc.code
    assert code not in (0, None)
    _check(capsys.readouterr().err, fix)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("runner, args, fix", [c[1:] for c in RUNNER_CASES], ids=[c[0] for c in RUNNER_CASES])
def test_runner_errors_are_one_short_line_with_the_fix(tmp_path, runner, args, fix):
    proc = subprocess.run([sys.executable, str(DEEPLOY_TEST / runner), *args, "--gen-dir", str(tmp_path / "gen")],
                          capture_output=True, text=True, cwd=DEEPLOY_TEST, timeout=600)
    assert proc.returncode != 0
    _check(proc.stderr, fix)


def test_details_only_with_verbose(tmp_path, monkeypatch, capsys):
    """The breakdown behind an error comes with -v, below the line."""
    monkeypatch.chdir(tmp_path)
    args = ["compile", MINI, "--platform", "Siracusa", "--l1", "64000", "--l2", "5000", "--defaultMemLevel", "L2",
            "-o", "out"]
    assert main(args) == 1
    line = _check(capsys.readouterr().err, "(-v: details)")
    assert "activations" not in line
    assert main([*args, "-v"]) == 1
    first, details = capsys.readouterr().err.splitlines()
    assert first == line.removesuffix(" (-v: details)") and "activations 3072 B" in details
