#!/usr/bin/env python3
"""Compile a test network for the GAP9 cluster, cross-compile it for RV32IMFC and run it on the
worker cores under QEMU; check its outputs and print the modelled cycles.

    python testRunner_gap9.py -t Tests/IntKernels/Add/Regular/
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.gap9.runner import core_count  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, refuse_flag  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("GAP9", "TEST_GAP9"), __doc__,
         extra_args=lambda p: (p.add_argument("--cores", "--num-cores", dest="cores", type=core_count, default=8,
                                              help="worker cores, 1..8 (9, the count with the cluster "
                                                   "controller, means 8); the controller always runs"),
                               p.add_argument("--profileUntiled", action="store_true",
                                              help="print modelled cycles per layer and write profile.json, "
                                                   "trace.json and profile.html next to the generated code"),
                               p.add_argument("--plotMemAlloc", action="store_true",
                                              help="write memory_allocation.html next to the generated code"),
                               add_peer_flags(p, "GAP9"),
                               refuse_flag(p, "--profileTiling", "this runner does not tile: use --profileUntiled, or tile "
                                           "with testRunner_tiled_gap9.py")),
         compile_options=lambda args: {"cores": args.cores})
