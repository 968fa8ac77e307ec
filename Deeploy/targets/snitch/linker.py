"""The Snitch cluster's memory map on QEMU's virt machine: the Siracusa family's generated linker
script (``Deeploy.targets.siracusa.linker``: main memory "L2" at 0x80000000 where every hart
starts, the TCDM relocated to 0x90000000 since Snitch's at 0x10000000 is virt's UART) with a stack
for each of the 9 harts (2 KiB; core 0 8 KiB for main and printf).

    python -m Deeploy.targets.snitch.linker -o snitch.ld   # Snitch's default levels
"""

from __future__ import annotations

import sys
from functools import partial

from Deeploy.targets.siracusa import linker as _family

__all__ = ["MAX_HARTS", "linker_script", "l1_reserved_bytes"]

MAX_HARTS = 9                    # 8 compute cores and the data-mover core (the tile loop)
WORKER_STACK_BYTES = 2048       # the int8 GEMM packs a 1 KiB panel of A on the stack (FPU path)
linker_script = partial(_family.linker_script, max_harts=MAX_HARTS, worker_stack=WORKER_STACK_BYTES)
l1_reserved_bytes = partial(_family.l1_reserved_bytes, max_harts=MAX_HARTS, worker_stack=WORKER_STACK_BYTES)


def main(argv: list[str] | None = None) -> int:
    return _family.write_default(argv, "Snitch", linker_script)


if __name__ == "__main__":
    sys.exit(main())
