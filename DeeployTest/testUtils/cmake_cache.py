"""CMake builds of test networks configured against a cached platform build.

Configuring a CMake tree from scratch probes the compiler (identification, ABI, features) and a
cluster platform then compiles its runtime again for every test. Instead, one *platform build*
is kept per (platform, CMake options, CMake version, generator, build files): the top-level
project configured with ``DEEPLOY_RUNTIME_ONLY=ON``, i.e. CMake's system and compiler detection
plus the platform runtime compiled once as objects. A test's build folder (``<gen>/build``) is
then a fresh, ordinary CMake tree of the compiled output folder (``<gen>/network``, the
project users build with ``cmake -S``): it is seeded with the platform build's detection results
(what CMake itself reuses when it re-configures a tree), configured with
``-DDEEPLOY_RUNTIME_OBJECTS=<copies of the runtime objects>`` and built, so it compiles only the
network and the testbench.

The platform builds live in ``DeeployTest/TEST_CMAKE_CACHE`` (``DEEPLOY_CMAKE_CACHE=<folder>``
moves them, ``DEEPLOY_CMAKE_CACHE=off`` configures every test from scratch). Creating or
updating one is serialised by a file lock; a test copies what it needs while holding the lock,
so parallel test processes never see a half-written platform build.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
import subprocess
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator

from Deeploy.errors import DeeployError
from Deeploy.run import generator_args

__all__ = ["BUILD_MARK", "check_build_dir", "configure_and_build", "cache_root", "split_definitions"]

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = REPO_ROOT / "DeeployTest" / "TEST_CMAKE_CACHE"
# cache entries that tell CMake the platform and compiler were already determined for this tree
_SEED_ENTRIES = ("CMAKE_C_COMPILER", "CMAKE_PLATFORM_INFO_INITIALIZED")
BUILD_MARK = ".deeploy-build"   # in every build folder configure_and_build makes

Runner = Callable[[list[str], str], subprocess.CompletedProcess]
"""(command, what) -> finished process; the caller reports failures."""
Check = Callable[[subprocess.CompletedProcess, str], None]
"""(finished process, what) -> None; raises the caller's error when the step failed."""


def cache_root() -> Path | None:
    """Where platform builds are kept; None when caching is switched off."""
    value = os.environ.get("DEEPLOY_CMAKE_CACHE", "").strip()
    if value.lower() in ("off", "0", "no", "false"):
        return None
    return Path(value).resolve() if value else DEFAULT_ROOT


@lru_cache(maxsize=None)
def _cmake_version() -> str:
    out = subprocess.run(["cmake", "--version"], capture_output=True, text=True).stdout
    match = re.search(r"cmake version (\S+)", out)
    return match.group(1) if match else "unknown"


def split_definitions(defs: list[str], test_folder: Path) -> tuple[list[str], list[str]]:
    """(shared, per-test) CMake definitions: a definition whose value is a path inside the test's
    folder (e.g. its linker script) belongs to that test only; the others select the platform
    build (e.g. -DNUM_CORES=8, -DDEEPLOY_SANITIZE=ON)."""
    shared, own = [], []
    prefix = str(test_folder)
    for d in defs:
        value = d.split("=", 1)[1] if "=" in d else ""
        (own if value.startswith(prefix) else shared).append(d)
    return shared, own


def _key(cmake_platform: str, shared: list[str]) -> str:
    h = hashlib.sha256()
    for part in (_cmake_version(), " ".join(generator_args()), str(REPO_ROOT), cmake_platform, *sorted(shared)):
        h.update(part.encode() + b"\0")
    for path in (REPO_ROOT / "CMakeLists.txt", *sorted((REPO_ROOT / "cmake").glob("*.cmake"))):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return f"{cmake_platform}-{h.hexdigest()[:16]}"


