"""The wheel as a user gets it: built from the source distribution of a copy of the repository
(like ``python -m build``), installed into a fresh virtual environment (system site-packages only
for numpy/onnx/ortools; Deeploy itself must come from the wheel), then from an unrelated folder
``deeploy compile`` for Generic, Siracusa (untiled and tiled) and Siracusa_w_neureka,
``cmake -S out -B b && cmake --build b`` and ``deeploy run``; and the README's "Deploy your own
network" commands, run as written with the installed ``deeploy``."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import Deeploy
from DeeployTest.test_suite.conftest import DEEPLOY_TEST, REPO

# the module fixture builds once: the tests stay on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("packaging")

CROSS = shutil.which("qemu-system-riscv32") is not None and shutil.which("riscv64-unknown-elf-gcc") is not None
needs_cross = pytest.mark.skipif(not CROSS, reason="RISC-V toolchain or QEMU missing: run bash toolchain/install.sh")
MODELS = DEEPLOY_TEST / "Tests" / "Models"
README_SECTION = "## Deploy your own network"


class Installed:
    def __init__(self, root: Path, wheel: Path, venv: Path):
        self.root, self.wheel, self.venv = root, wheel, venv
        self.env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
        self.env["PATH"] = f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
        self.env["VIRTUAL_ENV"] = str(venv)

    def run(self, cmd: list[str] | str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, cwd=cwd, env=self.env, capture_output=True, text=True, timeout=timeout,
                              shell=isinstance(cmd, str), executable="/bin/bash" if isinstance(cmd, str) else None)

    def ok(self, cmd: list[str] | str, cwd: Path) -> str:
        proc = self.run(cmd, cwd)
        assert proc.returncode == 0, f"{cmd} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        return proc.stdout


def _check(proc: subprocess.CompletedProcess, what: str) -> None:
    assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("packaging")
    src = root / "src"   # a copy: an in-tree build would leave build/ in the checkout
    shutil.copytree(REPO, src, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", "build", "*.egg-info", "__pycache__", ".pytest_cache", "TEST_*", "out"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    # as `python -m build` does: the source distribution (MANIFEST.in), then the wheel from it
    _check(subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                           "build_meta.build_sdist(sys.argv[1])", str(root / "sdist")], cwd=src,
                          capture_output=True, text=True, env=env, timeout=600), "sdist")
    sdist, = (root / "sdist").glob("deeploy-*.tar.gz")
    _check(subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(root / "dist"),
                           str(sdist)], capture_output=True, text=True, env=env, timeout=600), "pip wheel")
    wheel, = (root / "dist").glob("deeploy-*.whl")
    venv = root / "venv"
    _check(subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                          capture_output=True, text=True, env=env), "venv")
    _check(subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-deps", "--no-index", "-q",
                           str(wheel)], capture_output=True, text=True, env=env, timeout=600), "pip install")
    shutil.rmtree(src)
    return Installed(root, wheel, venv)


def test_wheel_carries_the_data_and_not_the_tests(installed):
    names = zipfile.ZipFile(installed.wheel).namelist()
    for needed in ("Deeploy/_data/TargetLibraries/Generic/kernels/", "Deeploy/_data/TargetLibraries/Siracusa/src/",
                   "Deeploy/_data/TargetLibraries/Siracusa/inc/deeploy_runtime.h",
                   "Deeploy/_data/cmake/Siracusa.cmake", "Deeploy/_data/cmake/Generic.cmake",
                   "Deeploy/_data/toolchain/qemu_plugin/deeploy_timing.c",
                   "Deeploy/_data/examples/firmware/main.c", "Deeploy/_data/examples/firmware/CMakeLists.txt",
                   "Deeploy/codegen/templates/Network.c.mako", "Deeploy/codegen/templates/testbench.c.mako"):
        assert any(n.startswith(needed) for n in names), needed
    assert not [n for n in names if n.startswith("DeeployTest")]
    assert not [n for n in names if n.endswith((".so", ".o", ".pyc", "install.sh"))]


def test_installed_version_and_location(installed, tmp_path):
    assert installed.ok(["deeploy", "--version"], tmp_path).strip() == f"deeploy {Deeploy.__version__}"
    where = installed.ok(["python", "-c", "import Deeploy, Deeploy.resources as r; "
                          "print(Deeploy.__file__); print(r.data_root())"], tmp_path).split()
    for path in where:
        assert Path(path).is_relative_to(installed.venv), where


TILED = ["--l1", "64000"]
# by default the CNN on each platform (the clusters tiled) and the transformer tiled; the rest with -m slow
CASES = [  # (model, platform, compile flags)
    ("miniMobileNetv2", "Generic", []),
    ("miniMobileNetv2", "Siracusa", ["slow"]),
    ("miniMobileNetv2", "Siracusa", TILED),
    ("miniMobileNetv2", "Siracusa_w_neureka", TILED),
    ("microLlama/microLlama64", "Generic", ["slow"]),
    ("microLlama/microLlama64", "Siracusa", TILED + ["--defaultMemLevel", "L2"]),
    ("microLlama/microLlama64", "Siracusa", ["slow"]),
    ("microLlama/microLlama64", "Siracusa_w_neureka", TILED + ["slow"]),
]


def _case(model: str, platform: str, flags: list[str]):
    marks = ([needs_cross] if platform != "Generic" else []) + ([pytest.mark.slow] if "slow" in flags else [])
    flags = [f for f in flags if f != "slow"]
    name = f"{model.split('/')[-1]}-{platform}" + ("-tiled" if "--l1" in flags else "")
    return pytest.param(model, platform, flags, marks=marks, id=name)


@pytest.mark.parametrize("model, platform, flags", [_case(*c) for c in CASES])
def test_installed_compile_build_and_run(installed, tmp_path, model, platform, flags):
    """From a folder outside the repository: compile, build by hand, then ``deeploy run``."""
    installed.ok(["deeploy", "compile", str(MODELS / model / "network.onnx"), "--platform", platform, "-o", "out",
                  "--emit-testbench", *flags], tmp_path)
    installed.ok("cmake -S out -B b && cmake --build b", tmp_path)
    assert (tmp_path / "b" / "deeploy_test").is_file()
    printed = installed.ok(["deeploy", "run", "out"], tmp_path)
    assert re.search(r"Errors: 0 out of [1-9]\d*", printed), printed


@needs_cross
def test_installed_output_without_testbench_gives_the_libraries(installed, tmp_path):
    installed.ok(["deeploy", "compile", str(MODELS / "miniMobileNetv2" / "network.onnx"), "--platform", "Siracusa",
                  "-o", "out"], tmp_path)
    installed.ok("cmake -S out -B b && cmake --build b", tmp_path)
    assert (tmp_path / "b" / "libdeeploy_network.a").is_file() and (tmp_path / "b" / "libdeeploy_runtime.a").is_file()
    assert (tmp_path / "out" / "link.ld").is_file()


def readme_commands() -> list[str]:
    """The ``sh`` blocks of the README's "Deploy your own network" section, in order."""
    text = (REPO / "README.md").read_text()
    start = text.index(README_SECTION)
    end = text.find("\n## ", start + len(README_SECTION))
    section = text[start:end if end >= 0 else len(text)]
    return re.findall(r"```sh\n(.*?)```", section, re.S)


@needs_cross
def test_readme_deploy_section_runs(installed, tmp_path):
    """Every command of the section, as written, from a fresh folder holding a link to DeeployTest/."""
    blocks = readme_commands()
    assert blocks, f"no sh block in the README section {README_SECTION!r}"
    (tmp_path / "DeeployTest").symlink_to(DEEPLOY_TEST)
    outputs = [installed.ok("set -euo pipefail\n" + block, tmp_path) for block in blocks]
    assert re.search(r"Errors: 0 out of [1-9]", "".join(outputs))
