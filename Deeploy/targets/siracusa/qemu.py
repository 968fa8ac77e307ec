"""Run a Siracusa ELF on the QEMU virtual platform, with the timing plugin, under a timeout.

    from Deeploy.targets.siracusa.qemu import run_elf
    code, stdout, records = run_elf("build/deeploy_test")          # -smp from the ELF
    from Deeploy.targets.siracusa.timing import model_cycles
    print(model_cycles(records).summary())

The QEMU command line is the one of ``specs/qemu-riscv.md``: ``-machine virt -smp N -bios none
-kernel ELF``, semihosting through ``-chardev stdio`` (program output on stdout, exit code =
the program's ``exit(n)``), ``-icount shift=0,sleep=off`` (deterministic). The memory regions
(for ``-m`` and the plugin's region arguments), the number of cores the ELF was built for and the
address ranges of the runtime's PULP-extension emulator (which the plugin does not count) are read
from its symbol table (``__deeploy_region_<NAME>_start/_end``, ``__deeploy_num_cores``,
``__start_/__stop_deeploy_xpulp_text/_mem``, defined by the generated linker script and the runtime).

QEMU runs a derived image (``<elf>.stubs``) in which the PULP words are rewritten into RV32IM
stubs (:mod:`Deeploy.targets.pulp.stubs`, tens of times faster than the trap path); the plugin gets its
site table (``<elf>.sites``). ``stubs=False`` or ``DEEPLOY_XPULP_STUBS=0`` runs the ELF itself,
every PULP word through the runtime's trap-and-emulate; both give the same results and counts.

A build with harts beyond its cores
(Snitch's data mover) defines ``__deeploy_num_harts`` (QEMU's ``-smp``); one with a banked L1 of its
own geometry (MemPool, Snitch: cmake/VirtCluster.cmake) ``__deeploy_l1_banks``,
``__deeploy_l1_bank_bytes``, ``__deeploy_banks_per_tile``, ``__deeploy_cores_per_tile`` and
``__deeploy_tiles_per_group``: the plugin then classifies L1 accesses by tile and group and
reports each fork phase's busiest bank (``l1map``; the core stacks are tile-local).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple, Sequence

from Deeploy.elf import sections as elf_sections
from Deeploy.elf import symbols as elf_symbols
from Deeploy.errors import BuildError, DeeployError
from Deeploy.resources import timing_plugin
from Deeploy.targets.pulp.stubs import SCRATCH, STUB_SECTION, rewrite, stubs_enabled
from Deeploy.targets.siracusa.linker import qemu_ram_bytes

__all__ = ["QEMU", "RunResult", "elf_symbols", "elf_regions", "qemu_command", "run_elf"]

QEMU = "qemu-system-riscv32"
MAX_HARTS = 512                   # QEMU virt's limit (and the timing plugin's)
_INSTALL = ("install it (Debian: apt-get install qemu-system-misc; in a checkout "
            "`bash toolchain/install.sh` installs everything)")


# the runtime's PULP-extension emulator (deeploy_xpulp_emu.c): its code and its access helpers, whose
# bounds the plugin gets from the ELF's __start_/__stop_ symbols (plugin arguments emu=, emu_mem=)
_EMULATOR_SECTIONS = (("emu", "deeploy_xpulp_text"), ("emu_mem", "deeploy_xpulp_mem"))


class RunResult(NamedTuple):
    exit_code: int           # the program's exit(n) (QEMU exits with n)
    stdout: str              # the program's output (semihosting)
    records: Path | None     # the timing plugin's record file (None without the plugin)


def elf_regions(elf: str | Path, symbols: dict[str, int] | None = None) -> list[tuple[str, int, int]]:
    """(name, base, size) of the memory regions the linker script defined, in address order."""
    syms = symbols if symbols is not None else elf_symbols(elf)
    regions = []
    for name, value in syms.items():
        if name.startswith("__deeploy_region_") and name.endswith("_start"):
            level = name[len("__deeploy_region_"):-len("_start")]
            end = syms.get(f"__deeploy_region_{level}_end")
            if end is not None:
                regions.append((level, value, (end - value) & 0xFFFFFFFF or 1 << 32))
    if not regions:
        raise DeeployError(f"{elf}: no __deeploy_region_* symbols: not linked with the Siracusa linker script")
    return sorted(regions, key=lambda r: r[1])


def _section_names(elf: Path) -> set[str]:
    return {s.name for s in elf_sections(elf.read_bytes())}


def _l1map(syms: dict[str, int]) -> list[str]:
    """The plugin's ``l1map`` argument of a runtime with a hierarchical L1 (none without one)."""
    keys = ("__deeploy_num_cores", "__deeploy_l1_banks", "__deeploy_l1_bank_bytes", "__deeploy_banks_per_tile",
            "__deeploy_cores_per_tile", "__deeploy_tiles_per_group")
    if not all(k in syms for k in keys):
        return []
    stacks = syms["__deeploy_stacks_start"]
    end = stacks + syms["__deeploy_main_stack_size"] + (syms["__deeploy_max_harts"] - 1) * syms["__deeploy_worker_stack_size"]
    return ["l1map=" + ":".join(str(syms[k]) for k in keys) + f":0x{stacks:x}:0x{end:x}"]


