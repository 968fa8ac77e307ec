"""Test builds configured against the cached platform build (testUtils/cmake_cache.py): one
platform build per (platform, options), shared safely by concurrent tests, each test's build
folder a complete CMake tree that does not probe the compiler again; caching can be switched off."""

from __future__ import annotations

import argparse
import contextlib
import io
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.cmake_cache import split_definitions
from DeeployTest.testUtils.runner import run_test
from DeeployTest.test_suite.conftest import DEEPLOY_TEST

NETWORKS = [DEEPLOY_TEST / "Tests" / "Kernels" / "Add" / "Regular", DEEPLOY_TEST / "Tests" / "Kernels" / "Relu" / "Int8"]


def _run(test_dir: Path, gen: Path, **flags) -> tuple[int, str]:
    args = argparse.Namespace(test=str(test_dir), verbose=True, skipgen=False, skipsim=False, gen_dir=str(gen),
                              **flags)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = run_test(args, GENERIC)
    return code, out.getvalue()


def test_split_definitions_keeps_test_paths_apart(tmp_path):
    gen = tmp_path / "gen"
    shared, own = split_definitions([f"-DNETWORK_DIR={gen}/network", "-DNUM_CORES=8", f"-DLINKER_SCRIPT={gen}/l.ld",
                                     "-DDEEPLOY_SANITIZE=ON"], gen)
    assert shared == ["-DNUM_CORES=8", "-DDEEPLOY_SANITIZE=ON"]
    assert own == [f"-DNETWORK_DIR={gen}/network", f"-DLINKER_SCRIPT={gen}/l.ld"]


def test_concurrent_tests_share_one_platform_build(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPLOY_CMAKE_CACHE", str(tmp_path / "cache"))
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:   # two test processes
        results = dict(enumerate(pool.map(_run, NETWORKS, [tmp_path / f"gen{k}" for k in range(2)])))
    for code, out in results.values():
        assert code == 0 and "Errors: 0 out of" in out, out
    platform_builds = [p for p in (tmp_path / "cache").iterdir() if p.is_dir()]
    assert len(platform_builds) == 1 and platform_builds[0].name.startswith("Generic-")
    # the compiler was identified once, by the platform build, never in a test's own tree
    detected = sum(out.count("The C compiler identification") for _, out in results.values())
    assert detected == 1, [out for _, out in results.values()]
    for k in range(2):
        cache = (tmp_path / f"gen{k}" / "build" / "CMakeCache.txt").read_text()
        assert f"CMAKE_HOME_DIRECTORY:INTERNAL={tmp_path / f'gen{k}' / 'network'}" in cache   # the output's project
        assert (tmp_path / f"gen{k}" / "build" / "deeploy_test").is_file()

    # a different option (sanitizers) is a second platform build; the first one is reused as is
    code, out = _run(NETWORKS[0], tmp_path / "gen_sanitized", sanitize=True)
    assert code == 0, out
    assert len([p for p in (tmp_path / "cache").iterdir() if p.is_dir()]) == 2
    code, out = _run(NETWORKS[1], tmp_path / "gen_again")
    assert code == 0 and "The C compiler identification" not in out, out


def test_cache_off_configures_from_scratch(tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPLOY_CMAKE_CACHE", "off")
    code, out = _run(NETWORKS[0], tmp_path / "gen")
    assert code == 0 and "Errors: 0 out of" in out, out
    assert "The C compiler identification" in out
