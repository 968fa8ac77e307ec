"""Cortex-M: one Arm Cortex-M core on QEMU's Arm boards (specs/cortexm.md): the Cortex-M4 (DSP
extension, FPv4-SP) on mps2-an386 by default, the Cortex-M55 (Helium) on mps3-an547 (``configure``:
``--cpu``; ``--sram`` budgets its SRAM). Code and constants live in the board's flash, the
activations (one arena), inputs and outputs in its SRAM. The kernels and passes are Siracusa's
(Generic plus the portable channels-last and requantised kernels of Siracusa, run on one core),
whose int8 convolutions take Arm's DSP extension (SMLAD, SXTB16) where the compiler targets it."""

from __future__ import annotations

from dataclasses import dataclass, replace

from Deeploy.errors import DeeployError
from Deeploy.passes.fc_weights import transpose_fc_weights
from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
from Deeploy.targets.siracusa.platform import SIRACUSA_PASSES

__all__ = ["Board", "BOARDS", "CORTEX_M4", "CORTEX_M55", "CORTEXM", "PLATFORM", "QEMU", "STACK_BYTES", "configure",
           "linker_script", "qemu_command", "sram_check"]

KiB, MiB = 1024, 1024 * 1024


@dataclass(frozen=True)
class Board:
    """A QEMU board and its core: the memory map the program is linked for."""

    cpu: str                       # -mcpu and QEMU's -cpu
    machine: str                   # QEMU's -machine
    flash: tuple[int, int]         # (base, bytes): code and constants
    ram: tuple[int, int]           # (base, bytes): data, heap and stack


# spec "Toolchain and virtual boards": mps2-an386 has 4 MiB at 0x0 and 4 MiB at 0x2000_0000; on
# mps3-an547 code runs from the 512 KiB ITCM at 0x0 and data lives in the 2 MiB SRAM at 0x0100_0000
CORTEX_M4 = Board("cortex-m4", "mps2-an386", (0x0, 4 * MiB), (0x2000_0000, 4 * MiB))
CORTEX_M55 = Board("cortex-m55", "mps3-an547", (0x0, 512 * KiB), (0x0100_0000, 2 * MiB))
BOARDS = {b.cpu: b for b in (CORTEX_M4, CORTEX_M55)}

# the stack at the top of SRAM (picolibc.ld's __stack_size); the C library's own data is tiny
STACK_BYTES = 64 * KiB
CPU = Engine("cpu", cores=1, runtime="deeploy_cortexm.h")


QEMU = "qemu-system-arm"


def qemu_command(elf, board: Board, plugin_args: str | None = None) -> list[str]:
    """The QEMU command running ``elf`` on ``board`` with semihosting (output, exit code)."""
    cmd = [QEMU, "-machine", board.machine, "-cpu", board.cpu, "-kernel", str(elf), "-display", "none",
           "-serial", "none", "-monitor", "none", "-chardev", "stdio,id=c0,signal=off",
           "-semihosting-config", "enable=on,target=native,chardev=c0"]
    return cmd + (["-plugin", plugin_args] if plugin_args else [])


def linker_script(board: Board):
    """The linker script of ``board``: its memory map for picolibc's ``picolibc.ld``, whose
    region overflow errors name ``flash`` or ``ram``."""

    def script(memory) -> str:
        (flash, flash_size), (ram, ram_size) = board.flash, board.ram
        return (f"/* Deeploy CortexM cpu: {board.cpu} (QEMU -machine {board.machine}) */\n"
                f"__flash = 0x{flash:x};\n__flash_size = 0x{flash_size:x};\n"
                f"__ram = 0x{ram:x};\n__ram_size = 0x{ram_size:x};\n"
                f"__stack_size = 0x{STACK_BYTES:x};\nINCLUDE picolibc.ld\n")
    return script


def sram_check(board: Board):
    """The compile-time check of a memory plan against ``board``'s SRAM (``--sram``): the arena and
    the network's inputs and outputs fit beside the stack (the linker still checks the C library's
    few bytes on top)."""

    def check(graph, plan) -> None:
        io = {*graph.inputs, *graph.outputs}
        need = plan.arena_size + sum(graph.tensors[n].nbytes for n in io if not graph.is_constant(n))
        room = board.ram[1] - STACK_BYTES
        if need > room:
            raise DeeployError(
                f"network does not fit the board's SRAM: over by {need - room} bytes; its activations, inputs and "
                f"outputs take {need} B of the {room} B that --sram {board.ram[1]} leaves beside the {STACK_BYTES} B "
                f"stack; use a smaller network or a larger --sram (up to {board.machine}'s "
                f"{BOARDS[board.cpu].ram[1]})")
    return check


def cortexm_platform(board: Board) -> Platform:
    """The CortexM platform on ``board``: its SRAM is the one data level. (Siracusa's runtime
    sources and headers are copied into a compiled output with its kernels, but not built.)"""
    return Platform(
        name="CortexM",
        libraries=("Generic", "Siracusa", "CortexM"),
        memory=(MemoryLevel("SRAM", board.ram[1], alignment=4, reserved=STACK_BYTES, reserved_for="the stack"),),
        bindings=SIRACUSA_BINDINGS,
        passes=(transpose_fc_weights, *SIRACUSA_PASSES),
        default_level="SRAM",
        cmake_platform="CortexM",
        engines=(CPU,),
        linker_script=linker_script(board),
        run_command=lambda memory, program, cores: qemu_command(program, board),
        configure=configure,
        check_plan=sram_check(board),
    )


def configure(cpu: str = CORTEX_M4.cpu, sram: int | None = None) -> Platform:
    """The platform on the board of core ``cpu`` (``--cpu``), using ``sram`` bytes of its SRAM
    (``--sram``; default all): the program is linked into that much, stack included."""
    if cpu not in BOARDS:
        raise DeeployError(f"unknown Cortex-M core '{cpu}': use --cpu {' or --cpu '.join(BOARDS)}")
    board = BOARDS[cpu]
    if sram is not None:
        if not STACK_BYTES < sram <= board.ram[1] or sram % 4:
            raise DeeployError(f"--sram {sram}: give a multiple of 4 bytes above the {STACK_BYTES} B stack and at "
                               f"most the {board.ram[1]} B of {board.machine}'s SRAM")
        board = replace(board, ram=(board.ram[0], sram))
    return cortexm_platform(board)


CORTEXM = cortexm_platform(CORTEX_M4)
PLATFORM = CORTEXM
