"""GAP9 (GreenWaves): the cluster of 8 worker cores and the cluster controller (RI5CY class with
XpulpV2, FPUs shared), a 128 KiB TCDM (L1), 1.5625 MiB of L2 and OctaSPI RAM as L3, run as RV32IMFC
code on QEMU's virt machine (``specs/gap9.md``). The software is the Siracusa family's (bindings,
passes, cluster runtime with its PULP-extension emulation, DSP kernels, tile loop, cluster DMA and
L3 staging); the memory, the cores and the cycle model are GAP9's.

Deviations of the virtual platform: GAP9 keeps FP operands in the integer registers (Zfinx-like);
here the cores are RV32IMFC with a separate FP register file, because Debian's GCC 12 takes
``-march=rv32imc_zfinx`` but emits soft-float calls and picolibc has no Zfinx multilib (results are
the same IEEE single-precision ones). The cluster controller is a ninth hart that the runtime
parks; worker core 0 runs the network, the tile loop and the DMA commands.
"""

from dataclasses import replace

from Deeploy.platform import Engine, MemoryLevel
from Deeploy.targets.gap9.linker import MAX_HARTS, l1_reserved_bytes, linker_script
from Deeploy.targets.gap9.timing import GAP9_TIMING as TIMING
from Deeploy.targets.siracusa.linker import qemu_ram_bytes
from Deeploy.targets.siracusa.platform import L3_STAGING, SIRACUSA, VIRTUAL_PLATFORM_L1
from Deeploy.targets.siracusa.qemu import qemu_command
from Deeploy.tiling.params import PlatformTiling

__all__ = ["GAP9", "PLATFORM", "CLUSTER", "GAP9_L1", "GAP9_L3_STAGING"]

KiB = 1024

CLUSTER = Engine("cluster", cores=8, forked=True, runtime="deeploy_runtime.h")   # the worker cores

# The tiles: the cores run the Siracusa family's code (its ops per cycle, tile loop and kernel
# cycle models), with GAP9's DMA, fork and barrier costs and the peer's default L1 budget (64000 B).
GAP9_L1 = replace(VIRTUAL_PLATFORM_L1, capacity=64000, dma_bytes_per_cycle=int(TIMING.dma_bandwidth),
                  dma_setup=int(TIMING.dma_setup_cycles), dma_row_cycles=int(TIMING.dma_row_cycles),
                  dma_issue_word_cycles=int(TIMING.dma_issue_word_cycles), cores=CLUSTER.cores,
                  fork_cycles=int(TIMING.fork_cycles), barrier_cycles=int(TIMING.barrier_cycles))
# L2 tiles of data in L3 (OctaSPI RAM, blocking copies: one queue for both directions)
GAP9_L3_STAGING = replace(L3_STAGING, dma_bytes_per_cycle=int(TIMING.l3_dma_bandwidth),
                          dma_setup=int(TIMING.l3_dma_setup_cycles),
                          dma_row_cycles=int(TIMING.l3_dma_command_cycles + TIMING.l3_dma_latency_cycles),
                          dma_issue_word_cycles=int(TIMING.l3_dma_issue_word_cycles))

GAP9 = replace(
    SIRACUSA,
    name="GAP9",
    memory=(
        # TCDM 128 KiB [GS]: the 9 stacks and 16 KiB of runtime and tile-loop state
        MemoryLevel("L1", 128 * KiB, alignment=4, data_attr="DEEPLOY_L1", reserved=l1_reserved_bytes() + 16 * KiB,
                    reserved_for="core stacks and runtime state"),
        # L2 0x190000 B [GS]: code, data and the L2 buffers
        MemoryLevel("L2", 0x190000, alignment=4, data_attr="DEEPLOY_L2", const_attr="DEEPLOY_L2_CONST"),
        # L3: the peer's 64,000,000 B model of the OctaSPI RAM (testMVP.py)
        MemoryLevel("L3", 64_000_000, alignment=4, data_attr="DEEPLOY_L3", const_attr="DEEPLOY_L3_CONST"),
    ),
    cmake_platform="GAP9",
    engines=(CLUSTER,),
    timing=TIMING,
    tiling=PlatformTiling(GAP9_L1, GAP9_L3_STAGING, stream_engine="DEEPLOY_DMA_L3"),
    linker_script=linker_script,
    # every hart, the parked ones included (the runtime forks on NUM_CORES of them), as the runner does
    run_command=lambda memory, program, cores: qemu_command(program, MAX_HARTS, qemu_ram_bytes(memory)),
)

PLATFORM = GAP9
