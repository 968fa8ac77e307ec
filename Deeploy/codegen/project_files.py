"""The files that make a compiled output folder build on its own (``cmake -S out -B build``):
the platform's CMake file (which selects the compiler, e.g. the RISC-V cross toolchain, before
``project()``), the sanitizer option, the runtime sources of the platform's libraries and the
linker script. They are copies of the shipped files (``Deeploy.resources``), never rewritten."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

from Deeploy.errors import DeeployError
from Deeploy.resources import cmake_dir
from Deeploy.platform import Platform

__all__ = ["write_platform_files", "check_cmake_path", "LINKER_SCRIPT", "RUNTIME_FOLDER", "CMAKE_FOLDER"]

CMAKE_FOLDER = "cmake"
RUNTIME_FOLDER = "runtime"
LINKER_SCRIPT = "link.ld"
_INCLUDE = re.compile(r"include\(\$\{CMAKE_CURRENT_LIST_DIR\}/([\w.-]+\.cmake)\)")


def check_cmake_path(path: str | Path, what: str) -> None:
    """Refuse a folder CMake cannot configure: ';' splits its lists, '"' ends its strings."""
    bad = sorted({c for c in os.path.abspath(path) if c in ';"\n'})
    if bad:
        raise DeeployError(f"{what} '{path}' contains {' '.join(repr(c) for c in bad)}, which CMake cannot take "
                           "in a path; choose a folder without them")


def _cmake_files(name: str) -> list[str]:
    """``name`` and the files of ``cmake/`` it includes (``include(${CMAKE_CURRENT_LIST_DIR}/X.cmake)``)."""
    found = [name]
    for included in _INCLUDE.findall((cmake_dir() / name).read_text()):
        found += [n for n in _cmake_files(included) if n not in found]
    return found


def write_platform_files(platform: Platform, out_dir: Path) -> None:
    """Copy the platform's build files into ``out_dir`` (see the module docstring)."""
    (out_dir / CMAKE_FOLDER).mkdir(exist_ok=True)
    for name in (*_cmake_files(f"{platform.cmake_platform}.cmake"), "Sanitize.cmake"):
        shutil.copyfile(cmake_dir() / name, out_dir / CMAKE_FOLDER / name)
    for kernel_dir in platform.kernel_dirs:
        for source in sorted((kernel_dir.parent / "src").glob("*.c")):
            (out_dir / RUNTIME_FOLDER).mkdir(exist_ok=True)
            shutil.copyfile(source, out_dir / RUNTIME_FOLDER / source.name)
    if platform.linker_script is not None:
        (out_dir / LINKER_SCRIPT).write_text(platform.linker_script(platform.memory))
