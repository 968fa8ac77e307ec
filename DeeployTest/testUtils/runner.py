"""Shared driver of the test runners: compile a test network for a platform, generate the
harness, build with CMake, run, and report ``Errors: E out of N``."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from Deeploy.arguments import ArgumentParser
from Deeploy.analysis.sizes import code_line, engine_line, memory_line, network_library
from Deeploy.codegen.testbench import testbench_writer
from Deeploy.compiler import compile_graph
from Deeploy.errors import BuildError, DeeployError, error_text
from Deeploy.run import testbench_status
from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
from Deeploy.passes.loop_flags import add_loop_flags, loop_rolling_options
from Deeploy.manifest import read_manifest
from Deeploy.platform import Platform, TargetRunner
from Deeploy.targets import get_platform, runner_of
from DeeployTest.testUtils.gen_folder import Generation, check_reusable, claimed, gen_dir_for, source_record
from DeeployTest.testUtils.cmake_cache import check_build_dir, configure_and_build
from DeeployTest.testUtils.interrupt import raise_on_interrupt

__all__ = ["RunnerPlatform", "base_parser", "resolve_test_dir", "run_test", "main"]

DEEPLOY_TEST = Path(__file__).resolve().parents[1]
REPO_ROOT = DEEPLOY_TEST.parent


@dataclass(frozen=True)
class RunnerPlatform:
    """A runner's platform: the compiler platform ``platform`` and where its tests generate
    (``DeeployTest/<gen_root>/<test path>``); how they are built, run and read back is the
    target's (``TargetRunner``, ``Deeploy.targets.runner_of``)."""

    platform: str                                  # compiler platform name
    gen_root: str                                  # DeeployTest/<gen_root>/<test path>
    harness_runs: int = 2                          # RunNetwork calls per test (re-entrancy check)
    harness_tolerance: dict | None = None          # (rtol, atol) per float type (default FLOAT_TOLERANCE)

    @property
    def target(self) -> Platform:
        return get_platform(self.platform)

    @property
    def runner(self) -> TargetRunner:
        return runner_of(self.platform)


def base_parser(description: str) -> argparse.ArgumentParser:
    p = ArgumentParser(description=description)
    p.add_argument("-t", "--test", required=True, help="test folder with network.onnx, inputs.npz, outputs.npz")
    p.add_argument("-v", "--verbose", action="store_true", help="show compiler passes and build commands")
    p.add_argument("--skipgen", action="store_true", help="reuse the previously generated code")
    p.add_argument("--skipsim", action="store_true", help="generate and build, but do not run")
    p.add_argument("--gen-dir", default=None, help="where to generate (default DeeployTest/TEST_<PLATFORM>/<test>)")
    p.add_argument("--keep-failed", action="store_true", help="keep the generated code when its build fails")
    add_loop_flags(p)
    return p


def resolve_test_dir(arg: str) -> Path:
    """A test folder given absolutely, relative to the working directory or to DeeployTest/."""
    for candidate in (Path(arg), Path.cwd() / arg, DEEPLOY_TEST / arg):
        if (candidate / "network.onnx").is_file():
            return candidate.resolve()
    error = DeeployError(f"test folder '{arg}' not found: give a folder holding network.onnx (absolute, or relative "
                         "to here or to DeeployTest/)")
    error.details = f"looked for network.onnx in {arg}, relative to {Path.cwd()} and to {DEEPLOY_TEST}"
    raise error


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


def _in_runner_area(path: Path) -> bool:
    """A folder below DeeployTest/TEST_<...>/, where the runners generate by default."""
    return path.is_relative_to(DEEPLOY_TEST) and path.relative_to(DEEPLOY_TEST).parts[:1] != () and \
        path.relative_to(DEEPLOY_TEST).parts[0].startswith("TEST_")


def _generate(test_dir: Path, rp: RunnerPlatform, stage: Path, log, compile_options: dict | None):
    """Compile the test network and write its harness into ``stage``; every check of the test's
    files (shapes, names, sizes) happens before anything is written."""
    graph = load_onnx(test_dir / "network.onnx")
    inputs = map_arrays(test_dir / "inputs.npz", load_npz_arrays(test_dir / "inputs.npz"),
                        graph.inputs, graph, "input")
    write_testbench = testbench_writer(graph, inputs, test_dir / "outputs.npz", runs=rp.harness_runs,
                                       section=rp.target.reference_section, tolerance=rp.harness_tolerance)
    assign_input_types(graph, inputs)
    result = compile_graph(graph, rp.platform, stage / "network", snapshot_dir=stage / "deeployStates",
                           log=log, **(compile_options or {}))
    for note in result.notes:
        print("note:", note)
    write_testbench(result.graph, stage / "network")   # as deeploy compile --emit-testbench
    return result


