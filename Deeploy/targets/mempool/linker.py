"""MemPool's memory map on QEMU's virt machine: the Siracusa family's generated linker script
(``Deeploy.targets.siracusa.linker``: L2 at 0x80000000 where every hart starts, L1 relocated to
0x90000000 since MemPool's L1 at 0x0 clashes with virt's ROM and devices) with a stack for each of
the 256 cores (1 KiB, as the peer's ``stack_size``; core 0 8 KiB for main and printf). The int8
GEMM's assembly path (its 1 KiB panel on the stack) needs an FPU, which MemPool's RV32IMA has not.

    python -m Deeploy.targets.mempool.linker -o mempool.ld   # MemPool's default levels
"""

from __future__ import annotations

import sys
from functools import partial

from Deeploy.targets.siracusa import linker as _family

__all__ = ["MAX_HARTS", "linker_script", "l1_reserved_bytes"]

MAX_HARTS = 256
WORKER_STACK_BYTES = 1024
linker_script = partial(_family.linker_script, max_harts=MAX_HARTS, worker_stack=WORKER_STACK_BYTES)
l1_reserved_bytes = partial(_family.l1_reserved_bytes, max_harts=MAX_HARTS, worker_stack=WORKER_STACK_BYTES)


def main(argv: list[str] | None = None) -> int:
    return _family.write_default(argv, "MemPool", linker_script)


if __name__ == "__main__":
    sys.exit(main())
