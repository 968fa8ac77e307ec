"""The GAP9 cluster's memory map on QEMU's virt machine: the Siracusa family's generated linker
script (``Deeploy.targets.siracusa.linker``: L2 at 0x80000000 where every hart starts, L1 at
0x90000000 since GAP9's TCDM at 0x10000000 is virt's UART and virt has no RAM at GAP9's L2 base
0x1C000000, L3 at 0xA0000000) with a stack for each of the 9 harts: the 8 worker cores and the
cluster controller (core 8, parked; ``specs/gap9.md`` §1).

    python -m Deeploy.targets.gap9.linker -o gap9.ld   # GAP9's default levels
"""

from __future__ import annotations

import sys
from functools import partial

from Deeploy.targets.siracusa import linker as _family

__all__ = ["MAX_HARTS", "linker_script", "l1_reserved_bytes"]

MAX_HARTS = 9                    # 8 worker cores and the cluster controller
linker_script = partial(_family.linker_script, max_harts=MAX_HARTS)
l1_reserved_bytes = partial(_family.l1_reserved_bytes, max_harts=MAX_HARTS)


def main(argv: list[str] | None = None) -> int:
    return _family.write_default(argv, "GAP9", linker_script)


if __name__ == "__main__":
    sys.exit(main())
