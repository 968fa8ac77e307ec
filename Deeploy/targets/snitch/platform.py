"""Snitch: one cluster of 8 compute cores and a data-mover core (RV32IMAFD), a 128 KiB TCDM in 32
banks (L1) and main memory behind it (L2), run as RV32 code on QEMU's virt machine
(``specs/snitch.md``). Untiled, as the peer's untiled runner: buffers in main memory (``L2``); the
portable kernels on the 8 compute cores, each taking its share (``deeploy_chunk``), so results
equal Generic's bit for bit."""

from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.generic.platform import GENERIC
from Deeploy.targets.snitch.linker import l1_reserved_bytes, linker_script
from Deeploy.targets.snitch.timing import SNITCH_TIMING

__all__ = ["SNITCH", "PLATFORM", "CLUSTER"]

KiB, MiB = 1024, 1024 * 1024

CLUSTER = Engine("cluster", cores=8, forked=True, runtime="virt_cluster.h")   # the compute cores

SNITCH = Platform(
    name="Snitch",
    libraries=("Generic", "VirtCluster"),
    memory=(
        # the TCDM holds the 9 stacks and the runtime's state
        MemoryLevel("L1", 128 * KiB, alignment=4, data_attr="DEEPLOY_L1", reserved=l1_reserved_bytes() + 1 * KiB,
                    reserved_for="core stacks and runtime state"),
        # main memory as the virtual platform loads it (the cluster's DRAM window is 2 GiB)
        MemoryLevel("L2", 16 * MiB, alignment=4, data_attr="DEEPLOY_L2", const_attr="DEEPLOY_L2_CONST"),
    ),
    bindings=GENERIC.bindings,
    passes=GENERIC.passes,
    default_level="L2",
    cmake_platform="Snitch",
    engines=(CLUSTER,),
    timing=SNITCH_TIMING,
    linker_script=linker_script,
)

PLATFORM = SNITCH
