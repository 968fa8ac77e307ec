"""One sweep point: compile the network with the point's flags and a testbench (as ``deeploy
compile --emit-testbench``), build it and run it (as ``deeploy run``), then read its modelled
cycles and profile split (``profile.json`` of the run), memory peaks per level (the memory plan)
and code size (the network library's sections).

``run_isolated`` runs a point in a process of its own (``python -m Deeploy.sweep.point``), so a
crash or a hang of one point is recorded as such and ends nothing else; every backend runs points
through it."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

from Deeploy import __version__
from Deeploy.errors import DeeployError
from Deeploy.sweep.config import Point

__all__ = ["RESULT_FIELDS", "run_point", "run_isolated", "failed_record", "stop_running"]

# the measured columns of a record, after its point's columns (``store.py``)
RESULT_FIELDS = ("status", "error", "cycles", "compute", "exposed_dma", "dma_issue", "dma_wait", "overhead",
                 "peak_L1", "peak_L2", "peak_L3", "code_text", "code_rodata", "code_data",
                 "compile_s", "build_s", "run_s")
_SPLIT = ("cycles", "compute", "exposed_dma", "dma_issue", "dma_wait", "overhead")
_RECORD = "record.json"
_running: set[int] = set()   # process groups of the points this process runs


def _base(point: Point) -> dict:
    return {"key": point.key, "network": point.network, "platform": point.platform, "flags": dict(point.flags),
            "model": point.model, "version": __version__}


def failed_record(point: Point, status: str, error: str) -> dict:
    """The record of a point that ended without results: ``status`` fail, timeout, crash or lost."""
    return {**_base(point), "status": status, "error": " ".join(error.split())}


def run_point(point: Point, work: Path, timeout: float) -> dict:
    """Compile, build and run ``point`` in the folder ``work`` (``work/network``: the compiled
    output, ``work/build``: its build); its record. A user-level failure (a ``DeeployError``)
    is recorded with its error line; anything else raises."""
    from Deeploy.analysis.sizes import level_peaks, network_library, section_sizes
    from Deeploy.arguments import compile_options
    from Deeploy.codegen.testbench import testbench_writer
    from Deeploy.compiler import compile_graph
    from Deeploy.frontend import assign_input_types, load_npz_arrays, load_onnx, map_arrays
    from Deeploy.run import build_output, testbench_status
    from Deeploy.sweep.config import flag_parser
    from Deeploy.targets import get_platform, runner_of

    start = time.monotonic()
    record = _base(point)
    try:
        options = compile_options(flag_parser().parse_args(point.argv()))
        model = Path(point.model)
        graph = load_onnx(model)
        inputs = map_arrays(model.with_name("inputs.npz"), load_npz_arrays(model.with_name("inputs.npz")),
                            graph.inputs, graph, "input")
        testbench = testbench_writer(graph, inputs, model.with_name("outputs.npz"),
                                     section=get_platform(point.platform).reference_section)
        assign_input_types(graph, inputs)
        result = compile_graph(graph, point.platform, work / "network", source=model.name, extra_files=testbench,
                               **options)
        record["compile_s"] = round(time.monotonic() - start, 3)
        record.update({f"peak_{level}": size for level, size in level_peaks(result.manifest).items()})
        program = build_output(work / "network", work / "build")
        record["build_s"] = round(time.monotonic() - start - record["compile_s"], 3)
        library = network_library(program.parent)
        sizes = section_sizes(library if library is not None else program)
        record.update(code_text=sizes.text, code_rodata=sizes.rodata, code_data=sizes.data)
        ran = time.monotonic()
        remaining = max(timeout - (ran - start), 1.0)
        code, output = runner_of(point.platform).execute(program, argparse.Namespace(profileUntiled=True), work,
                                                         remaining, result)
        record["run_s"] = round(time.monotonic() - ran, 3)
        profile = work / "profile.json"
        if profile.is_file():
            data = json.loads(profile.read_text())
            record.update({k: round(data[k], 1) for k in _SPLIT})
        if testbench_status(code, output):
            errors = [line for line in output.splitlines() if line.startswith("Errors:")]
            raise DeeployError(f"outputs differ from outputs.npz ({errors[-1]})" if errors else
                               f"the program ended (exit code {code}) without reporting results")
        record.update(status="ok", error="")
    except DeeployError as exc:
        record.update(status="fail", error=" ".join(str(exc).split()))
    return record


def run_isolated(point: Point, timeout: float, work_root: str | Path | None = None) -> dict:
    """``run_point`` in a new process (and process group) in a temporary folder below
    ``work_root`` (default: the system's), removed afterwards; killed after ``timeout`` seconds.
    Never raises: a crash, a timeout or an internal error is the record's status and error."""
    if work_root is not None:
        Path(work_root).mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"point-{point.key[:12]}-", dir=work_root))
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    cmd = [sys.executable, "-m", "Deeploy.sweep.point", json.dumps(point.to_json()), str(work), str(timeout)]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                                start_new_session=True)
        _running.add(proc.pid)
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return failed_record(point, "timeout", f"timed out after {timeout:.0f} s (config key timeout)")
        finally:
            _running.discard(proc.pid)
        if (work / _RECORD).is_file():
            return json.loads((work / _RECORD).read_text())
        lines = err.strip().splitlines()
        why = f"signal {-proc.returncode}" if proc.returncode < 0 else f"exit code {proc.returncode}"
        return failed_record(point, "crash", f"the point's process ended ({why})" +
                             (f": {lines[-1]}" if lines else ""))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def stop_running() -> None:
    """Kill the points this process runs (an interrupted sweep)."""
    for group in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def _die_with_parent(work: Path) -> None:
    """Linux: when the process that started this one dies (e.g. a killed Ray worker), this one
    ends its process group and removes its folder."""
    if not sys.platform.startswith("linux"):
        return

    def end(*_) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.killpg(os.getpgrp(), signal.SIGTERM)
        shutil.rmtree(work, ignore_errors=True)
        os._exit(1)

    import ctypes
    signal.signal(signal.SIGTERM, end)
    ctypes.CDLL(None).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG


def _main(argv: list[str]) -> int:
    point, work, timeout = Point.from_json(json.loads(argv[0])), Path(argv[1]), float(argv[2])
    _die_with_parent(work)
    try:
        record = run_point(point, work, timeout)
    except Exception as exc:   # a compiler defect: recorded with where it happened
        where = traceback.extract_tb(exc.__traceback__)[-1]
        record = failed_record(point, "crash", f"internal error {type(exc).__name__}: {exc} "
                                               f"({Path(where.filename).name}:{where.lineno})")
    (work / _RECORD).write_text(json.dumps(record))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