def _writable(root: Path) -> bool:
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False
    return os.access(root, os.W_OK)


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _platform_build(root: Path, cmake_platform: str, shared: list[str], run: Runner, check: Check) -> Path:
    """The up-to-date platform build for these options (call with its lock held)."""
    tree = root / _key(cmake_platform, shared)
    ready = tree / "deeploy_platform_build"
    if not ready.is_file():
        shutil.rmtree(tree, ignore_errors=True)
        proc = run(["cmake", *generator_args(), "-S", str(REPO_ROOT), "-B", str(tree), f"-DPLATFORM={cmake_platform}",
                    "-DDEEPLOY_RUNTIME_ONLY=ON", *shared], "CMake configure")
        if proc.returncode:
            shutil.rmtree(tree, ignore_errors=True)
        check(proc, "CMake configure")
    proc = run(["cmake", "--build", str(tree)], "build")   # compiles the runtime, or nothing if current
    if proc.returncode:
        ready.unlink(missing_ok=True)
    check(proc, "build")
    ready.write_text(f"platform build of {cmake_platform} {' '.join(shared)}\n")
    return tree


def _seed(tree: Path, build_dir: Path) -> list[Path]:
    """Give the fresh ``build_dir`` the platform build's system and compiler detection and copies
    of its runtime objects; returns the copied objects."""
    version_dir = f"CMakeFiles/{_cmake_version()}"
    (build_dir / version_dir).mkdir(parents=True)
    for path in sorted((tree / version_dir).glob("*.cmake")):   # CMakeSystem.cmake, CMakeCCompiler.cmake
        shutil.copyfile(path, build_dir / version_dir / path.name)
    entries = [line for line in (tree / "CMakeCache.txt").read_text().splitlines()
               if line.split(":", 1)[0] in _SEED_ENTRIES]
    (build_dir / "CMakeCache.txt").write_text("".join(e + "\n" for e in entries))
    objects = []
    listed = (tree / "runtime_objects.txt").read_text().strip()
    if listed:
        (build_dir / "runtime").mkdir()
        for k, obj in enumerate(listed.split(";")):
            copy = build_dir / "runtime" / f"{k}_{Path(obj).name}"
            shutil.copyfile(obj, copy)
            objects.append(copy)
    return objects


def check_build_dir(build_dir: Path, owned: bool = False) -> None:
    """Refuse to replace ``build_dir`` unless it is missing, empty, carries ``BUILD_MARK`` (made by
    :func:`configure_and_build`) or lies in a folder that is wholly the runner's (``owned``)."""
    ours = owned or (build_dir / BUILD_MARK).is_file() or build_dir.is_dir() and not any(build_dir.iterdir())
    if build_dir.is_symlink() or build_dir.exists() and not ours:
        raise DeeployError(f"{build_dir} is a build folder the test runner did not make; move it away or "
                           "name another --gen-dir (nothing was changed)")


def configure_and_build(build_dir: Path, cmake_platform: str, defs: list[str], test_folder: Path,
                        run: Runner, check: Check, source_dir: Path = REPO_ROOT, owned: bool = False) -> None:
    """Configure ``build_dir`` (created afresh, see :func:`check_build_dir` for ``owned``) for
    ``source_dir`` (a compiled output folder, or the top-level project with ``-DPLATFORM``) with
    ``defs`` and build it; ``defs`` holding paths inside ``test_folder`` are the test's own, the
    others select the platform build it is configured against."""
    check_build_dir(build_dir, owned)
    shutil.rmtree(build_dir, ignore_errors=True)
    build_dir.mkdir(parents=True)
    (build_dir / BUILD_MARK).write_text("Made by the test runner; replaced on the next build.\n")
    root = cache_root()
    extra: list[str] = []
    if root is not None and not _writable(root):
        root = None                       # e.g. a read-only checkout: configure from scratch
    if root is not None:
        shared, _ = split_definitions(defs, test_folder)
        lock = root / f"{_key(cmake_platform, shared)}.lock"
        with _locked(lock):
            tree = _platform_build(root, cmake_platform, shared, run, check)
            objects = _seed(tree, build_dir)
        if objects:
            extra.append("-DDEEPLOY_RUNTIME_OBJECTS=" + ";".join(str(o) for o in objects))
    platform = [f"-DPLATFORM={cmake_platform}"] if source_dir == REPO_ROOT else []
    configure = ["cmake", *generator_args(), "-S", str(source_dir), "-B", str(build_dir), *platform, *defs, *extra]
    check(run(configure, "CMake configure"), "CMake configure")
    check(run(["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 1)], "build"), "build")
