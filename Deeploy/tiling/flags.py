"""The tiling flags of the command line, as the test runners spell them (``--l1``, ``--l2``,
``--defaultMemLevel``, ``--doublebuffer``), for every ``deeploy`` command that compiles. Giving
any of them tiles every layer into L1; the platform's limits are checked when compiling."""

from __future__ import annotations

import argparse

from Deeploy.tiling.network import LEVELS, TilingOptions

__all__ = ["add_tiling_flags", "tiling_options", "positive_bytes"]


def positive_bytes(text: str) -> int:
    """argparse type of --l1 / --l2: a positive number of bytes."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of bytes") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} bytes: must be positive")
    return value


def add_tiling_flags(p: argparse.ArgumentParser) -> None:
    d = TilingOptions()
    p.add_argument("--l1", type=positive_bytes, default=None,
                   help=f"tile every layer into L1, with this many bytes for one layer's tiles (default {d.l1})")
    p.add_argument("--l2", type=positive_bytes, default=None,
                   help=f"L2 bytes for data when tiling; code lives in the rest of L2 (default {d.l2})")
    p.add_argument("--defaultMemLevel", choices=LEVELS, default=None,
                   help="where graph inputs, outputs and constants live when tiling (default: L2, with the "
                        "constants that do not fit --l2 moved to L3)")
    p.add_argument("--doublebuffer", action="store_true", help="tiling: prefetch the next tile while computing one")


def tiling_options(args: argparse.Namespace) -> TilingOptions | None:
    """The TilingOptions the flags ask for, None if none was given (layers run untiled)."""
    if args.l1 is None and args.l2 is None and args.defaultMemLevel is None and not args.doublebuffer:
        return None
    d = TilingOptions()
    return TilingOptions(args.l1 or d.l1, args.l2 or d.l2, args.defaultMemLevel, args.doublebuffer)
