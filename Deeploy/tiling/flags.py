"""The tiling flags of the command line (``--l1``, ``--l2``, ``--defaultMemLevel``,
``--doublebuffer``), shared by every ``deeploy`` command that compiles and the tiled test runners.
For the commands, giving any of them tiles every layer into L1 (the platform's limits are checked
when compiling); the tiled runners always tile and check the limits while parsing."""

from __future__ import annotations

import argparse

from Deeploy.tiling.network import LEVELS, TilingOptions, level_limits

__all__ = ["add_tiling_flags", "tiling_options", "positive_bytes", "level_bytes"]


def positive_bytes(text: str) -> int:
    """argparse type of --l1 / --l2: a positive number of bytes."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of bytes") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} bytes: must be positive")
    return value


def level_bytes(level: str, memory):
    """argparse type of --l1 / --l2: a positive number of bytes that the memory level ``level``
    of a platform's ``memory`` holds."""
    most, _ = level_limits(memory)[level]

    def parse(text: str) -> int:
        value = positive_bytes(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"{value} bytes is more than the platform's {level} allows: "
                                             f"use {most} or less")
        return value
    return parse


def add_tiling_flags(p: argparse.ArgumentParser, memory=None) -> None:
    """The four flags. ``memory`` (a platform's memory levels): the tiled runners' form, which
    always tiles (the defaults are TilingOptions') and checks --l1/--l2 against the platform."""
    d = TilingOptions()
    always = memory is not None
    when = "" if always else " when tiling"
    l1_type, l2_type = (level_bytes("L1", memory), level_bytes("L2", memory)) if always else (positive_bytes,) * 2
    p.add_argument("--l1", type=l1_type, default=d.l1 if always else None,
                   help=("L1 bytes for one layer's tiles" if always else
                         "tile every layer into L1, with this many bytes for one layer's tiles") + f" (default {d.l1})")
    p.add_argument("--l2", type=l2_type, default=d.l2 if always else None,
                   help=f"L2 bytes for data{when}; code lives in the rest of L2 (default {d.l2})")
    p.add_argument("--defaultMemLevel", choices=LEVELS, default=d.default_level,
                   help=f"where graph inputs, outputs and constants live{when} (default: L2, with the "
                        "constants that do not fit --l2 moved to L3)")
    p.add_argument("--doublebuffer", action="store_true",
                   help=f"{'' if always else 'tiling: '}prefetch the next tile while computing this one, in "
                        "each layer where that lowers the modelled cycles (-v prints each layer's choice)")


def tiling_options(args: argparse.Namespace) -> TilingOptions | None:
    """The TilingOptions the flags ask for, None if none was given (layers run untiled)."""
    if args.l1 is None and args.l2 is None and args.defaultMemLevel is None and not args.doublebuffer:
        return None
    d = TilingOptions()
    return TilingOptions(args.l1 or d.l1, args.l2 or d.l2, args.defaultMemLevel, args.doublebuffer)
