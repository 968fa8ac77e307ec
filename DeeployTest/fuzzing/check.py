"""Checking a batch of random graphs: goldens from the reference interpreter (and onnxruntime for
the standard ops, bit-exactly), then the compiled C of a test runner must reproduce them."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
from pathlib import Path

from Deeploy.errors import DeeployError, TilingError
from Deeploy.tiling.network import TilingOptions
from DeeployTest.fuzzing.graphs import FuzzBatch
from DeeployTest.generators.golden import write_test
from DeeployTest.testUtils.runner import RunnerPlatform, run_test

__all__ = ["write_batch", "run_batch", "run_tiled_batch", "run_zero_sized", "fuzz_count"]


def fuzz_count(default: int) -> int:
    """Number of random graphs of the long run: ``DEEPLOY_FUZZ_GRAPHS`` or ``default``."""
    value = os.environ.get("DEEPLOY_FUZZ_GRAPHS", "")
    return int(value) if value.strip() else default


def write_batch(batch: FuzzBatch, folder: Path) -> dict:
    """``folder/test``: network.onnx, inputs.npz and outputs.npz of the batch. ``write_test``
    re-reads the file with the compiler's frontend and interprets it, checks every standard node
    against onnxruntime and, when all nodes are standard, takes onnxruntime's outputs of the
    whole model as the goldens."""
    shutil.rmtree(folder / "test", ignore_errors=True)
    return write_test(batch.net, folder / "test")


def run_batch(batch: FuzzBatch, folder: Path, rp: RunnerPlatform, options: dict | None = None,
              **flags) -> str:
    """Build and run the batch written by ``write_batch`` into ``folder`` with runner ``rp``
    (generating into ``folder/gen``); returns the runner's output and fails (with
    the graphs' description) unless every output element matches its golden."""
    args = argparse.Namespace(test=str(folder / "test"), verbose=False, skipgen=False, skipsim=False,
                              gen_dir=str(folder / "gen"), timeout=None, **flags)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = run_test(args, rp, options)
    text = out.getvalue()
    assert code == 0 and "Errors: 0 out of" in text, f"{batch!r}\n{text}"
    return text


def run_tiled_batch(batch: FuzzBatch, folder: Path, rp: RunnerPlatform, l1: int, cores: int,
                    level: str = "L2", double_buffer: bool = False) -> str:
    """Tiled run with ``--l1 l1`` (``--defaultMemLevel level``, ``--doublebuffer``). If some layer
    cannot be tiled that small, the error must say so with the smallest L1 that fits, and the run
    must then pass with exactly that L1."""
    flags = dict(cores=cores, l1=l1, l2=None, defaultMemLevel=level, doublebuffer=double_buffer,
                 profileTiling=False, plotMemAlloc=False, profileUntiled=False)

    def options(size: int) -> dict:
        return {"cores": cores, "tiling": TilingOptions(l1=size, default_level=level, double_buffer=double_buffer)}

    try:
        return run_batch(batch, folder, rp, options(l1), **flags)
    except TilingError as exc:
        assert exc.min_bytes and exc.min_bytes > l1, f"{batch!r}\ntiling error without a usable L1: {exc}"
        assert "\n" not in str(exc).strip(), f"tiling error on several lines: {exc}"
        smallest = exc.min_bytes
    flags["l1"] = smallest
    try:
        return run_batch(batch, folder, rp, options(smallest), **flags)
    except DeeployError as exc:
        raise AssertionError(f"{batch!r}\n--l1 {smallest}, the smallest the tiler asked for, fails: {exc}") from None


def run_zero_sized(batch: FuzzBatch, folder: Path, rp: RunnerPlatform) -> str:
    """A graph with an empty tensor either builds, runs and matches its goldens, or is rejected by
    the compiler with one error line about the empty tensor, leaving no generated folder."""
    try:
        return run_batch(batch, folder, rp)
    except DeeployError as exc:
        message = str(exc).strip()
        assert "\n" not in message and ("empty" in message or "zero" in message), \
            f"{batch!r}\nunclear rejection of a zero-sized tensor: {message}"
        assert not (folder / "gen" / "network").exists(), f"{batch!r}\nhalf-written output after: {message}"
        return message
