#!/usr/bin/env python3
"""Compile a test network for the Generic platform, build it as host C and check its outputs.

    python testRunner_generic.py -t Tests/Models/miniMobileNetv2
    python testRunner_generic.py -t Tests/Models/miniMobileNetv2 --sanitize   # ASan + UBSan build
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from DeeployTest.testUtils.profile_flags import add_peer_flags, refuse_flag  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402

GENERIC = RunnerPlatform("Generic", "TEST_GENERIC")

if __name__ == "__main__":
    main(GENERIC, __doc__, extra_args=lambda p: (p.add_argument(
        "--sanitize", action="store_true", help="build with -fsanitize=address,undefined -fno-sanitize-recover=all"),
        add_peer_flags(p, "Generic"),
        refuse_flag(p, "--roofline", "Generic has no cycle model: use testRunner_siracusa.py --roofline "
                    "(or the tiled runner)")))
