"""MemPool: 256 Snitch cores (4 groups x 16 tiles x 4 cores, RV32IMA) sharing a 1 MiB L1 of 1024
banks, with a 4 MiB L2, run as RV32IMA code on QEMU's virt machine (``specs/mempool.md``). Untiled,
as the peer runs it: activations in L1, constants in L2; the portable kernels, each core taking its
share (``deeploy_chunk``), so results equal Generic's bit for bit; the Siracusa family's cluster
runtime (fork, barrier, markers) for up to 256 cores. Tiled (``--l1``), layers work on L1 tiles of
data in L2 that core 0 moves with the DMA (``timing.MemPoolTiming``: its costs and sources); untiled,
nothing goes through the DMA: the kernels read the constants in L2 in place, each load paying the
L2 latency."""

from dataclasses import replace

from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.generic.platform import GENERIC
from Deeploy.targets.mempool.linker import MAX_HARTS, l1_reserved_bytes, linker_script
from Deeploy.targets.mempool.timing import MEMPOOL_TIMING as TIMING
from Deeploy.targets.siracusa.linker import qemu_ram_bytes
from Deeploy.targets.siracusa.platform import VIRTUAL_PLATFORM_L1
from Deeploy.targets.siracusa.qemu import qemu_command
from Deeploy.tiling.params import PlatformTiling

__all__ = ["MEMPOOL", "PLATFORM", "CLUSTER", "MEMPOOL_L1"]

KiB, MiB = 1024, 1024 * 1024

CLUSTER = Engine("cluster", cores=MAX_HARTS, forked=True, runtime="deeploy_runtime.h")

# The tiles: the virtual platform's tile loop with MemPool's DMA, fork and barrier costs; the
# DMA has 1-D commands only (a strided tile costs a command per row, each with the row's L2
# access as its set-up); ops per cycle those of the virtual platform's 8 cores (2.5,
# VIRTUAL_PLATFORM_L1) scaled to the peer's 16; the portable kernels, so no kernel cycle formulas.
MEMPOOL_L1 = replace(VIRTUAL_PLATFORM_L1, dma_bytes_per_cycle=int(TIMING.dma_bandwidth),
                     dma_setup=int(TIMING.dma_row_cycles), dma_row_cycles=0,
                     dma_issue_word_cycles=int(TIMING.dma_issue_word_cycles), dma_words_1d=TIMING.dma_words_1d,
                     dma_words_2d=TIMING.dma_words_2d, dma_2d=False, ops_per_cycle=5.0, cores=16,
                     fork_cycles=int(TIMING.fork_cycles), barrier_cycles=int(TIMING.barrier_cycles), kernel_cycles=())

MEMPOOL = Platform(
    name="MemPool",
    libraries=("Generic", "Siracusa"),
    memory=(
        # the stacks (one per core: the sequential regions) and 16 KiB for the runtime's state
        MemoryLevel("L1", 1 * MiB, alignment=4, data_attr="DEEPLOY_L1", reserved=l1_reserved_bytes() + 16 * KiB,
                    reserved_for="core stacks and runtime state"),
        MemoryLevel("L2", 4 * MiB, alignment=4, data_attr="DEEPLOY_L2", const_attr="DEEPLOY_L2_CONST"),
    ),
    bindings=GENERIC.bindings,
    passes=GENERIC.passes,
    default_level="L1",
    cmake_platform="MemPool",
    engines=(CLUSTER,),
    timing=TIMING,
    tiling=PlatformTiling(MEMPOOL_L1, replace(MEMPOOL_L1, capacity=0, level="L2", source="L3")),
    linker_script=linker_script,
    run_command=lambda memory, program, cores: qemu_command(program, cores, qemu_ram_bytes(memory)),
)

PLATFORM = MEMPOOL
