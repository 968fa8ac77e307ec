#!/usr/bin/env python3
"""Compile a test network for Siracusa, cross-compile it for RV32 and run it on N cluster
cores under QEMU; check its outputs and print the modelled cycles.

    python testRunner_siracusa.py -t Tests/Models/microLlama/microLlama128 --cores=8
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.siracusa.runner import core_count  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, add_roofline, refuse_flag  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("Siracusa", "TEST_SIRACUSA"), __doc__,
         extra_args=lambda p: (p.add_argument("--cores", type=core_count, default=8, help="cluster cores, 1..8"),
                               p.add_argument("--profileUntiled", action="store_true",
                                              help="print modelled cycles per layer and write profile.json, "
                                                   "trace.json and profile.html next to the generated code"),
                               p.add_argument("--plotMemAlloc", action="store_true",
                                              help="write memory_allocation.html next to the generated code"),
                               add_roofline(p),
                               add_peer_flags(p, "Siracusa"),
                               refuse_flag(p, "--profileTiling", "this runner does not tile: use --profileUntiled, or tile "
                                           "with testRunner_tiled_siracusa.py")),
         compile_options=lambda args: {"cores": args.cores})
