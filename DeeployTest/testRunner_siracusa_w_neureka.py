#!/usr/bin/env python3
"""Compile a test network for Siracusa_w_neureka (Siracusa with its Neureka NPU and weight
memory), cross-compile it for RV32 and run it on N cluster cores under QEMU; check its outputs
and print the modelled cycles. Flags as testRunner_siracusa.py, plus --no-npu-for NAME[,NAME]
(layers kept on the cluster), --wmem-size BYTES and --neureka-wmem (NPU weights in the weight
memory: never tiled or DMA'd).

    python testRunner_siracusa_w_neureka.py -t Tests/Models/miniMobileNetv2 --cores=8
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from DeeployTest.testUtils.neureka_flags import add_neureka_flags, neureka_options  # noqa: E402
from Deeploy.targets.siracusa.runner import core_count  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, add_roofline  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

if __name__ == "__main__":
    main(RunnerPlatform("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA"), __doc__,
         extra_args=lambda p: (p.add_argument("--cores", type=core_count, default=8, help="cluster cores, 1..8"),
                               p.add_argument("--profileUntiled", action="store_true",
                                              help="print modelled cycles per layer and write profile.json, "
                                                   "trace.json and profile.html next to the generated code"),
                               p.add_argument("--plotMemAlloc", action="store_true",
                                              help="write memory_allocation.html next to the generated code"),
                               add_roofline(p),
                               add_peer_flags(p, "Siracusa_w_neureka"), add_neureka_flags(p)),
         compile_options=lambda args: {"cores": args.cores, **neureka_options(args)})
