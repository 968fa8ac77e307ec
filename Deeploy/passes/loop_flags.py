"""The loop-rolling flags of the command line (``--loop-rolling``, ``--loop-body-hierarchy``),
shared by the ``deeploy`` commands that compile and by every test runner."""

from __future__ import annotations

import argparse

from Deeploy.passes.loop_hierarchy import parse_hierarchy
from Deeploy.passes.loop_rolling import LoopRolling

__all__ = ["add_loop_flags", "loop_rolling_options"]


def add_loop_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--loop-rolling", action="store_true",
                   help="find blocks repeated back to back (e.g. decoder layers) and record each run as a loop region")
    p.add_argument("--loop-body-hierarchy", action="append", default=[], metavar="GROUP,BODY",
                   help="a loop body by module path, e.g. encoder,encoder.layer.0: all instances encoder.layer.<i> "
                        "(pkg.torch.onnx.name_scopes metadata, else node-name prefixes); repeatable")


def loop_rolling_options(args: argparse.Namespace) -> LoopRolling | None:
    """The LoopRolling the flags ask for, None if neither was given (argparse errors on a bad body)."""
    if not args.loop_rolling and not args.loop_body_hierarchy:
        return None
    return LoopRolling(args.loop_rolling, tuple(parse_hierarchy(text) for text in args.loop_body_hierarchy))
