"""Siracusa: an 8-core PULP cluster with L1 (TCDM), L2 and off-chip L3, run as RV32 code on
QEMU's virt machine. Memory sizes from the pulp-sdk linker script (specs/siracusa-timing.md)."""

from dataclasses import replace

from Deeploy.passes.constant_folding import fold_constants
from Deeploy.passes.div_folding import fold_integer_division
from Deeploy.passes.qdq import lower_qdq
from Deeploy.passes.layout import convs_to_channels_last, gemm_weights_transposed, simplify_transposes
from Deeploy.passes.reductions import split_float_reductions
from Deeploy.passes.requant_fusion import fuse_requant
from Deeploy.passes.variadic import split_variadic
from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
from Deeploy.targets.siracusa.linker import l1_reserved_bytes, linker_script, qemu_ram_bytes
from Deeploy.targets.siracusa.qemu import qemu_command
from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING
from Deeploy.targets.siracusa.conv_cycles import conv_tile_model
from Deeploy.targets.siracusa.gemm_cycles import gemm_tile_model
from Deeploy.tiling.dma_plan import STRAIGHT_TILES
from Deeploy.tiling.params import PlatformTiling, TilingParams

__all__ = ["SIRACUSA", "PLATFORM", "SIRACUSA_PASSES", "SIRACUSA_L1", "CLUSTER", "VIRTUAL_PLATFORM_L1", "L3_STAGING"]

KiB, MiB = 1024, 1024 * 1024

SIRACUSA_PASSES = (
    split_variadic,            # Max/Min/Sum/Mean of 1 or 3+ inputs => binary nodes
    lower_qdq,                 # QDQ groups => integer ops + RequantizeLinear
    fold_constants,
    fold_integer_division,     # TrueIntegerDiv -> RequantShift  =>  RequantShift
    fuse_requant,              # Op -> RequantShift  =>  RequantizedOp
    convs_to_channels_last,    # convolutions run HWC
    gemm_weights_transposed,   # int8 GEMM weights stored N x K (the dot-product kernel's layout)
    fold_constants,            # weight transposes become constants
    simplify_transposes,       # cancel inverse pairs, move transposes through elementwise ops
    split_float_reductions,    # float means/sums with few outputs reduce their last axis first
)

# The virtual platform's cycle model: the values and their sources are TimingModel's defaults
# (timing.py, specs/siracusa-timing.md); the tiler's parameters below are taken from it.
TIMING = SIRACUSA_TIMING

CLUSTER = Engine("cluster", cores=8, forked=True, runtime="deeploy_runtime.h")   # spec "Cluster"

# The tiling cost model's parameters (Deeploy/tiling/params.py says what each one means): the L1
# tiles of data in L2, moved by the cluster DMA (mchan) as the cycle model times it; 64000 B of the
# 256 KiB L1 by default (--l1; spec "Cluster: L1 TCDM"), 4-byte aligned as the L1 level.
# ops_per_cycle: 31, PULP-NN int8 kernels reach 15.5 MAC/cycle on 8 XpulpV2 cores, a MAC is 2 ops
# (spec "Sanity checks"); the virtual platform (plain RV32IMFC, no SIMD) is ~12x slower: see
# VIRTUAL_PLATFORM_L1. tile_loop_cycles: GUESS 20 per tile (index and pointer updates, DMA waits).
SIRACUSA_L1 = TilingParams(capacity=64000, alignment=4, dma_bytes_per_cycle=int(TIMING.dma_bandwidth),
                           dma_setup=int(TIMING.dma_setup_cycles), dma_row_cycles=int(TIMING.dma_row_cycles),
                           dma_issue_word_cycles=int(TIMING.dma_issue_word_cycles),
                           dma_words_1d=TIMING.dma_words_1d, dma_words_2d=TIMING.dma_words_2d,
                           ops_per_cycle=31.0, cores=CLUSTER.cores, fork_cycles=int(TIMING.fork_cycles),
                           barrier_cycles=int(TIMING.barrier_cycles), tile_loop_cycles=20)

