"""Malformed input corpus: broken ONNX files, every defect of inputs.npz / outputs.npz, and bad
flag values of `deeploy compile` and of the three test runners. Each case runs the real command:
it must end with exactly one error line on stderr (argparse's usage lines plus its error line
count as one), a non-zero exit, no traceback, and no file created or changed anywhere in the
case's folder (test data, generated folder, output)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from DeeployTest.test_suite.conftest import DEEPLOY_TEST

SHAPE = (5, 25)
RNG = np.random.default_rng(7)


def _write_test(folder: Path) -> Path:
    """A valid test folder: y = a + b on int8-valued data of shape SHAPE."""
    folder.mkdir(parents=True)
    vi = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, list(SHAPE))  # noqa: E731
    node = helper.make_node("Add", ["a", "b"], ["y"], name="add")
    model = helper.make_model(helper.make_graph([node], "g", [vi("a"), vi("b")], [vi("y")]),
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, folder / "network.onnx")
    a, b = RNG.integers(-50, 50, SHAPE), RNG.integers(-50, 50, SHAPE)
    np.savez(folder / "inputs.npz", a=a.astype(np.float32), b=b.astype(np.float32))
    np.savez(folder / "outputs.npz", y=(a + b).astype(np.float32))
    return folder


def _snapshot(root: Path) -> dict[str, tuple[str, str]]:
    """Every entry below root: kind and content digest (files), so any change shows."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = ("link", os.readlink(p))
        elif p.is_dir():
            out[rel] = ("dir", "")
        else:
            out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _error_line(stderr: str) -> tuple[str, bool]:
    """The single error line of stderr (after argparse's usage lines, if any), and whether it
    came from argparse."""
    lines = stderr.strip().splitlines()
    from_argparse = bool(lines) and lines[0].startswith("usage:")
    if from_argparse:
        k = 1
        while k < len(lines) and lines[k].startswith(" "):
            k += 1
        lines = lines[k:]
    assert len(lines) == 1, stderr
    return lines[0], from_argparse


