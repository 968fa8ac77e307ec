"""How a CortexM program is built, launched and read back (``TargetRunner``): the build for the
chosen core (``--cpu``), the run on its QEMU board with semihosting (output and exit code), and
the modelled cycles of the run (``cycles.py``). ``deeploy run`` and the test runner use it."""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
from pathlib import Path

from Deeploy.elf import symbols as elf_symbols
from Deeploy.errors import BuildError, DeeployError
from Deeploy.manifest import read_manifest
from Deeploy.platform import TargetRunner
from Deeploy.resources import timing_plugin
from Deeploy.runtime.abi import LAYER_BASE
from Deeploy.targets.cortexm.cycles import M4_TIMING, last_run, read_records
from Deeploy.targets.cortexm.platform import BOARDS, QEMU, Board, qemu_command

__all__ = ["RUNNER", "QEMU", "board_of", "cpu_name", "qemu_command", "run_elf"]

_INSTALL = ("install it (Debian: apt-get install qemu-system-arm gcc-arm-none-eabi picolibc-arm-none-eabi; "
            "in a checkout `bash toolchain/install.sh` installs everything)")


def cpu_name(text: str) -> str:
    """argparse type of --cpu: a core of ``BOARDS``."""
    cpu = text.lower()
    if cpu not in BOARDS:
        raise argparse.ArgumentTypeError(f"'{text}' is not a supported core: use {' or '.join(BOARDS)}")
    return cpu


def board_of(elf: Path) -> Board:
    """The board ``elf`` was linked for, by its SRAM base (``__ram`` of the linker script)."""
    ram = elf_symbols(elf).get("__ram")
    for board in BOARDS.values():
        if board.ram[0] == ram:
            return board
    raise DeeployError(f"{elf}: not linked with a CortexM linker script (no known __ram symbol)")


def run_elf(elf: Path, timeout: float, records: Path | None = None) -> tuple[int, str]:
    """Run ``elf`` on its board: (exit code, output); with ``records``, the instruction-class
    counter writes its records there."""
    if shutil.which(QEMU) is None:
        raise BuildError(f"{QEMU} is not installed: {_INSTALL}")
    elf = Path(elf).resolve()
    plugin_args = None
    if records is not None:
        records.unlink(missing_ok=True)          # never mistake an old file for this run's
        if "," in str(records):
            raise BuildError(f"record file path must not contain ',' (QEMU option syntax): {records}")
        plugin_args = f"{timing_plugin(name='deeploy_arm_timing')},out={records}"
    try:
        proc = subprocess.run(qemu_command(elf, board_of(elf), plugin_args), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BuildError(f"QEMU run of {elf.name} timed out after {timeout:.0f} s") from None
    if proc.returncode and f"{QEMU}:" in proc.stderr and not proc.stdout:
        raise BuildError(f"QEMU failed to run {elf.name}: {proc.stderr.strip()}")
    return proc.returncode, proc.stdout


def _build_options(options: argparse.Namespace, gen: Path) -> list[str]:
    """The core (--cpu); without one the compiled output's link.ld names it."""
    cpu = getattr(options, "cpu", None)
    return [f"-DCORTEXM_CPU={cpu}"] if cpu else []


def _execute(program: Path, options: argparse.Namespace, gen: Path | None, timeout: float,
             compiled=None) -> tuple[int, str]:
    """The run, then the last network run's modelled cycles (``Runtime: N cycles``) and with
    --profileUntiled every layer's."""
    records = Path(program).resolve().with_name("records.txt")
    code, out = run_elf(program, timeout, records)
    if "Errors:" not in out or not records.is_file():
        return code, out
    layers = last_run(read_records(records), M4_TIMING)
    out += ("" if out.endswith("\n") else "\n") + f"Runtime: {sum(c.cycles for c in layers):.0f} cycles\n"
    if getattr(options, "profileUntiled", False) and layers:
        manifest = read_manifest(gen / "network" if gen is not None else Path(program).resolve().parents[1])
        out += "Per-layer modelled cycles:\n"
        for c in layers:
            info = manifest.layer_of_marker(LAYER_BASE + c.layer)
            out += (f"  [{c.layer:3d}] {info.title if info else f'layer {c.layer}'}: {c.cycles:.0f} cycles, "
                    f"{c.counts['insns']} instructions\n")
    return code, out


_OVERFLOW = re.compile(r"region [`'](flash|ram)' overflowed by (\d+) bytes")


def explain_build_error(output: str) -> str | None:
    """One line for ld's overflow of the board's flash or SRAM, or None."""
    over = _OVERFLOW.findall(output)
    if not over:
        return None
    region, n = max(over, key=lambda m: int(m[1]))
    what = {"flash": "code, constants and the testbench's reference data",
            "ram": "the activations, inputs, outputs, data and the stack"}[region]
    hint = "use a smaller network" + (" or a larger --sram (up to the board's)" if region == "ram" else "")
    return (f"network does not fit the board's {'flash' if region == 'flash' else 'SRAM'}: over by {n} bytes; "
            f"it holds {what}; {hint}")


RUNNER = TargetRunner(build_options=_build_options, execute=_execute, explain_build_error=explain_build_error,
                      timeout=300.0)