# The virtual platform (QEMU, plain RV32IMFC cores): measured ops per cycle of 8 cores with the
# data in L1, from the timing plugin's records of the Siracusa network tests (cores8) evaluated
# with the platform's TimingModel and l2_latency=0: RequantizedConv 2.25, RequantizedGemm 2.69,
# RequantizedMatMul 2.64, RequantShift 4.99 ops/cycle; 2.5 is representative of the heavy layers.
# Per tile, the generated tile loop (TargetLibraries/Siracusa/src/deeploy_tiling.c) costs core 0
# about 2000 modelled cycles on the virtual platform beyond the kernel: operand boxes, DMA command
# set-up, waits and the fork, measured with --profileTiling on microLlama64_parallel's GEMMs
# ((layer cycles - kernel cycles) / tiles: 1962 at --l1 8000, with the tables copied by DMA). That
# is the table-driven loop's cost (tile_loop_cycles, kept by engines whose tiles run from tables:
# dma_plan.loop_kind). Layers with a compile-time DMA plan cost far less per tile (loop_cycles, by
# the tile count that decides their loop), measured the same way (profile overhead / tiles) on
# microLlama64_parallel --l1 8000 --doublebuffer: straight-line code (up to STRAIGHT_TILES tiles) 20
# per tile (median of 209 layers of 2-7 tiles, 11-36; one-tile layers of microLlama64 --l1 64000:
# 22-50 with the layer's set-up), 30 taken; the planned loop 269 (median of 64 layers of 10-22
# tiles, 232-298), 270 taken. With the copies issued inline (deeploy_run_planned) the planned loop
# measured 177 (median of 80 layers of 9-38 tiles: single-buffered 140-178, double-buffered
# 234-300); priced at 180, the softmax layers took 64 double-buffered tiles instead of 22 and the
# network ran 2% slower (7,403,032 cycles against 7,252,471), so 270 is kept. A kernel without a
# cycle formula also costs more per call than its ops (call_cycles): with the shared tables
# filled once per tile class (deeploy_tile_t.fill), the layers of microLlama64_parallel tiled at --l1 8000 rather than 64000 (--doublebuffer) spent per
# extra tile, beyond the fork and join (61), a median of 92 kernel cycles in RequantShift (37
# layers), 96 in iRMSNorm, 95 in RequantizedMul, 103 in Concat, 105 in RequantizediSoftmax and 133
# in RequantizedAdd; 100 taken. Transpose spends 826 per extra tile (its shorter tile rows; 1257 on a
# (16, 64, 4) tensor, test_table_fill_once): its own price (op_call_cycles). RequantizediHardswish
# (529: the untabulated outputs of small tiles, work rather than set-up) keeps 100: priced at 529,
# its layers took fewer, single-buffered tiles and ran slower at --l1 8000 and 64000.
# RequantizediSoftmax and RequantShift have their own compute prices (op_ops_per_cycle), and the
# softmax its own call price, fitted (least squares, kernel cycles = tiles * (61 + call) + ops /
# rate) on their layers of microLlama64_parallel at --l1 8000 and 64000 (--doublebuffer,
# --profileTiling): RequantizediSoftmax 7.78 ops/cycle and a call of 165 (16 layers, within 3.3%,
# median 0.3%; 116 per extra tile on a (48, 32) softmax with scalar requantisation,
# test_table_fill_once: 139 taken, their geometric mean); RequantShift 8.59 ops/cycle with
# call_cycles (128 layers of three kernel variants, median 19%; its large layers within 5%, where
# the rate matters). At 2.5 ops/cycle the softmax's tiles were priced 2.5x their cycles and
# RequantShift's about 3x.
# The requantised GEMM/MatMul layers' tiles are costed with the GemmRQ kernel's cycle formula
# (Deeploy/targets/siracusa/gemm_cycles.py: 4 x 4 blocks, remainders, per-call cost), the
# requantised channels-last convolutions' with theirs (conv_cycles.py).
VIRTUAL_PLATFORM_L1 = replace(SIRACUSA_L1, ops_per_cycle=2.5, tile_loop_cycles=2000,
                              loop_cycles=((1, 30), (STRAIGHT_TILES + 1, 270)), call_cycles=100,
                              op_call_cycles=(("Transpose", 826), ("RequantizediSoftmax", 139)),
                              op_ops_per_cycle=(("RequantizediSoftmax", 7.78), ("RequantShift", 8.59)),
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
# runtime's and the tile loop's own state (15.2 KiB as built, 4 KiB of it a planned loop's steps
# and copies; the tiled tests check every build).
_L1_RESERVED = l1_reserved_bytes() + 16 * KiB



SIRACUSA = Platform(
    name="Siracusa",
    libraries=("Generic", "Siracusa"),
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
    engines=(CLUSTER,),
    timing=TIMING,
    tiling=PlatformTiling(VIRTUAL_PLATFORM_L1, L3_STAGING, stream_engine="DEEPLOY_DMA_L3"),
    linker_script=linker_script,
    run_command=lambda memory, program, cores: qemu_command(program, cores, qemu_ram_bytes(memory)),
    reference_section=".l3_rodata",   # large test data off-chip, like a host loading it into L3
)

PLATFORM = SIRACUSA
