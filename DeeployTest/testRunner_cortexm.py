#!/usr/bin/env python3
"""Compile a test network for CortexM, cross-compile it for the chosen core and run it on its
QEMU board (Cortex-M4 on mps2-an386 by default); check its outputs and print the modelled cycles.

    python testRunner_cortexm.py -t ../../shared/corpus/Kernels/Integer/Add/Regular
    python testRunner_cortexm.py -t Tests/Models/miniMobileNetv2 --cpu cortex-m55 --profileUntiled
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.cortexm.runner import cpu_name  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, refuse_flag  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("CortexM", "TEST_CORTEXM"), __doc__,
         extra_args=lambda p: (p.add_argument("--cpu", type=cpu_name, default="cortex-m4",
                                              help="the core and its board: cortex-m4 (mps2-an386) or cortex-m55 "
                                                   "(mps3-an547)"),
                               p.add_argument("--sram", type=int, default=None, metavar="BYTES",
                                              help="SRAM the program may use, stack included (default: the board's)"),
                               p.add_argument("--profileUntiled", action="store_true",
                                              help="print modelled cycles per layer"),
                               add_peer_flags(p, "CortexM"),
                               refuse_flag(p, "--roofline", "CortexM has no roofline: use testRunner_siracusa.py --roofline"),
                               refuse_flag(p, "--profileTiling", "this runner does not tile: use --profileUntiled")),
         compile_options=lambda args: {"platform_options": {"cpu": args.cpu} if args.sram is None
                                       else {"cpu": args.cpu, "sram": args.sram}})
