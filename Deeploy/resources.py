"""Where the files the compiler ships beside its Python code live: ``TargetLibraries/`` (kernels
and platform runtimes), ``cmake/`` (the platform build files) and ``toolchain/`` (the QEMU timing
plugin's sources), and the examples (``docs/examples/``). In a checkout they are the repository's
own folders; an installed wheel carries copies under ``Deeploy/_data/`` (``setup.py`` puts them there)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from Deeploy.errors import BuildError

__all__ = ["data_root", "target_libraries", "cmake_dir", "toolchain_dir", "examples_dir", "timing_plugin"]

_PACKAGE = Path(__file__).resolve().parent


def data_root() -> Path:
    """The folder holding ``TargetLibraries/``, ``cmake/`` and ``toolchain/``."""
    packaged = _PACKAGE / "_data"
    return packaged if (packaged / "TargetLibraries").is_dir() else _PACKAGE.parent


def target_libraries() -> Path:
    return data_root() / "TargetLibraries"


def cmake_dir() -> Path:
    return data_root() / "cmake"


def toolchain_dir() -> Path:
    return data_root() / "toolchain"


def examples_dir() -> Path:
    """The examples (``firmware/``: two networks in one program): the repository's docs/examples/,
    or their copy in an installed wheel."""
    packaged = _PACKAGE / "_data" / "examples"
    return packaged if packaged.is_dir() else _PACKAGE.parent / "docs" / "examples"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "deeploy"


def timing_plugin(build: bool = True, name: str = "deeploy_timing") -> Path:
    """The QEMU plugin ``toolchain/qemu_plugin/<name>.c`` (the RISC-V timing plugin, or
    ``deeploy_arm_timing`` of CortexM): ``toolchain/build/`` of a checkout (``toolchain/install.sh``
    builds it there) unless a source is newer, else compiled once from the shipped sources with
    the host C compiler into ``~/.cache/deeploy/`` (keyed by the sources' hash). Raises BuildError
    if it cannot be built."""
    library = f"lib{name}.so"
    sources = toolchain_dir() / "qemu_plugin"
    built = toolchain_dir() / "build" / library
    files = sorted(p for p in sources.glob("*") if p.suffix in (".c", ".h"))
    if not build or (built.is_file() and all(p.stat().st_mtime <= built.stat().st_mtime for p in files)):
        return built
    if not files:
        raise BuildError(f"the QEMU timing plugin's sources are missing ({sources})")
    digest = hashlib.sha256(b"".join(p.name.encode() + p.read_bytes() for p in files)).hexdigest()[:16]
    cached = _cache_dir() / f"{digest}-{library}"
    if cached.is_file():
        return cached
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise BuildError("building the QEMU timing plugin needs a host C compiler (gcc); install it")
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_name(f".{cached.name}.{os.getpid()}")
    proc = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-fvisibility=hidden", "-o", str(tmp),
                           str(sources / f"{name}.c"), "-lpthread"], capture_output=True, text=True)
    if proc.returncode:
        tmp.unlink(missing_ok=True)
        raise BuildError(f"building the QEMU timing plugin failed: {proc.stderr.strip()[-500:]}")
    os.replace(tmp, cached)
    return cached
