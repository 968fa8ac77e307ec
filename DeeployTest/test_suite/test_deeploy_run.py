"""``deeploy compile --emit-testbench`` and ``deeploy run``: the output folder builds on its own
(``cmake -S out -B build``), the testbench reports ``Errors: E out of N`` and ``deeploy run``
fails on a wrong expected value; bad requests get one error line and write nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from Deeploy.cli import main
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

MODEL = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"
CROSS = shutil.which("qemu-system-riscv32") is not None and shutil.which("riscv64-unknown-elf-gcc") is not None


def _copy_model(tmp_path: Path, with_outputs: bool = True) -> Path:
    model = tmp_path / "model"
    model.mkdir()
    for name in ("network.onnx", "inputs.npz") + (("outputs.npz",) if with_outputs else ()):
        shutil.copyfile(MODEL / name, model / name)
    return model / "network.onnx"


@pytest.mark.parametrize("platform", ["Generic", pytest.param("Siracusa", marks=pytest.mark.skipif(
    not CROSS, reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh"))])
def test_testbench_runs_and_reports_no_errors(tmp_path, capsys, platform):
    out = tmp_path / "out"
    assert main(["compile", str(MODEL / "network.onnx"), "--platform", platform, "-o", str(out),
                 "--emit-testbench"]) == 0
    assert {"main.c", "testdata.h", "CMakeLists.txt", "cmake"} <= {p.name for p in out.iterdir()}
    capsys.readouterr()
    assert main(["run", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "Errors: 0 out of 10" in printed
    if platform == "Siracusa":   # modelled cycles of the QEMU run, like the runners print them
        assert int(printed.split("Runtime: ")[1].split()[0]) > 0


def test_wrong_expected_value_fails_the_run(tmp_path, capsys):
    onnx_path = _copy_model(tmp_path)
    golden = dict(np.load(MODEL / "outputs.npz"))
    (name, values), = golden.items()
    values = values.copy()
    values.flat[3] ^= 1                                   # one element off by one bit
    np.savez(onnx_path.with_name("outputs.npz"), **{name: values})
    out = tmp_path / "out"
    assert main(["compile", str(onnx_path), "-o", str(out), "--emit-testbench"]) == 0
    capsys.readouterr()
    assert main(["run", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "Errors: 1 out of 10" in printed
    assert f"at 3: expected {values.flat[3]}, got {golden[name].flat[3]}" in printed


def test_outputs_flag_and_builds_by_hand(tmp_path, capsys):
    onnx_path = _copy_model(tmp_path, with_outputs=False)
    expected = tmp_path / "expected.npz"
    shutil.copyfile(MODEL / "outputs.npz", expected)
    out = tmp_path / "out"
    assert main(["compile", str(onnx_path), "-o", str(out), "--emit-testbench", "--outputs", str(expected)]) == 0
    build = tmp_path / "b"
    subprocess.run(["cmake", "-S", str(out), "-B", str(build)], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True)
    proc = subprocess.run([str(build / "deeploy_test")], capture_output=True, text=True)
    assert proc.returncode == 0 and "Errors: 0 out of 10" in proc.stdout


def test_testbench_without_expected_outputs_is_refused(tmp_path, capsys):
    onnx_path = _copy_model(tmp_path, with_outputs=False)
    out = tmp_path / "out"
    assert main(["compile", str(onnx_path), "-o", str(out), "--emit-testbench"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--outputs" in err and "outputs.npz" in err
    assert not out.exists()


def test_run_needs_a_testbench(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["compile", str(MODEL / "network.onnx"), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["run", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--emit-testbench" in err
    assert main(["run", str(tmp_path / "missing")]) == 1
    assert "not a compiled output folder" in capsys.readouterr().err


ADD = DEEPLOY_TEST / "Tests" / "Kernels" / "Add" / "Regular" / "network.onnx"


def _run_target(out: Path, build: Path) -> subprocess.CompletedProcess:
    subprocess.run(["cmake", "-G", "Unix Makefiles", "-S", str(out), "-B", str(build)], check=True, capture_output=True)
    return subprocess.run(["cmake", "--build", str(build), "--target", "run"], capture_output=True, text=True,
                          timeout=300)


def test_generic_run_target(tmp_path):
    """A standalone output's `run` target builds and runs its program, printing the command."""
    out = tmp_path / "out"
    assert main(["compile", str(ADD), "-o", str(out), "--emit-testbench"]) == 0
    proc = _run_target(out, tmp_path / "b")
    assert proc.returncode == 0 and "Errors: 0 out of 512" in proc.stdout, proc.stdout + proc.stderr
    assert str(tmp_path / "b" / "deeploy_test") in proc.stdout


@pytest.mark.skipif(not CROSS, reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")
def test_siracusa_hand_build_runs(tmp_path, capsys):
    """By hand with Makefiles: `cmake --build b --target run` prints the QEMU command and runs it;
    `deeploy run --build-dir b` takes that build folder; QEMU with too little RAM (-m) for the
    memory map stops at once with a message and exit code 1 instead of hanging."""
    out, build = tmp_path / "out", tmp_path / "b"
    assert main(["compile", str(ADD), "--platform", "Siracusa", "-o", str(out), "--emit-testbench"]) == 0
    proc = _run_target(out, build)
    assert proc.returncode == 0 and "Errors: 0 out of 512" in proc.stdout, proc.stdout + proc.stderr
    command = next(line for line in proc.stdout.splitlines() if line.startswith("qemu-system-riscv32 "))
    assert f"-kernel {build / 'deeploy_test'}" in command and " -smp 8 " in command
    capsys.readouterr()
    assert main(["run", str(out), "--build-dir", str(build)]) == 0
    assert "Errors: 0 out of 512" in capsys.readouterr().out
    small = subprocess.run(re.sub(r" -m \d+M ", " -m 64M ", command).split(), capture_output=True, text=True,
                           timeout=60, stdin=subprocess.DEVNULL)
    assert small.returncode == 1 and "QEMU's RAM (-m) ends below this program's memory" in small.stdout, small
