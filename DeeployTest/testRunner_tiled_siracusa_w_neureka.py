#!/usr/bin/env python3
"""Compile a test network for Siracusa_w_neureka (Siracusa with its Neureka NPU and weight
memory) with every layer tiled into L1, cross-compile it for RV32 and run it on N cluster cores
under QEMU; check its outputs and print the modelled cycles. Flags as testRunner_tiled_siracusa.py,
plus --no-npu-for NAME[,NAME] (layers kept on the cluster), --wmem-size BYTES and --neureka-wmem
(NPU weights in the weight memory: never tiled or DMA'd).

    python testRunner_tiled_siracusa_w_neureka.py -t Tests/Models/miniMobileNetv2 --cores=8 --l1 64000
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from DeeployTest.testRunner_tiled_siracusa import tiled_arguments, tiled_options  # noqa: E402
from DeeployTest.testUtils.neureka_flags import add_neureka_flags, neureka_options  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

PLATFORM = "Siracusa_w_neureka"

if __name__ == "__main__":
    main(RunnerPlatform(PLATFORM, "TEST_SIRACUSA_W_NEUREKA_TILED"), __doc__,
         extra_args=lambda p: (tiled_arguments(p, PLATFORM), add_neureka_flags(p)),
         compile_options=lambda args: {**tiled_options(args), **neureka_options(args)})
