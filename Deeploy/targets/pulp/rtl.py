"""Run a single-core RV32 ELF on the CV32E40P reference core: its RTL (``pythondata-cpu-cv32e40p``)
simulated cycle-accurately by Verilator, with COREV_PULP=1 and FPU=1, on a zero-wait memory
(``toolchain/rtl/``; ``toolchain/install.sh`` builds it into ``toolchain/build/rtl/``).

    from Deeploy.targets.pulp.rtl import run_rtl
    run = run_rtl("prog.elf")        # linked with toolchain/rtl/crt0.S and link.ld
    run.exit_code, run.counters["cycles"], run.counters["ld_stall"]

A program reports its measured region by printing ``rtl <counter> <value>`` lines (the
calibration programs' ``benchmarks/fidelity/bench.h`` does): ``cycles`` (mcycle), ``instret``
(minstret) and the core's events (``docs/source/perf_counters.rst`` of the wheel, counted by
mhpmcounter3..16, which ``crt0.S`` sets to events 2..15): ``ld_stall`` (load-use hazards),
``jmp_stall`` (jump register hazards), ``imiss`` (cycles waiting for fetches), ``ld``, ``st``,
``jump``, ``branch``, ``branch_taken``, ``comp_instr``, ``pipe_stall``, ``apu_type``,
``apu_cont``, ``apu_dep`` (FPU result dependency stalls), ``apu_wb``.

The FPU latency is a build parameter (``FPU_ADDMUL_LAT``, ``FPU_OTHERS_LAT``): 0/0 is the core's
default and the configuration the Siracusa model uses (single-cycle FP operations, as GVSoC's
cluster FPUs, ``specs/pulp-core.md``); other builds: ``bash toolchain/rtl/build.sh A O``.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import NamedTuple

from Deeploy.errors import BuildError
from Deeploy.resources import toolchain_dir

__all__ = ["RtlRun", "rtl_simulator", "run_rtl", "rtl_sources"]

_COUNTER = re.compile(r"^rtl (\w+) (\d+)$", re.M)


class RtlRun(NamedTuple):
    exit_code: int              # main's return value (0x80 | mcause after a trap; 124: max cycles)
    stdout: str                 # what the program printed
    sim_cycles: int             # cycles from reset to the end of the run
    counters: dict[str, int]    # the "rtl <counter> <value>" lines of the measured region

    @property
    def passed(self) -> bool:
        """The program exited 0 and reported that its own check passed."""
        return self.exit_code == 0 and "rtl check pass" in self.stdout


def rtl_sources() -> Path:
    """``toolchain/rtl/``: the testbench, start-up code and linker script."""
    return toolchain_dir() / "rtl"


def rtl_simulator(fpu_addmul_lat: int = 0, fpu_others_lat: int = 0) -> Path:
    """The simulator binary of that FPU configuration; BuildError if it is not built."""
    sim = toolchain_dir() / "build" / "rtl" / f"lat{fpu_addmul_lat}_{fpu_others_lat}" / "cv32e40p_sim"
    if not sim.is_file():
        raise BuildError(f"the CV32E40P simulator is not built ({sim}): run `bash toolchain/install.sh` "
                         f"(or `bash toolchain/rtl/build.sh {fpu_addmul_lat} {fpu_others_lat}`)")
    return sim


def run_rtl(elf: str | Path, *, fpu_addmul_lat: int = 0, fpu_others_lat: int = 0, max_cycles: int = 20_000_000,
            timeout: float = 120.0) -> RtlRun:
    """Run ``elf`` to its end on the simulator; BuildError if it cannot run or takes too long."""
    elf = Path(elf)
    if not elf.is_file():
        raise BuildError(f"{elf}: no such ELF file")
    cmd = [str(rtl_simulator(fpu_addmul_lat, fpu_others_lat)), "--max-cycles", str(max_cycles), str(elf)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise BuildError(f"RTL run of {elf.name} timed out after {timeout:.0f} s") from None
    found = re.search(r"^sim cycles (\d+)$", proc.stderr, re.M)
    if found is None:
        raise BuildError(f"RTL run of {elf.name} failed: {proc.stderr.strip()[-500:]}")
    counters = {name: int(value) for name, value in _COUNTER.findall(proc.stdout)}
    return RtlRun(proc.returncode, proc.stdout, int(found.group(1)), counters)
