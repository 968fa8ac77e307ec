#!/usr/bin/env python3
"""Compile a test network for the GAP9 cluster with every layer tiled into the TCDM (L1; CP-SAT
tiler, the cluster DMA between L2 and L1, L3 staging with --defaultMemLevel L3), cross-compile it
for RV32IMFC and run it on the worker cores under QEMU; check its outputs and print the modelled
cycles.

    python testRunner_tiled_gap9.py -t Tests/Models/miniMobileNetv2 --l1 64000 --doublebuffer --profileTiling
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.gap9.runner import core_count  # noqa: E402
from DeeployTest.testRunner_tiled_siracusa import tiled_arguments, tiled_options  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("GAP9", "TEST_GAP9_TILED"), __doc__,
         extra_args=lambda p: tiled_arguments(p, "GAP9", core_count, ("--cores", "--num-cores")),
         compile_options=tiled_options)
