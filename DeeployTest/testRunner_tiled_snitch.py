#!/usr/bin/env python3
"""Compile a test network for Snitch with every layer tiled into the TCDM (L1; CP-SAT tiler, the
cluster DMA between main memory and L1), cross-compile it for RV32IMAFD and run it on the cluster
under QEMU; check its outputs and print the modelled cycles.

    python testRunner_tiled_snitch.py -t Tests/Models/Float/Llama --l1 10000 --profileTiling
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.snitch.runner import core_count  # noqa: E402
from DeeployTest.testRunner_tiled_siracusa import tiled_arguments, tiled_options  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("Snitch", "TEST_SNITCH_TILED"), __doc__,
         extra_args=lambda p: tiled_arguments(p, "Snitch", core_count, ("--cores", "--num-cores")),
         compile_options=tiled_options)
