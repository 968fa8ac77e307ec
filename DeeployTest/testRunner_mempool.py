#!/usr/bin/env python3
"""Compile a test network for MemPool, cross-compile it for RV32IMA and run it on N cores under
QEMU; check its outputs and print the modelled cycles.

    python testRunner_mempool.py -t Tests/Models/microLlama/microLlama128 --num-threads=256
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.mempool.runner import core_count  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, refuse_flag  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("MemPool", "TEST_MEMPOOL"), __doc__,
         extra_args=lambda p: (p.add_argument("--cores", "--num-threads", "--num-cores", dest="cores", type=core_count,
                                              default=16, help="cores used, 1..256 (the peer's --num-threads; "
                                                               "default 16)"),
                               p.add_argument("--profileUntiled", action="store_true",
                                              help="print modelled cycles per layer and write profile.json, "
                                                   "trace.json and profile.html next to the generated code"),
                               p.add_argument("--plotMemAlloc", action="store_true",
                                              help="write memory_allocation.html next to the generated code"),
                               add_peer_flags(p, "MemPool"),
                               refuse_flag(p, "--profileTiling", "MemPool runs untiled (as the peer's): use "
                                           "--profileUntiled")),
         compile_options=lambda args: {"cores": args.cores})