def _build(test_dir: Path, gen: Path, args: argparse.Namespace, rp: RunnerPlatform, owned: bool) -> Path:
    """Configure and build the generated test; the path of the test program (``owned``: ``gen``
    is wholly the runner's, see ``check_build_dir``)."""
    build_dir = gen / "build"

    def check(proc: subprocess.CompletedProcess, what: str) -> None:
        if proc.returncode:
            output = proc.stdout + proc.stderr
            explained = rp.runner.explain_build_error(output)
            fatal = re.search(r"CMake Error at [^\n]*\(message\):\n((?:[ \t]+\S[^\n]*\n?)+)", output)
            if explained or fatal:
                raise BuildError(explained or " ".join(fatal.group(1).split()))
            tail = "\n".join(output.strip().splitlines()[-25:])
            raise BuildError(f"{what} failed for {test_dir}:\n{tail}")

    # the compiled output's own CMake project, as users build it, in a fresh tree configured against
    # the cached platform build (testUtils/cmake_cache.py)
    configure_and_build(build_dir, rp.target.cmake_platform, rp.runner.build_options(args, gen), gen,
                        lambda cmd, what: _run(cmd, what, args.verbose), check, source_dir=gen / "network",
                        owned=owned)
    return build_dir / "deeploy_test"


def run_test(args: argparse.Namespace, rp: RunnerPlatform, compile_options: dict | None = None) -> int:
    """Generate (unless ``--skipgen``), build and run one test; 0 if every output matches.

    A generation or build that fails leaves nothing of its attempt in the generated folder (the
    previous generation stays if the failure came before the new one was complete); once built,
    the generated code stays, whatever the run gives. Runs of the same generated folder take turns."""
    test_dir = resolve_test_dir(args.test)
    gen = Path(args.gen_dir).resolve() if args.gen_dir else gen_dir_for(test_dir, rp.gen_root)
    record = source_record(test_dir, rp.platform, compile_options)
    owned = not args.gen_dir or _in_runner_area(gen)
    result = None                      # the compile result (none with --skipgen)
    with claimed(gen) as created:      # another run of this folder finishes first
        check_build_dir(gen / "build", owned)
        if args.skipgen:
            check_reusable(gen, record)
            binary = _build(test_dir, gen, args, rp, owned)
        else:
            start = time.perf_counter()
            attempt = Generation(gen, created, owned)
            try:
                result = _generate(test_dir, rp, attempt.stage, print if args.verbose else None, compile_options)
                attempt.install(record)
                rp.runner.after_compile(result, args, gen)
                s = result.summary
                print(f"Compiled {test_dir.name} for {rp.platform} in {time.perf_counter() - start:.2f} s: "
                      f"{s.layers} layers, constants {s.const_bytes} B, arena {s.arena_size} B "
                      f"(lower bound {s.lower_bound} B)")
                binary = _build(test_dir, gen, args, rp, owned)
            except BaseException:
                if not (getattr(args, "keep_failed", False) and attempt.installed):
                    attempt.discard()
                raise
        print(code_line(binary, network_library(binary.parent)))
        manifest = read_manifest(gen / "network")
        print(memory_line(manifest))
        print(engine_line(manifest))
        if args.skipsim:
            print("Built", binary)
            return 0

        code, output = rp.runner.execute(binary, args, gen, getattr(args, "timeout", None) or rp.runner.timeout,
                                         result)
    print(output, end="" if output.endswith("\n") or not output else "\n")
    return testbench_status(code, output)


def main(rp: RunnerPlatform, description: str, extra_args: Callable[[argparse.ArgumentParser], None] | None = None,
         compile_options: Callable[[argparse.Namespace], dict] | None = None) -> None:
    parser = base_parser(description)
    if extra_args:
        extra_args(parser)
    args = parser.parse_args()
    raise_on_interrupt()
    try:
        options = dict(compile_options(args) if compile_options else {})
        if loop_rolling_options(args) is not None:
            options["loop_rolling"] = loop_rolling_options(args)
        code = run_test(args, rp, options or None)
    except DeeployError as exc:
        print(error_text(exc, args.verbose), file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        code = 130
    sys.exit(code)
