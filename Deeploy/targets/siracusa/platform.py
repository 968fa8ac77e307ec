"""Siracusa: an 8-core PULP cluster with L1 (TCDM), L2 and off-chip L3, run as RV32 code on
QEMU's virt machine. Memory sizes from the pulp-sdk linker script (specs/siracusa-timing.md)."""

from Deeploy.passes.constant_folding import fold_constants
from Deeploy.passes.div_folding import fold_integer_division
from Deeploy.passes.layout import convs_to_channels_last, simplify_transposes
from Deeploy.passes.requant_fusion import fuse_requant
from Deeploy.targets.platform import MemoryLevel, Platform
from Deeploy.targets.siracusa.bindings import SIRACUSA_BINDINGS
from Deeploy.targets.siracusa.timing import TimingModel

__all__ = ["SIRACUSA", "SIRACUSA_PASSES"]

KiB, MiB = 1024, 1024 * 1024

SIRACUSA_PASSES = (
    fold_constants,
    fold_integer_division,     # TrueIntegerDiv -> RequantShift  =>  RequantShift
    fuse_requant,              # Op -> RequantShift  =>  RequantizedOp
    convs_to_channels_last,    # convolutions run HWC
    fold_constants,            # weight transposes become constants
    simplify_transposes,       # cancel inverse pairs, move transposes through elementwise ops
)

SIRACUSA = Platform(
    name="Siracusa",
    libraries=("Generic", "PULPOpen"),
    memory=(
        MemoryLevel("L1", 256 * KiB, alignment=4, data_attr="DEEPLOY_L1"),
        MemoryLevel("L2", 2 * MiB, alignment=4, data_attr="DEEPLOY_L2", const_attr="DEEPLOY_L2_CONST"),
        MemoryLevel("L3", 16 * MiB, alignment=4, data_attr="DEEPLOY_L3", const_attr="DEEPLOY_L3_CONST"),
    ),
    bindings=SIRACUSA_BINDINGS,
    passes=SIRACUSA_PASSES,
    default_level="L2",
    cmake_platform="Siracusa",
    cluster=True,
    max_cores=8,
    timing=TimingModel(          # sources: TimingModel's docstring and specs/siracusa-timing.md
        base_cpi=1.0,            # CV32E40P user manual (single-issue, 1 cycle per ALU/L1 access)
        l1_latency=0.0,          # TCDM single-cycle access (GVSoC cluster config)
        l2_latency=14.0,         # cluster interconnect 2 + SoC router 12 (GVSoC)
        l3_latency=100.0,        # GUESS: HyperBus command phase + latency + 4 bytes at 1 B/cycle
        fork_cycles=50.0,        # GUESS: "tens of cycles", not found in sources
        barrier_cycles=11.0,     # hardware barrier, Glaser et al., DATE 2019
    ),
)