def _check(proc: subprocess.CompletedProcess, needles: tuple[str, ...]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode != 0, proc.stdout + proc.stderr
    line, from_argparse = _error_line(proc.stderr)
    assert (": error: " in line) if from_argparse else line.startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in line, (needle, line)


def _save_bytes(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda d: (d / name).write_bytes(data)


def _savez(name: str, *arrays, **named) -> Callable[[Path], None]:
    return lambda d: np.savez(d / name, *arrays, **named)


def _truncate_onnx(d: Path) -> None:
    data = (d / "network.onnx").read_bytes()
    (d / "network.onnx").write_bytes(data[:len(data) // 2])


def _integer_inputs(a: np.ndarray) -> Callable[[Path], None]:
    """Declare the network's inputs int32 (a float-declared input with fractional values makes a
    float network, which is valid) and give input 'a' the values ``a``."""
    def apply(d: Path) -> None:
        model = onnx.load(d / "network.onnx")
        for vi in model.graph.input:
            vi.type.tensor_type.elem_type = TensorProto.INT32
        onnx.save(model, d / "network.onnx")
        np.savez(d / "inputs.npz", a=a, b=np.zeros(SHAPE, np.float32))
    return apply


ZEROS = np.zeros(SHAPE, np.float32)
GARBAGE = RNG.integers(0, 256, 300, dtype=np.uint8).tobytes()

# (id, how the test folder is broken, expected words in the error line)
DATA_CASES = [
    ("inputs-empty", _save_bytes("inputs.npz", b""), ("inputs.npz", "empty")),
    ("outputs-empty", _save_bytes("outputs.npz", b""), ("outputs.npz", "empty")),
    ("inputs-garbage", _save_bytes("inputs.npz", GARBAGE), ("inputs.npz", "not a valid .npz")),
    ("outputs-garbage", _save_bytes("outputs.npz", b"\x80\x04garbage" + GARBAGE), ("outputs.npz", "not a valid .npz")),
    ("outputs-broken-zip", _save_bytes("outputs.npz", b"PK\x03\x04" + GARBAGE), ("outputs.npz", "not a valid .npz")),
    ("inputs-wrong-names", _savez("inputs.npz", a=ZEROS, c=ZEROS), ("inputs.npz", "'b'")),
    ("inputs-too-few", _savez("inputs.npz", ZEROS), ("inputs.npz", "1 arrays", "2 inputs")),
    ("inputs-too-many", _savez("inputs.npz", ZEROS, ZEROS, ZEROS + 3), ("inputs.npz", "'arr_2'")),
    ("outputs-too-many", _savez("outputs.npz", ZEROS, ZEROS), ("outputs.npz", "'arr_1'")),
    ("outputs-too-few", _savez("outputs.npz"), ("outputs.npz", "0 arrays")),
    ("outputs-more-values", _savez("outputs.npz", y=np.zeros(250)), ("outputs.npz", "'y'", "[250]", "[5, 25]")),
    ("outputs-fewer-values", _savez("outputs.npz", y=np.zeros(100)), ("outputs.npz", "'y'", "[100]", "[5, 25]")),
    ("outputs-transposed", _savez("outputs.npz", y=np.zeros((25, 5))), ("outputs.npz", "[25, 5]", "[5, 25]")),
    ("inputs-wrong-shape", _savez("inputs.npz", a=ZEROS, b=np.zeros((5, 24))), ("inputs.npz", "'b'", "[5, 24]")),
    ("inputs-non-integer", _integer_inputs(ZEROS + 0.5), ("inputs.npz", "'a'", "int32", "non-integer")),
    ("onnx-truncated", _truncate_onnx, ("network.onnx",)),
    ("onnx-random", _save_bytes("network.onnx", GARBAGE), ("network.onnx",)),
    ("onnx-empty", _save_bytes("network.onnx", b""), ("network.onnx",)),
]

RUNNERS = {name: DEEPLOY_TEST / f"testRunner_{name}.py" for name in ("generic", "siracusa", "tiled_siracusa")}

# (id, runner, flags, expected words); "{test}" is the valid test folder
FLAG_CASES = [
    ("generic-missing-test", "generic", ["-t", "{missing}"], ("not found",)),
    ("generic-no-test", "generic", [], ("-t",)),
    ("generic-unknown-flag", "generic", ["-t", "{test}", "--fast"], ("--fast",)),
    ("generic-skipgen-nothing", "generic", ["-t", "{test}", "--skipgen"], ("--skipgen", "nothing was generated")),
    ("generic-gen-dir-is-file", "generic", ["-t", "{test}", "--gen-dir", "{test}/network.onnx"], ("network.onnx",)),
    ("siracusa-missing-test", "siracusa", ["-t", "{missing}"], ("not found",)),
    ("siracusa-cores-0", "siracusa", ["-t", "{test}", "--cores", "0"], ("--cores", "1..8")),
    ("siracusa-cores-9", "siracusa", ["-t", "{test}", "--cores", "9"], ("--cores", "1..8")),
    ("siracusa-cores-text", "siracusa", ["-t", "{test}", "--cores", "eight"], ("--cores", "eight")),
    ("tiled-missing-test", "tiled_siracusa", ["-t", "{missing}"], ("not found",)),
    ("tiled-cores-0", "tiled_siracusa", ["-t", "{test}", "--cores", "0"], ("--cores",)),
    ("tiled-l1-0", "tiled_siracusa", ["-t", "{test}", "--l1", "0"], ("--l1", "positive")),
    ("tiled-l1-text", "tiled_siracusa", ["-t", "{test}", "--l1", "64k"], ("--l1", "64k")),
    ("tiled-l1-huge", "tiled_siracusa", ["-t", "{test}", "--l1", "300000"], ("--l1", "L1")),
    ("tiled-l2-huge", "tiled_siracusa", ["-t", "{test}", "--l2", "100000000000"], ("--l2", "L2")),
    ("tiled-l2-negative", "tiled_siracusa", ["-t", "{test}", "--l2=-5"], ("--l2", "positive")),
    ("tiled-bad-level", "tiled_siracusa", ["-t", "{test}", "--defaultMemLevel", "L9"], ("--defaultMemLevel", "L9")),
]

# (id, arguments after `deeploy compile`, expected words); "{onnx}" is the valid model
COMPILE_CASES = [
    ("missing-model", ["{case}/nope.onnx", "-o", "{case}/out"], ("nope.onnx",)),
    ("no-output", ["{onnx}"], ("-o",)),
    ("unknown-flag", ["{onnx}", "-o", "{case}/out", "--fast"], ("--fast",)),
    ("cores-0", ["{onnx}", "-o", "{case}/out", "--cores", "0"], ("cores",)),
    ("cores-text", ["{onnx}", "-o", "{case}/out", "--cores", "many"], ("--cores", "many")),
    ("cores-9-siracusa", ["{onnx}", "-o", "{case}/out", "--platform", "Siracusa", "--cores", "9"], ("cores", "9")),
    ("unknown-platform", ["{onnx}", "-o", "{case}/out", "--platform", "Nope"], ("Nope",)),
    ("input-type-no-name", ["{onnx}", "-o", "{case}/out", "--input-type", "int8"], ("--input-type", "NAME=")),
    ("input-type-bad-type", ["{onnx}", "-o", "{case}/out", "--input-type", "a=int99"], ("--input-type", "int99")),
    ("inputs-missing", ["{onnx}", "-o", "{case}/out", "--inputs", "{case}/none.npz"], ("none.npz",)),
    ("inputs-empty", ["{onnx}", "-o", "{case}/out", "--inputs", "{case}/empty.npz"], ("empty.npz", "empty")),
    ("inputs-garbage", ["{onnx}", "-o", "{case}/out", "--inputs", "{case}/garbage.npz"], ("garbage.npz", "not a valid")),
    ("inputs-wrong-shape", ["{onnx}", "-o", "{case}/out", "--inputs", "{case}/shape.npz"], ("shape.npz", "[3, 3]")),
    ("onnx-random", ["{case}/random.onnx", "-o", "{case}/out"], ("random.onnx",)),
]


@pytest.fixture(scope="module")
def valid_test(tmp_path_factory) -> Path:
    return _write_test(tmp_path_factory.mktemp("valid") / "net")


def _case_folder(tmp_path: Path, valid_test: Path) -> Path:
    shutil.copytree(valid_test, tmp_path / "net")
    return tmp_path / "net"


def _run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *cmd], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("break_it,needles", [c[1:] for c in DATA_CASES], ids=[c[0] for c in DATA_CASES])
def test_malformed_test_data(tmp_path, valid_test, break_it, needles):
    test = _case_folder(tmp_path, valid_test)
    break_it(test)
    before = _snapshot(tmp_path)
    proc = _run([str(RUNNERS["generic"]), "-t", str(test), "--gen-dir", str(tmp_path / "gen")], tmp_path)
    _check(proc, needles)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("runner,flags,needles", [c[1:] for c in FLAG_CASES], ids=[c[0] for c in FLAG_CASES])
def test_bad_runner_flags(tmp_path, valid_test, runner, flags, needles):
    test = _case_folder(tmp_path, valid_test)
    (tmp_path / "gen").mkdir()
    args = [f.format(test=test, missing=tmp_path / "missing") for f in flags]
    if "--gen-dir" not in args:
        args += ["--gen-dir", str(tmp_path / "gen")]
    before = _snapshot(tmp_path)
    _check(_run([str(RUNNERS[runner]), *args], tmp_path), needles)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("args,needles", [c[1:] for c in COMPILE_CASES], ids=[c[0] for c in COMPILE_CASES])
def test_bad_compile_arguments(tmp_path, valid_test, args, needles):
    test = _case_folder(tmp_path, valid_test)
    (tmp_path / "empty.npz").write_bytes(b"")
    (tmp_path / "garbage.npz").write_bytes(GARBAGE)
    (tmp_path / "random.onnx").write_bytes(GARBAGE)
    np.savez(tmp_path / "shape.npz", a=np.zeros((3, 3)), b=np.zeros((3, 3)))
    args = [a.format(case=tmp_path, onnx=test / "network.onnx") for a in args]
    before = _snapshot(tmp_path)
    _check(_run(["-m", "Deeploy.cli", "compile", *args], tmp_path), needles)
    assert _snapshot(tmp_path) == before


@pytest.mark.parametrize("output,needles", [(".", ("working directory",)), ("notes.txt", ("not a folder",)),
                                            ("notes.txt/out", ("notes.txt",))], ids=["dot", "file", "under-file"])
def test_unusable_compile_output(tmp_path, valid_test, output, needles):
    test = _case_folder(tmp_path, valid_test)
    (test / "notes.txt").write_text("the user's own file")
    before = _snapshot(tmp_path)
    _check(_run(["-m", "Deeploy.cli", "compile", "network.onnx", "-o", output], test), needles)
    assert _snapshot(tmp_path) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="permissions do not stop root")
def test_read_only_output_parent(tmp_path, valid_test):
    test = _case_folder(tmp_path, valid_test)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        before = _snapshot(tmp_path)
        _check(_run(["-m", "Deeploy.cli", "compile", str(test / "network.onnx"), "-o", str(locked / "out")],
                    tmp_path), ("locked",))
        assert _snapshot(tmp_path) == before
        assert not list(locked.glob(".out.*"))
    finally:
        locked.chmod(0o755)
