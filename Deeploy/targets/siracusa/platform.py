"""Siracusa: an 8-core PULP cluster with L1 (TCDM), L2 and off-chip L3, run as RV32 code on
QEMU's virt machine. Memory sizes from the pulp-sdk linker script (specs/siracusa-timing.md)."""

from dataclasses import replace

from Deeploy.passes.constant_folding import fold_constants
from Deeploy.passes.div_folding import fold_integer_division
from Deeploy.passes.qdq import lower_qdq
from Deeploy.passes.layout import convs_to_channels_last, simplify_transposes
from Deeploy.passes.reductions import split_float_reductions
from Deeploy.passes.requant_fusion import fuse_requant
from Deeploy.targets.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
from Deeploy.targets.siracusa.linker import l1_reserved_bytes, linker_script
from Deeploy.targets.siracusa.timing import TimingModel
from Deeploy.targets.siracusa.conv_cycles import conv_tile_model
from Deeploy.targets.siracusa.gemm_cycles import gemm_tile_model
from Deeploy.tiling.params import PlatformTiling, TilingParams

__all__ = ["SIRACUSA", "PLATFORM", "SIRACUSA_PASSES", "SIRACUSA_L1", "VIRTUAL_PLATFORM_L1", "L3_STAGING"]

KiB, MiB = 1024, 1024 * 1024

SIRACUSA_PASSES = (
    lower_qdq,                 # QDQ groups => integer ops + RequantizeLinear
    fold_constants,
    fold_integer_division,     # TrueIntegerDiv -> RequantShift  =>  RequantShift
    fuse_requant,              # Op -> RequantShift  =>  RequantizedOp
    convs_to_channels_last,    # convolutions run HWC
    fold_constants,            # weight transposes become constants
    simplify_transposes,       # cancel inverse pairs, move transposes through elementwise ops
    split_float_reductions,    # float means/sums with few outputs reduce their last axis first
)

TIMING = TimingModel(          # sources: TimingModel's docstring and specs/siracusa-timing.md
    base_cpi=1.0,              # CV32E40P user manual (single-issue, 1 cycle per ALU/L1 access)
    l1_latency=0.0,            # TCDM single-cycle access (GVSoC cluster config)
    l2_latency=14.0,           # cluster interconnect 2 + SoC router 12 (GVSoC)
    l3_latency=100.0,          # GUESS: HyperBus command phase + latency + 4 bytes at 1 B/cycle
    fork_cycles=50.0,          # GUESS: "tens of cycles", not found in sources
    barrier_cycles=11.0,       # hardware barrier, Glaser et al., DATE 2019
)

# The tiling cost model's parameters: see Deeploy/tiling/params.py for what each one means and
# its source; the DMA terms are the virtual platform's DMA timing above.
SIRACUSA_L1 = TilingParams(capacity=64000, alignment=4, dma_bytes_per_cycle=int(TIMING.dma_bandwidth),
                           dma_setup=int(TIMING.dma_setup_cycles), dma_row_cycles=int(TIMING.dma_row_cycles),
                           dma_issue_word_cycles=int(TIMING.dma_issue_word_cycles), cores=8,
                           fork_cycles=int(TIMING.fork_cycles), barrier_cycles=int(TIMING.barrier_cycles))

# The virtual platform (QEMU, plain RV32IMAC cores): measured ops per cycle of 8 cores with the
# data in L1, from the timing plugin's records of the Siracusa network tests (cores8) evaluated
# with the platform's TimingModel and l2_latency=0: RequantizedConv 2.25, RequantizedGemm 2.69,
# RequantizedMatMul 2.64, RequantShift 4.99 ops/cycle; 2.5 is representative of the heavy layers.
# Per tile, the generated tile loop (TargetLibraries/PULPOpen/src/deeploy_tiling.c) costs core 0
# about 2000 modelled cycles on the virtual platform beyond the kernel: operand boxes, DMA command
# set-up, waits and the fork, measured with --profileTiling on microLlama64_parallel's GEMMs
# ((layer cycles - kernel cycles) / tiles: 1962 at --l1 8000, with the tables copied by DMA).
# The requantised GEMM/MatMul layers' tiles are costed with the GemmRQ kernel's cycle formula
# (Deeploy/targets/siracusa/gemm_cycles.py: 4 x 4 blocks, remainders, per-call cost), the
# requantised channels-last convolutions' with theirs (conv_cycles.py).
VIRTUAL_PLATFORM_L1 = replace(SIRACUSA_L1, ops_per_cycle=2.5, tile_loop_cycles=2000,
                              kernel_cycles=(("RequantizedMatMul", gemm_tile_model),
                                             ("RequantizedGemm", gemm_tile_model),
                                             ("RequantizedConv", conv_tile_model)))

# L2 tiles of data in L3 (HyperRAM behind the uDMA), with the platform's L3 DMA engine (TimingModel
# l3_dma_*; spec "Memories and DMA": L3): 1 B/cycle, 14 cycles set-up per transfer, every row its
# own HyperBus transaction (command phase 8 + latency 12 cycles), 14 cycles per command word stored
# by the core (GUESS in the TimingModel: a store crossing to the SoC peripherals), one queue for
# both directions.
L3_STAGING = replace(SIRACUSA_L1, capacity=0, dma_bytes_per_cycle=int(TIMING.l3_dma_bandwidth),
                     dma_setup=int(TIMING.l3_dma_setup_cycles),
                     dma_row_cycles=int(TIMING.l3_dma_command_cycles + TIMING.l3_dma_latency_cycles),
                     dma_issue_word_cycles=int(TIMING.l3_dma_issue_word_cycles), dma_full_duplex=False,
                     level="L2", source="L3")

# L1 kept by the runtime: the core stacks the linker script places there, and 16 KiB for the
# runtime's and the tile loop's own state (10.6 KiB as built; the tiled tests check every build).
_L1_RESERVED = l1_reserved_bytes() + 16 * KiB



def _execute_on_qemu(elf, timeout: float) -> tuple[int, str]:
    """The program under QEMU with the timing plugin; its output then ``Runtime: N cycles``."""
    from Deeploy.targets.siracusa.execute import run_program   # QEMU's modules only when running
    run = run_program(elf, TIMING, timeout=timeout)
    return run.exit_code, run.output


SIRACUSA = Platform(
    name="Siracusa",
    libraries=("Generic", "PULPOpen"),
    memory=(
        MemoryLevel("L1", 256 * KiB, alignment=4, data_attr="DEEPLOY_L1", reserved=_L1_RESERVED,
                    reserved_for="core stacks and runtime state"),
        MemoryLevel("L2", 2 * MiB, alignment=4, data_attr="DEEPLOY_L2", const_attr="DEEPLOY_L2_CONST"),
        MemoryLevel("L3", 16 * MiB, alignment=4, data_attr="DEEPLOY_L3", const_attr="DEEPLOY_L3_CONST"),
    ),
    bindings=SIRACUSA_BINDINGS,
    passes=SIRACUSA_PASSES,
    default_level="L2",
    cmake_platform="Siracusa",
    engines=(Engine("cluster", cores=8, forked=True, runtime="deeploy_runtime.h"),),
    timing=TIMING,
    tiling=PlatformTiling(VIRTUAL_PLATFORM_L1, L3_STAGING, stream_engine="DEEPLOY_DMA_L3"),
    linker_script=linker_script,
    reference_section=".l3_rodata",   # large test data off-chip, like a host loading it into L3
    execute=_execute_on_qemu,
)

PLATFORM = SIRACUSA
