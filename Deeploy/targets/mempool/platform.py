"""MemPool: 256 Snitch cores (4 groups x 16 tiles x 4 cores, RV32IMA) sharing a 1 MiB L1 of 1024
banks, with a 4 MiB L2, run as RV32IMA code on QEMU's virt machine (``specs/mempool.md``). Untiled,
as the peer runs it: activations in L1, constants in L2; the portable kernels, each core taking its
share (``deeploy_chunk``), so results equal Generic's bit for bit; the Siracusa family's cluster
runtime (fork, barrier, markers) for up to 256 cores."""

from Deeploy.platform import Engine, MemoryLevel, Platform
from Deeploy.targets.generic.platform import GENERIC
from Deeploy.targets.mempool.linker import MAX_HARTS, l1_reserved_bytes, linker_script
from Deeploy.targets.mempool.timing import MEMPOOL_TIMING
from Deeploy.targets.siracusa.linker import qemu_ram_bytes
from Deeploy.targets.siracusa.qemu import qemu_command

__all__ = ["MEMPOOL", "PLATFORM", "CLUSTER"]

KiB, MiB = 1024, 1024 * 1024

CLUSTER = Engine("cluster", cores=MAX_HARTS, forked=True, runtime="deeploy_runtime.h")

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
    timing=MEMPOOL_TIMING,
    linker_script=linker_script,
    run_command=lambda memory, program, cores: qemu_command(program, cores, qemu_ram_bytes(memory)),
)

PLATFORM = MEMPOOL
