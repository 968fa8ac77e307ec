"""Which timing plugin runs: the checkout's toolchain/build/ copy only while it is at least as new
as the plugin's sources; a stale copy (sources changed since toolchain/install.sh built it, e.g.
after a merge that adds plugin arguments) gives way to a build from the sources."""

from __future__ import annotations

import os
import shutil

import pytest

import Deeploy.resources as resources
from DeeployTest.test_suite.conftest import REPO

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="needs a host C compiler")


@pytest.fixture
def toolchain(tmp_path, monkeypatch):
    """A copy of toolchain/qemu_plugin with a (fake) built plugin in build/, and an empty cache."""
    root = tmp_path / "toolchain"
    shutil.copytree(REPO / "toolchain" / "qemu_plugin", root / "qemu_plugin")
    (root / "build").mkdir()
    for src in (root / "qemu_plugin").iterdir():
        src.touch()                                  # sources as of now
    built = root / "build" / "libdeeploy_timing.so"
    built.write_bytes(b"built by install.sh")
    monkeypatch.setattr(resources, "toolchain_dir", lambda: root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return root, built


def _age(path, seconds):
    st = path.stat()
    os.utime(path, (st.st_atime - seconds, st.st_mtime - seconds))


def test_fresh_build_is_used(toolchain):
    root, built = toolchain
    for src in (root / "qemu_plugin").iterdir():
        _age(src, 100)
    assert resources.timing_plugin() == built


@needs_gcc
def test_stale_build_gives_way_to_the_sources(toolchain, tmp_path):
    root, built = toolchain
    _age(built, 100)                                 # a source changed after the last build
    plugin = resources.timing_plugin()
    assert plugin != built and plugin.is_file()
    assert plugin.is_relative_to(tmp_path / "cache")
    assert resources.timing_plugin(build=False) == built
