#!/usr/bin/env python3
"""Compile a test network for Siracusa with every layer tiled into L1 (CP-SAT tiler, DMA between
the levels), cross-compile it for RV32 and run it on N cluster cores under QEMU; check its outputs
and print the modelled cycles.

    python testRunner_tiled_siracusa.py -t Tests/Models/microLlama/microLlama64_parallel --cores=8 --l1 8000 \\
        --doublebuffer --profileTiling
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from DeeployTest.testUtils.interrupt import exit_quietly_on_interrupt  # noqa: E402

if __name__ == "__main__":
    exit_quietly_on_interrupt()  # Ctrl-C during the imports below

from Deeploy.targets import get_platform  # noqa: E402
from Deeploy.tiling.flags import add_tiling_flags, tiling_options  # noqa: E402
from Deeploy.targets.siracusa.runner import core_count  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, add_profile_tiling, add_roofline  # noqa: E402
from DeeployTest.testUtils.runner import RunnerPlatform, main  # noqa: E402


def tiled_arguments(p: argparse.ArgumentParser, platform: str = "Siracusa", cores=core_count,
                    cores_flags: tuple[str, ...] = ("--cores",)) -> None:
    """The tiled runner's flags for ``platform`` (a Siracusa-family platform; ``cores`` the type
    of its ``cores_flags``): the tiling flags of ``deeploy compile`` (Deeploy.tiling.flags),
    checked against the platform's memory."""
    p.add_argument(*cores_flags, dest="cores", type=cores, default=8, help="cluster cores, 1..8")
    add_tiling_flags(p, get_platform(platform).memory)
    add_profile_tiling(p)
    add_roofline(p)
    add_peer_flags(p, platform)
    p.add_argument("--plotMemAlloc", action="store_true", help="write memory_allocation.html next to the generated code")


def tiled_options(args: argparse.Namespace) -> dict:
    return {"cores": args.cores, "tiling": tiling_options(args)}


if __name__ == "__main__":
    main(RunnerPlatform("Siracusa", "TEST_SIRACUSA_TILED"), __doc__, extra_args=tiled_arguments, compile_options=tiled_options)
