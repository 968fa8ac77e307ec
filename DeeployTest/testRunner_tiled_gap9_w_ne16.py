#!/usr/bin/env python3
"""Compile a test network for GAP9 with its NE16 accelerator, every layer tiled into the TCDM (L1;
NE16 reads and writes only there), cross-compile it for RV32IMFC and run it on the worker cores
under QEMU (NE16's jobs by its functional model); check its outputs and print the modelled cycles.
Flags as testRunner_tiled_gap9.py, plus --no-npu-for NAME[,NAME] (layers kept on the cluster).

    python testRunner_tiled_gap9_w_ne16.py -t Tests/Models/miniMobileNetv2 --l1 64000 --doublebuffer
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets.gap9.runner import core_count  # noqa: E402
from DeeployTest.testRunner_tiled_siracusa import tiled_arguments, tiled_options  # noqa: E402
from DeeployTest.testUtils.neureka_flags import add_npu_flags, npu_options  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

PLATFORM = "GAP9_w_ne16"

if __name__ == "__main__":
    main(RunnerPlatform(PLATFORM, "TEST_GAP9_W_NE16_TILED"), __doc__,
         extra_args=lambda p: (tiled_arguments(p, PLATFORM, core_count, ("--cores", "--num-cores")), add_npu_flags(p)),
         compile_options=lambda args: {**tiled_options(args), **npu_options(args)})
