"""The NPU runners' own flags and the platform options they give the compiler: every NPU target's
``--no-npu-for`` (``add_npu_flags``), and Siracusa_w_neureka's weight-memory flags."""

from __future__ import annotations

import argparse

from Deeploy.targets.siracusa_w_neureka.platform import WMEM_DEFAULT_SIZE

__all__ = ["add_npu_flags", "npu_options", "add_neureka_flags", "neureka_options"]


def _bytes(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of bytes") from None
    if value <= 0 or value % 32:
        raise argparse.ArgumentTypeError(f"{value} bytes: give a positive multiple of 32")
    return value


def add_npu_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-npu-for", default="", metavar="NAME[,NAME]",
                   help="keep these layers (node names) on the cluster")


def npu_options(args: argparse.Namespace) -> dict:
    """The compile option ``platform_options`` of ``--no-npu-for`` (none without names)."""
    names = [n for n in args.no_npu_for.split(",") if n]
    return {"platform_options": {"no_npu_for": names}} if names else {}


def add_neureka_flags(p: argparse.ArgumentParser) -> None:
    add_npu_flags(p)
    p.add_argument("--wmem-size", type=_bytes, default=WMEM_DEFAULT_SIZE,
                   help=f"bytes of the NPU's weight memory (default {WMEM_DEFAULT_SIZE})")
    p.add_argument("--neureka-wmem", action="store_true",
                   help="place the NPU weights that save the most modelled cycles in the weight memory "
                        "(never tiled or DMA'd; the rest are DMA'd per tile)")


def neureka_options(args: argparse.Namespace) -> dict:
    """The compile option ``platform_options`` from the flags (none when all are defaults)."""
    options = {"neureka_wmem": True} if args.neureka_wmem else {}
    options.update(npu_options(args).get("platform_options", {}))
    if args.wmem_size != WMEM_DEFAULT_SIZE:
        options["wmem_size"] = args.wmem_size
    return {"platform_options": options} if options else {}
