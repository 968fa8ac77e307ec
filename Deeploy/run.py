"""``deeploy run out/``: build a compiled output folder that carries a testbench (``deeploy compile
--emit-testbench``) with CMake and run it, on the host or on the platform's virtual platform
(the target's ``TargetRunner``, e.g. QEMU for Siracusa); 0 only if every output element matched."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

from Deeploy.analysis.sizes import code_line, memory_line, network_library
from Deeploy.codegen.project_files import check_cmake_path
from Deeploy.errors import BuildError, DeeployError
from Deeploy.manifest import MANIFEST_FILE, read_manifest
from Deeploy.targets import runner_of

__all__ = ["generator_args", "build_output", "run_output", "testbench_status"]

_RESULT = re.compile(r"Errors: (\d+) out of (\d+)")


@lru_cache(maxsize=None)
def generator_args() -> tuple[str, ...]:
    """Ninja when installed (much less per-build overhead than Makefiles), else CMake's default."""
    return ("-G", "Ninja") if shutil.which("ninja") else ()


def _step(cmd: list[str], what: str, verbose: bool, explain=lambda output: None) -> None:
    if verbose:
        print("$ " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        raise BuildError(f"{what}: '{cmd[0]}' is not installed") from None
    if verbose and proc.stdout:
        print(proc.stdout, end="")
    if proc.returncode:
        output = proc.stdout + proc.stderr
        explained = explain(output)
        if explained:
            raise BuildError(explained)
        fatal = re.search(r"CMake Error at [^\n]*\(message\):\n((?:[ \t]+\S[^\n]*\n?)+)", output)
        tail = " ".join(fatal.group(1).split()) if fatal else "\n".join(output.strip().splitlines()[-25:])
        raise BuildError(f"{what} failed: {tail}")


def build_output(folder: Path, build_dir: Path, verbose: bool = False, explain=lambda output: None) -> Path:
    """``cmake -S folder -B build_dir && cmake --build build_dir``; the testbench program's path.
    A build folder configured before keeps its generator (Ninja, Makefiles, ...). ``explain``: the
    target's one line for a failed build (``TargetRunner.explain_build_error``)."""
    generator = () if (build_dir / "CMakeCache.txt").is_file() else generator_args()
    _step(["cmake", *generator, "-S", str(folder), "-B", str(build_dir)], "CMake configure", verbose)
    _step(["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 1)], "build", verbose, explain)
    return build_dir / "deeploy_test"


def testbench_status(exit_code: int, output: str) -> int:
    """0 if the testbench reported ``Errors: 0 out of N`` and exited with 0, else 1."""
    match = _RESULT.search(output)
    if not match:
        print(f"error: the program ended (exit code {exit_code}) without reporting results", file=sys.stderr)
        return 1
    return 1 if int(match.group(1)) or exit_code else 0


def run_output(folder: str | Path, build_dir: str | Path | None = None, *, timeout: float = 600.0,
               verbose: bool = False) -> int:
    """Build ``folder`` (into ``build_dir``, default ``<folder>/build``), run its testbench and
    print its output; the exit status (0: every output element matched)."""
    given, folder = folder, Path(folder).resolve()
    check_cmake_path(folder, "output folder")
    if build_dir is not None:
        check_cmake_path(build_dir, "--build-dir")
    if not (folder / MANIFEST_FILE).is_file():
        raise DeeployError(f"'{given}' is not a compiled output folder (no {MANIFEST_FILE}): make one with "
                           "`deeploy compile net.onnx -o <folder> --emit-testbench`")
    if not (folder / "main.c").is_file():
        raise DeeployError(f"'{folder}' has no testbench (main.c): compile it with --emit-testbench")
    manifest = read_manifest(folder)
    runner = runner_of(manifest.platform)
    program = build_output(folder, Path(build_dir).resolve() if build_dir else folder / "build", verbose,
                           runner.explain_build_error)
    print(code_line(program, network_library(program.parent)))
    print(memory_line(manifest))
    code, output = runner.execute(program, argparse.Namespace(), None, timeout)
    print(output, end="" if output.endswith("\n") or not output else "\n")
    return testbench_status(code, output)
