"""The Siracusa_w_neureka runners' own flags and the platform options they give the compiler."""

from __future__ import annotations

import argparse

from Deeploy.targets.siracusa_w_neureka.platform import WMEM_DEFAULT_SIZE

__all__ = ["add_neureka_flags", "neureka_options"]


def _bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of bytes") from None
    if value <= 0 or value % 32:
        raise argparse.ArgumentTypeError(f"{value} bytes: give a positive multiple of 32")
    return value


def add_neureka_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-npu-for", default="", metavar="NAME[,NAME]",
                   help="keep these layers (node names) on the cluster")
    p.add_argument("--wmem-size", type=_bytes, default=WMEM_DEFAULT_SIZE,
                   help=f"bytes of the NPU's weight memory (default {WMEM_DEFAULT_SIZE})")
    p.add_argument("--neureka-wmem", action="store_true",
                   help="place the NPU weights that save the most modelled cycles in the weight memory "
                        "(never tiled or DMA'd; the rest are DMA'd per tile)")


def neureka_options(args: argparse.Namespace) -> dict:
    """The compile option ``platform_options`` from the flags (none when all are defaults)."""
    names = [n for n in args.no_npu_for.split(",") if n]
    options = {"neureka_wmem": True} if args.neureka_wmem else {}
    if names:
        options["no_npu_for"] = names
    if args.wmem_size != WMEM_DEFAULT_SIZE:
        options["wmem_size"] = args.wmem_size
    return {"platform_options": options} if options else {}
