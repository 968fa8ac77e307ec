"""Run a built Siracusa program under QEMU with the timing plugin and append the modelled cycles
of its last network run (``Runtime: N cycles``) to its output; used by ``deeploy run`` and the
test runners. ``DEEPLOY_TIMING_MODEL=v1`` selects the cycle model without instruction classes and
contention (``timing.TIMING_V1``) instead of the platform's."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

from Deeploy.targets.siracusa.qemu import run_elf
from Deeploy.errors import DeeployError
from Deeploy.targets.siracusa.timing import TIMING_MODELS, TimingModel, TimingResult, model_cycles

__all__ = ["ProgramRun", "run_program", "last_run"]


class ProgramRun(NamedTuple):
    exit_code: int
    output: str                       # the program's output, then the modelled cycles
    timing: TimingResult | None       # the last network run's layers (None: no results reported)


def last_run(result: TimingResult) -> TimingResult:
    """The layers of the last ``RunNetwork()`` call only: a testbench may run the network several
    times (checking every run's outputs) and each run starts again with its first layer, after a
    gap (a rolled region repeats its first layer within a run, without a gap)."""
    if not result.layers:
        return result
    first, layers = result.layers[0].layer, result.layers
    start = [k for k, lt in enumerate(layers) if lt.layer == first
             and (k == 0 or layers[k - 1].start + layers[k - 1].cycles < lt.start - 0.5)][-1]
    return replace(result, layers=result.layers[start:])


def run_program(elf: Path, timing: TimingModel, cores: int | None = None, *, timeout: float = 600.0,
                records: Path | None = None) -> ProgramRun:
    """Run ``elf`` on ``cores`` harts (default: the cores it was built for) and model its cycles."""
    choice = os.environ.get("DEEPLOY_TIMING_MODEL", "")
    if choice == "v1":
        timing = TIMING_MODELS["v1"]
    elif choice not in ("", "v2"):
        raise DeeployError(f"DEEPLOY_TIMING_MODEL={choice!r}: expected v1 or v2 (the default)")
    run = run_elf(elf, cores, timeout=timeout, records=records)
    out = run.stdout
    result = None
    if run.records is not None and "Errors:" in out:
        result = last_run(model_cycles(run.records, timing))
        network = sum(layer.cycles for layer in result.layers)
        out += ("" if out.endswith("\n") else "\n") + f"Runtime: {network:.0f} cycles\n"
    return ProgramRun(run.exit_code, out, result)
