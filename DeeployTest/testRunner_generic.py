#!/usr/bin/env python3
"""Compile a test network for the Generic platform, build it as host C and check its outputs.

    python testRunner_generic.py -t Tests/Models/miniMobileNetv2
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

GENERIC = RunnerPlatform(platform="Generic", gen_root="TEST_GENERIC", cmake_platform="Generic")

if __name__ == "__main__":
    main(GENERIC, __doc__)
