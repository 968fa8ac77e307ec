"""Snitch: one cluster of 8 compute cores and a data-mover core (RV32IMAFD), a 128 KiB TCDM in 32
banks (L1) and main memory behind it (L2), run as RV32 code on QEMU's virt machine
(``specs/snitch.md``). The software is the Siracusa family's (its bindings, passes, cluster runtime
and tile loop: the kernels are portable C, correct without SSR and FREP); the memory, the cores and
the cycle model are Snitch's. Untiled, buffers live in main memory (the peer's untiled runner);
tiled (``--l1``), layers work on L1 tiles that the cluster DMA moves, double-buffered if asked."""

from dataclasses import replace

from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.siracusa.platform import SIRACUSA, VIRTUAL_PLATFORM_L1
from Deeploy.targets.siracusa.linker import qemu_ram_bytes
from Deeploy.targets.siracusa.qemu import qemu_command
from Deeploy.targets.snitch.linker import MAX_HARTS, l1_reserved_bytes, linker_script
from Deeploy.targets.snitch.timing import SNITCH_TIMING as TIMING
from Deeploy.tiling.params import PlatformTiling

__all__ = ["SNITCH", "PLATFORM", "CLUSTER", "SNITCH_L1"]

KiB, MiB = 1024, 1024 * 1024

CLUSTER = Engine("cluster", cores=8, forked=True, runtime="deeploy_runtime.h",
                 data_mover=True)   # the compute cores; the data mover (hart 8) runs the tile loops

# The tiles: the virtual platform's cores run the same code as Siracusa's (ops per cycle, tile loop
# and kernel cycle models of VIRTUAL_PLATFORM_L1), with Snitch's DMA, fork and barrier costs and
# the peer's default L1 budget (64000 B, --l1).
SNITCH_L1 = replace(VIRTUAL_PLATFORM_L1, capacity=64000, dma_bytes_per_cycle=int(TIMING.dma_bandwidth),
                    dma_setup=int(TIMING.dma_setup_cycles), dma_row_cycles=int(TIMING.dma_row_cycles),
                    dma_issue_word_cycles=int(TIMING.dma_issue_word_cycles), cores=CLUSTER.cores,
                    fork_cycles=int(TIMING.fork_cycles), barrier_cycles=int(TIMING.barrier_cycles))

SNITCH = Platform(
    name="Snitch",
    libraries=("Generic", "Siracusa"),
    memory=(
        # the TCDM holds the 9 stacks and the runtime's and the tile loop's state
        MemoryLevel("L1", 128 * KiB, alignment=4, data_attr="DEEPLOY_L1", reserved=l1_reserved_bytes() + 16 * KiB,
                    reserved_for="core stacks and runtime state"),
        # main memory as the virtual platform loads it (the cluster's DRAM window is 2 GiB)
        MemoryLevel("L2", 16 * MiB, alignment=4, data_attr="DEEPLOY_L2", const_attr="DEEPLOY_L2_CONST"),
    ),
    bindings=SIRACUSA.bindings,
    passes=SIRACUSA.passes,
    default_level="L2",
    cmake_platform="Snitch",
    engines=(CLUSTER,),
    timing=TIMING,
    tiling=PlatformTiling(SNITCH_L1, replace(SNITCH_L1, capacity=0, level="L2", source="L3")),
    linker_script=linker_script,
    # every hart starts, the data mover included (parked by the runtime)
    run_command=lambda memory, program, cores: qemu_command(program, MAX_HARTS, qemu_ram_bytes(memory)),
)

PLATFORM = SNITCH