def qemu_command(elf: str | Path, num_cores: int, memory_bytes: int, plugin_args: str | None = None,
                 extra_args: Sequence[str] = ()) -> list[str]:
    cmd = [QEMU, "-machine", "virt", "-smp", str(num_cores), "-m", f"{-(-memory_bytes // (1 << 20))}M",
           "-bios", "none", "-kernel", str(elf), "-display", "none", "-serial", "none", "-monitor", "none",
           "-chardev", "stdio,id=c0,signal=off", "-semihosting-config", "enable=on,target=native,chardev=c0,arg=deeploy",
           "-icount", "shift=0,sleep=off"]
    if plugin_args is not None:
        cmd += ["-plugin", plugin_args]
    return cmd + list(extra_args)


def _stub_image(elf: Path) -> tuple[Path, list[str]]:
    """Write the rewritten image and its site table beside ``elf``: (image, plugin arguments);
    ``elf`` itself if it has no PULP word to rewrite."""
    done = rewrite(elf)
    if not done.sites:
        return elf, []
    image, sites = elf.with_name(elf.name + ".stubs"), elf.with_name(elf.name + ".sites")
    table = "".join(f"0x{a:x} 0x{w:08x} 0x{done.chains.get(a, 0):x}\n" for a, w in done.sites.items()).encode()
    for path, content in ((sites, table), (image, done.image)):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(content)
        tmp.replace(path)
    return image, [f"sites={sites}", f"stubs=0x{done.stubs[0]:x}:0x{done.stubs[1]:x}"]


def run_elf(elf: str | Path, num_cores: int | None = None, *, timeout: float = 120.0, plugin: bool = True,
            records: str | Path | None = None, extra_args: Sequence[str] = (),
            stubs: bool | None = None) -> RunResult:
    """Run ``elf`` under QEMU with ``-smp num_cores`` (default: the cores it was built for), plus
    the harts it has beyond its cores (``__deeploy_num_harts``: a data mover).

    With ``plugin`` the timing plugin writes its records to ``records`` (default
    ``<elf>.records.txt`` beside the ELF). ``stubs`` (default: on unless DEEPLOY_XPULP_STUBS=0)
    runs the image with the PULP words rewritten into stubs, if the ELF reserves room for them.
    Raises :class:`BuildError` if QEMU or the plugin is missing, QEMU cannot start, or the run
    exceeds ``timeout`` seconds (QEMU is then killed).
    """
    elf = Path(elf).resolve()
    if not elf.is_file():
        raise BuildError(f"{elf}: no such ELF file")
    if shutil.which(QEMU) is None:
        raise BuildError(f"{QEMU} is not installed: {_INSTALL}")
    syms = elf_symbols(elf)
    built = syms.get("__deeploy_num_cores")
    if num_cores is None:
        if built is None:
            raise BuildError(f"{elf}: no __deeploy_num_cores symbol: give num_cores")
        num_cores = built
    if not 1 <= num_cores <= MAX_HARTS:
        raise BuildError(f"num_cores must be 1..{MAX_HARTS} (got {num_cores})")
    if built is not None and built > num_cores:
        raise BuildError(f"{elf} was built for {built} cores (NUM_CORES) but would run with -smp {num_cores}: "
                         f"its forks would wait forever for the missing harts")
    regions = elf_regions(elf, syms)
    memory = qemu_ram_bytes(max(base + size for _, base, size in regions))
    plugin_args = None
    rec_path = None
    image, stub_args = elf, []
    # the stubs need the PULP emulation's runtime (platforms whose cores have the extension)
    if (stubs_enabled() if stubs is None else stubs) and SCRATCH in syms and STUB_SECTION in _section_names(elf):
        image, stub_args = _stub_image(elf)
    if plugin:
        plugin_path = timing_plugin()
        rec_path = Path(records).resolve() if records is not None else elf.with_name(elf.name + ".records.txt")
        rec_path.parent.mkdir(parents=True, exist_ok=True)
        rec_path.unlink(missing_ok=True)          # never mistake an old file for this run's
        if "," in str(rec_path):
            raise BuildError(f"record file path must not contain ',' (QEMU option syntax): {rec_path}")
        plugin_args = ",".join([str(plugin_path), f"out={rec_path}"] +
                               [f"region={name}:0x{base:x}:0x{size:x}" for name, base, size in regions] +
                               [f"{arg}=0x{syms[f'__start_{sec}']:x}:0x{syms[f'__stop_{sec}']:x}"
                                for arg, sec in _EMULATOR_SECTIONS if f"__start_{sec}" in syms] +
                               stub_args + _l1map(syms))
        if "," in "".join(stub_args):
            raise BuildError(f"ELF path must not contain ',' (QEMU option syntax): {elf}")
    extra_harts = syms["__deeploy_num_harts"] - built if "__deeploy_num_harts" in syms and built is not None else 0
    cmd = qemu_command(image, num_cores + extra_harts, memory, plugin_args, extra_args)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        raise BuildError(f"QEMU run of {elf.name} (-smp {num_cores + extra_harts}) timed out after {timeout:.0f} s; "
                         f"output so far: {out[-500:]!r}") from None
    if proc.returncode and f"{QEMU}:" in proc.stderr and not proc.stdout:
        raise BuildError(f"QEMU failed to run {elf.name}: {proc.stderr.strip()}")
    if plugin and not rec_path.is_file():
        raise BuildError(f"the timing plugin wrote no records ({rec_path}); QEMU said: {proc.stderr.strip()}")
    return RunResult(proc.returncode, proc.stdout, rec_path)
