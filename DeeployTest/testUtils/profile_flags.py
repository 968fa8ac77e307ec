"""Runner flags of the profiles and the peer's runners' flags that mean something here.

``--profileTiling`` prints the summary and the layers; with a value also the tiles' phases:
``tiles`` (every tile loop) or a level (``--profileTiling=L2``, ``--profileTiling L3``), see
``Deeploy/targets/siracusa/profile.py``. The peer's ``-p``/``--platform``
names the platform: accepted when it is this runner's, refused with the runner to use otherwise.
``--toolchain=GCC`` is accepted (the cross compiler is GCC); LLVM is refused with a hint."""

from __future__ import annotations

import argparse

from Deeploy.targets.siracusa.profile import PROFILE_LEVELS

__all__ = ["add_profile_tiling", "add_peer_flags", "refuse_flag", "add_roofline"]

RUNNERS = {"generic": "testRunner_generic.py", "cortexm": "testRunner_cortexm.py",
           "gap9": "testRunner_gap9.py or testRunner_tiled_gap9.py",
           "gap9_w_ne16": "testRunner_tiled_gap9_w_ne16.py",
           "siracusa": "testRunner_siracusa.py or testRunner_tiled_siracusa.py",
           "siracusa_w_neureka": "testRunner_siracusa_w_neureka.py or testRunner_tiled_siracusa_w_neureka.py",
           "mempool": "testRunner_mempool.py", "snitch": "testRunner_snitch.py or testRunner_tiled_snitch.py"}


def _level(text: str) -> str:
    level = text.upper()
    if text.lower() in ("all", "tiles"):          # the bare flag (the layers); every tile loop's phases
        return text.lower()
    if level not in PROFILE_LEVELS:
        raise argparse.ArgumentTypeError(f"'{text}' is not a memory level: L2 (or L1) profiles the L2 <-> L1 tiles, "
                                         "L3 the L3 <-> L2 staging tiles, 'tiles' both; without a value, the layers")
    return level


def add_profile_tiling(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profileTiling", nargs="?", const="all", default=None, type=_level, metavar="LEVEL",
                   help="print a summary of the modelled cycles (split, op types, largest layers and loss) and every "
                        "layer's cycles, and write profile.json, trace.json and profile.html next to the generated "
                        "code; with LEVEL also every tile's phases: 'tiles' (or -v) every tile loop, L2 (or L1) the "
                        "L2 <-> L1 tiles only, L3 the L3 <-> L2 staging tiles only")


def add_peer_flags(p: argparse.ArgumentParser, platform: str) -> None:
    """-p/--platform and --toolchain as the peer's runners take them."""

    def check_platform(text: str) -> str:
        if text.lower() != platform.lower():
            other = RUNNERS.get(text.lower())
            hint = f"use {other}" if other else f"the platforms are {', '.join(sorted(RUNNERS))}"
            raise argparse.ArgumentTypeError(f"this runner compiles for {platform}, not '{text}': {hint}")
        return platform

    def check_toolchain(text: str) -> str:
        if text.upper() != "GCC":
            raise argparse.ArgumentTypeError(f"'{text}': the {platform} runners build with GCC only; drop --toolchain "
                                             "or pass --toolchain=GCC")
        return "GCC"

    p.add_argument("-p", "--platform", type=check_platform, default=platform,
                   help=f"the platform (this runner: {platform}; accepted for the peer's command lines)")
    p.add_argument("--toolchain", type=check_toolchain, default="GCC", help="the compiler toolchain: GCC")


def refuse_flag(p: argparse.ArgumentParser, flag: str, hint: str) -> None:
    """``flag`` (with or without a value) refused with ``hint``, for a flag of another runner."""

    def refuse(text: str) -> str:
        raise argparse.ArgumentTypeError(hint)

    p.add_argument(flag, nargs="?", const="", default=None, type=refuse, help=argparse.SUPPRESS)


def add_roofline(p: argparse.ArgumentParser) -> None:
    p.add_argument("--roofline", action="store_true",
                   help="print every layer's ops, bytes per memory level, arithmetic intensity, modelled cycles and "
                        "roofs, and write roofline.json and roofline.html next to the generated code")
