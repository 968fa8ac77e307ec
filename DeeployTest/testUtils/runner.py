"""Shared driver of the test runners: compile a test network for a platform, generate the
harness, build with CMake, run, and report ``Errors: E out of N``."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from Deeploy.compiler import compile_graph
from Deeploy.errors import BuildError, DeeployError
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from DeeployTest.testUtils.harness import write_harness

__all__ = ["RunnerPlatform", "base_parser", "resolve_test_dir", "run_test", "main"]

DEEPLOY_TEST = Path(__file__).resolve().parents[1]
REPO_ROOT = DEEPLOY_TEST.parent


def _run_host(binary: Path, args: argparse.Namespace, gen: Path, timeout: float) -> tuple[int, str]:
    proc = _run([str(binary)], "run", False, timeout)
    if proc.stderr.strip():
        print(proc.stderr, end="", file=sys.stderr)
    return proc.returncode, proc.stdout


@dataclass(frozen=True)
class RunnerPlatform:
    """How a runner builds and executes tests of one platform.

    ``prepare(args, gen, result)`` returns extra CMake definitions (and may write files);
    ``execute(binary, args, gen, timeout)`` runs the built test and returns (exit code, output).
    """

    platform: str                                  # compiler platform name
    gen_root: str                                  # DeeployTest/<gen_root>/<test path>
    cmake_platform: str                            # cmake/<name>.cmake
    execute: Callable[[Path, argparse.Namespace, Path, float], tuple[int, str]] = _run_host
    prepare: Callable[[argparse.Namespace, Path], list[str]] = lambda args, gen: []
    timeout: float = 300.0
    harness_runs: int = 2                          # RunNetwork calls per test (re-entrancy check)
    harness_section: str = ""                      # section of the reference data (default .rodata)
    explain_build_error: Callable[[str], str | None] | None = None  # e.g. an over-full memory level
    after_compile: Callable[[object, argparse.Namespace, Path], None] | None = None  # e.g. reports


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("-t", "--test", required=True, help="test folder with network.onnx, inputs.npz, outputs.npz")
    p.add_argument("-v", "--verbose", action="store_true", help="show compiler passes and build commands")
    p.add_argument("--skipgen", action="store_true", help="reuse the previously generated code")
    p.add_argument("--skipsim", action="store_true", help="generate and build, but do not run")
    p.add_argument("--gen-dir", default=None, help="where to generate (default DeeployTest/TEST_<PLATFORM>/<test>)")
    return p


def resolve_test_dir(arg: str) -> Path:
    """A test folder given absolutely, relative to the working directory or to DeeployTest/."""
    for candidate in (Path(arg), Path.cwd() / arg, DEEPLOY_TEST / arg):
        if (candidate / "network.onnx").is_file():
            return candidate.resolve()
    raise DeeployError(f"test folder '{arg}' not found (looked for network.onnx relative to the "
                       f"working directory and to {DEEPLOY_TEST})")


def _test_path(test_dir: Path) -> Path:
    """The test's path below DeeployTest/, or below a 'Tests' or 'corpus' folder."""
    try:
        return test_dir.relative_to(DEEPLOY_TEST)
    except ValueError:
        parts = test_dir.parts
        for anchor in ("Tests", "corpus"):
            if anchor in parts:
                k = len(parts) - 1 - parts[::-1].index(anchor)
                return Path(*parts[k + 1:]) if k + 1 < len(parts) else Path(test_dir.name)
        return Path(test_dir.name)


def _run(cmd: list[str], what: str, verbose: bool, timeout: float | None = None, cwd: Path | None = None):
    if verbose:
        print("$ " + " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{what} timed out after {timeout:.0f} s") from None
    except FileNotFoundError:
        raise BuildError(f"{what}: '{cmd[0]}' is not installed") from None
    if verbose and proc.stdout:
        print(proc.stdout, end="")
    return proc


def run_test(args: argparse.Namespace, rp: RunnerPlatform, compile_options: dict | None = None) -> int:
    test_dir = resolve_test_dir(args.test)
    gen = Path(args.gen_dir).resolve() if args.gen_dir else DEEPLOY_TEST / rp.gen_root / _test_path(test_dir)
    network_dir, harness_dir, build_dir = gen / "network", gen / "harness", gen / "build"
    log = print if args.verbose else None

    if not args.skipgen:
        start = time.perf_counter()
        graph = load_onnx(test_dir / "network.onnx")
        inputs = map_arrays(test_dir / "inputs.npz", load_npz_arrays(test_dir / "inputs.npz"),
                            graph.inputs, graph, "input")
        expected = map_arrays(test_dir / "outputs.npz", load_npz_arrays(test_dir / "outputs.npz"),
                              graph.outputs, graph, "output")
        outputs = list(graph.outputs)  # by position: compiling may give repeated outputs own tensors
        for note in assign_input_types(graph, inputs):
            print("note:", note)
        result = compile_graph(graph, rp.platform, network_dir, snapshot_dir=gen / "deeployStates",
                               log=log, **(compile_options or {}))
        s = result.summary
        write_harness(result.graph, inputs, [expected[n] for n in outputs], harness_dir, runs=rp.harness_runs,
                      section=rp.harness_section)
        if rp.after_compile:
            rp.after_compile(result, args, gen)
        print(f"Compiled {test_dir.name} for {rp.platform} in {time.perf_counter() - start:.2f} s: "
              f"{s.layers} layers, constants {s.const_bytes} B, arena {s.arena_size} B "
              f"(lower bound {s.lower_bound} B)")
    elif not (network_dir / "Network.c").is_file():
        raise DeeployError(f"--skipgen given but nothing was generated in {network_dir}")

    configure = ["cmake", "-S", str(REPO_ROOT), "-B", str(build_dir), f"-DPLATFORM={rp.cmake_platform}",
                 f"-DNETWORK_DIR={network_dir}", f"-DHARNESS_DIR={harness_dir}", *rp.prepare(args, gen)]
    for cmd, what in ((configure, "CMake configure"),
                      (["cmake", "--build", str(build_dir), "-j", str(os.cpu_count() or 1)], "build")):
        proc = _run(cmd, what, args.verbose)
        if proc.returncode:
            output = proc.stdout + proc.stderr
            explained = rp.explain_build_error(output) if rp.explain_build_error else None
            fatal = re.search(r"CMake Error at [^\n]*\(message\):\n((?:[ \t]+\S[^\n]*\n?)+)", output)
            if explained or fatal:
                raise BuildError(explained or " ".join(fatal.group(1).split()))
            tail = "\n".join(output.strip().splitlines()[-25:])
            raise BuildError(f"{what} failed for {test_dir}:\n{tail}")
    if args.skipsim:
        print("Built", build_dir / "deeploy_test")
        return 0

    code, output = rp.execute(build_dir / "deeploy_test", args, gen, getattr(args, "timeout", None) or rp.timeout)
    print(output, end="" if output.endswith("\n") or not output else "\n")
    match = re.search(r"Errors: (\d+) out of (\d+)", output)
    if not match:
        print(f"error: the test program ended (exit code {code}) without reporting results", file=sys.stderr)
        return 1
    return 1 if int(match.group(1)) or code else 0


def main(rp: RunnerPlatform, description: str, extra_args: Callable[[argparse.ArgumentParser], None] | None = None,
         compile_options: Callable[[argparse.Namespace], dict] | None = None) -> None:
    parser = base_parser(description)
    if extra_args:
        extra_args(parser)
    args = parser.parse_args()
    try:
        code = run_test(args, rp, compile_options(args) if compile_options else None)
    except DeeployError as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    sys.exit(code)
