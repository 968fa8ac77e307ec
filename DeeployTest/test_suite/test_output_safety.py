"""The output step never destroys what the compiler did not write: `-o .`, `-o <file>`, a folder
of the user's, an unwritable place, or a path under a regular file each end in one clear error,
with every user file untouched and no temporary folder left behind."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from Deeploy.compiler import OUTPUT_MARK, write_atomically
from Deeploy.errors import DeeployError
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

MODEL = DEEPLOY_TEST / "Tests" / "Models" / "miniMobileNetv2"


def _deeploy(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "Deeploy.cli", "compile", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def _tree(root: Path) -> dict[str, bytes]:
    """Every file below root with its content (a folder's snapshot)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _assert_refused(proc, *needles):
    assert proc.returncode != 0, proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's folder: the model, its data and a file of their own."""
    proj = tmp_path / "proj"
    shutil.copytree(MODEL, proj)
    (proj / "notes.txt").write_text("mine")
    return proj


def test_output_dot_in_the_users_folder_is_refused(project: Path):
    before = _tree(project)
    _assert_refused(_deeploy("network.onnx", "-o", ".", cwd=project), "working directory")
    assert _tree(project) == before


def test_output_naming_a_users_folder_is_refused(project: Path):
    before = _tree(project)
    _assert_refused(_deeploy(project / "network.onnx", "-o", project, cwd=project.parent),
                    "did not write", "notes.txt")
    assert _tree(project) == before


def test_output_naming_an_existing_file_is_refused(project: Path):
    before = _tree(project)
    _assert_refused(_deeploy("network.onnx", "-o", "notes.txt", cwd=project), "not a folder")
    assert _tree(project) == before


def test_output_under_a_regular_file_is_refused(project: Path):
    before = _tree(project)
    _assert_refused(_deeploy("network.onnx", "-o", "notes.txt/out", cwd=project), "cannot create")
    assert _tree(project) == before


def test_compiled_folder_is_marked_and_replaced_on_recompile(project: Path):
    for _ in range(2):
        proc = _deeploy("network.onnx", "-o", "out", cwd=project)
        assert proc.returncode == 0, proc.stderr
    out = project / "out"
    assert (out / OUTPUT_MARK).is_file() and (out / "Network.c").is_file()
    assert sorted(p.name for p in project.iterdir() if p.name.startswith(".")) == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_parent_gives_an_error_and_leaves_nothing(project: Path):
    _deeploy("network.onnx", "-o", "ro/out", cwd=project)
    ro = project / "ro"
    before = _tree(ro)
    ro.chmod(0o555)
    try:
        _assert_refused(_deeploy("network.onnx", "-o", "ro/out", cwd=project), "permission denied")
    finally:
        ro.chmod(0o755)
    assert _tree(ro) == before and sorted(p.name for p in ro.iterdir()) == ["out"]


def test_failed_replacement_restores_nothing_partial(tmp_path: Path, monkeypatch):
    """When the move into place fails, the old output stays and no temporary folder is left."""
    out = tmp_path / "out"
    write_atomically(out, lambda d: (d / "a.txt").write_text("old"))
    real_replace = os.replace

    def failing_replace(src, dst):
        if Path(dst) == out and Path(src).name != "old":  # the new folder cannot move in
            raise PermissionError(13, "Permission denied")
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(DeeployError, match="permission denied"):
        write_atomically(out, lambda d: (d / "a.txt").write_text("new"))
    assert (out / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_failed_fill_leaves_the_old_output(tmp_path: Path):
    out = tmp_path / "out"
    write_atomically(out, lambda d: (d / "a.txt").write_text("old"))

    def fail(d: Path):
        (d / "a.txt").write_text("half")
        raise DeeployError("boom")

    with pytest.raises(DeeployError):
        write_atomically(out, fail)
    assert (out / "a.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_interrupt_during_compile_leaves_nothing(project: Path):
    """Ctrl-C while compiling: exit 130, one line, no output or temporary folder."""
    code = ("import time, Deeploy.compiler as c\n"
            "real = c.emit_project\n"
            "def slow(*a, **k):\n"
            "    r = real(*a, **k); print('filled', flush=True); time.sleep(30); return r\n"
            "c.emit_project = slow\n"
            "import sys; from Deeploy.cli import main; sys.exit(main(sys.argv[1:]))\n")
    proc = subprocess.Popen([sys.executable, "-c", code, "compile", "network.onnx", "-o", "out"], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while proc.stdout.readline().strip() != "filled" and time.time() < deadline:
        pass
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["error: interrupted; nothing was written"]
    assert not (project / "out").exists()
    assert not [p for p in project.iterdir() if p.name.startswith(".")]


def test_a_users_c_project_is_never_replaced(project: Path):
    """A folder of the user's own C project (the firmware example: CMakeLists.txt, main.c,
    include/) carries no mark, so it is refused however its files are named."""
    firmware = project / "fw"
    shutil.copytree(DEEPLOY_TEST.parent / "docs" / "examples" / "firmware", firmware)
    (firmware / "include").mkdir()
    (firmware / "include" / "board.h").write_text("#define LED 3\n")
    before = _tree(project)
    _assert_refused(_deeploy("network.onnx", "-o", "fw", cwd=project), "'", "fw", "did not write")
    assert _tree(project) == before


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_snapshots_into_a_symlink_are_refused_before_writing(project: Path):
    elsewhere = project / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "mine.onnx").write_text("the user's model")
    (project / "out_states").symlink_to(elsewhere)
    before = _tree(project)
    _assert_refused(_deeploy("network.onnx", "-o", "out", "--snapshots", cwd=project), "out_states", "symbolic link")
    assert _tree(project) == before and not (project / "out").exists() and _hidden(project) == []


def test_snapshots_never_delete_a_users_folder_named_like_a_snapshot(project: Path):
    keep = project / "out_states" / "keep.onnx"
    keep.mkdir(parents=True)
    (keep / "data.txt").write_text("mine")
    before = _tree(project)
    _assert_refused(_deeploy("network.onnx", "-o", "out", "--snapshots", cwd=project), "out_states")
    assert _tree(project) == before and not (project / "out").exists() and _hidden(project) == []


@pytest.mark.parametrize("output", [".", "..", "/"])
def test_snapshots_with_an_output_around_the_working_directory_are_refused(project: Path, output: str):
    before = _tree(project.parent)
    _assert_refused(_deeploy("network.onnx", "-o", output, "--snapshots", cwd=project), "working directory")
    assert _tree(project.parent) == before and _hidden(project) == [] and _hidden(project.parent) == []


def test_snapshots_are_replaced_on_recompile(project: Path):
    for _ in range(2):
        proc = _deeploy("network.onnx", "-o", "out", "--snapshots", cwd=project)
        assert proc.returncode == 0, proc.stderr
    assert (project / "out_states" / "frontend.onnx").is_file() and _hidden(project) == []


def test_a_compile_killed_hard_leaves_nothing_after_the_next_run(project: Path):
    """kill -9 skips every clean-up: the next compile to the same output removes the temporary
    folder the killed one left (its process is gone), never a hidden folder of the user's."""
    (project / ".out.mine").mkdir()
    (project / ".out.mine" / "notes.txt").write_text("mine")
    code = ("import time, Deeploy.compiler as c\n"
            "real = c.emit_project\n"
            "def slow(*a, **k):\n"
            "    r = real(*a, **k); print('filled', flush=True); time.sleep(60); return r\n"
            "c.emit_project = slow\n"
            "import sys; from Deeploy.cli import main; sys.exit(main(sys.argv[1:]))\n")
    for snapshots in ([], ["--snapshots"]):
        proc = subprocess.Popen([sys.executable, "-c", code, "compile", "network.onnx", "-o", "out", *snapshots],
                                cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 60
        while proc.stdout.readline().strip() != "filled" and time.time() < deadline:
            pass
        proc.kill()
        proc.communicate(timeout=60)
        assert len(_hidden(project)) > 1, "the killed compile left no temporary folder"
        ok = _deeploy("network.onnx", "-o", "out", *snapshots, cwd=project)
        assert ok.returncode == 0, ok.stderr
        assert _hidden(project) == [".out.mine"]
    assert (project / ".out.mine" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_output_folders_honour_the_umask(project: Path, umask: int):
    proc = subprocess.run([sys.executable, "-m", "Deeploy.cli", "compile", "network.onnx", "-o", "out", "--snapshots"],
                          cwd=project, capture_output=True, text=True, preexec_fn=lambda: os.umask(umask))
    assert proc.returncode == 0, proc.stderr
    for folder in ("out", "out_states"):
        assert (project / folder).stat().st_mode & 0o777 == 0o777 & ~umask, folder
