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
from Deeploy.tiling.network import LEVELS, TilingOptions, level_limits  # noqa: E402
from DeeployTest.testUtils.siracusa_runner import cluster_runner, core_count  # noqa: E402
from DeeployTest.testUtils.profile_flags import add_peer_flags, add_profile_tiling  # noqa: E402
from DeeployTest.testUtils.runner import main  # noqa: E402


def _bytes(level: str, platform: str = "Siracusa"):
    """argparse type of --l1 / --l2: a positive number of bytes the platform's memory level holds."""
    most, why = level_limits(get_platform(platform).memory)[level]

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number of bytes") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{value} bytes: must be positive")
        if value > most:
            raise argparse.ArgumentTypeError(f"{value} bytes is more than the platform's {level} allows "
                                             f"({most} B: {why})")
        return value
    return parse


def tiled_arguments(p: argparse.ArgumentParser, platform: str = "Siracusa") -> None:
    """The tiled runner's flags for ``platform`` (a Siracusa-family platform)."""
    defaults = TilingOptions()
    p.add_argument("--cores", type=core_count, default=8, help="cluster cores, 1..8")
    p.add_argument("--l1", type=_bytes("L1", platform), default=defaults.l1,
                   help=f"L1 bytes for one layer's tiles (default {defaults.l1})")
    p.add_argument("--l2", type=_bytes("L2", platform), default=defaults.l2,
                   help=f"L2 bytes for data; code lives in the rest of L2 (default {defaults.l2})")
    p.add_argument("--defaultMemLevel", choices=LEVELS, default=defaults.default_level,
                   help="where graph inputs, outputs and constants live (default: L2, with the constants "
                        "that do not fit --l2 moved to L3)")
    p.add_argument("--doublebuffer", action="store_true", help="prefetch the next tile while computing this one")
    add_profile_tiling(p)
    add_peer_flags(p, platform)
    p.add_argument("--plotMemAlloc", action="store_true", help="write memory_allocation.html next to the generated code")


def tiled_options(args: argparse.Namespace) -> dict:
    return {"cores": args.cores, "tiling": TilingOptions(args.l1, args.l2, args.defaultMemLevel, args.doublebuffer)}


if __name__ == "__main__":
    main(cluster_runner("Siracusa", "TEST_SIRACUSA_TILED"), __doc__, extra_args=tiled_arguments, compile_options=tiled_options)
