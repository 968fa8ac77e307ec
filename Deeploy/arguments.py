"""The argument parser of the command lines (``deeploy`` and the test runners): every long option
takes both spellings (``--profileTiling`` and ``--profile-tiling``, ``--emit-testbench`` and
``--emitTestbench``), an unknown option gets the nearest known one ("did you mean"), and
``--platform`` names the platforms, takes them in any case and suggests the nearest."""

from __future__ import annotations

import argparse
import difflib
import re

from Deeploy.passes.loop_flags import add_loop_flags, loop_rolling_options
from Deeploy.tiling.flags import add_tiling_flags, tiling_options

__all__ = ["ArgumentParser", "other_spelling", "platform_name", "add_platform_flag"]


def other_spelling(option: str) -> str:
    """``--camelCase`` as ``--camel-case`` and ``--kebab-case`` as ``--kebabCase``."""
    if re.search(r"[a-z0-9][A-Z]", option):
        return re.sub(r"(?<=[a-z0-9])([A-Z])", lambda m: "-" + m.group(1).lower(), option)
    return "--" + re.sub(r"-([a-z])", lambda m: m.group(1).upper(), option[2:])


class ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with both spellings of every long option and "did you mean"."""

    def _add_action(self, action: argparse.Action) -> argparse.Action:
        for option in list(action.option_strings):
            other = other_spelling(option) if option.startswith("--") else option
            if other not in action.option_strings and other not in self._option_string_actions:
                action.option_strings.append(other)
        return super()._add_action(action)

    def _options(self) -> list[str]:
        """Every option string of this parser and its subcommands."""
        options = list(self._option_string_actions)
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                options += [o for sub in action.choices.values() for o in sub._option_string_actions]
        return options

    def error(self, message: str):
        # "argument -p/--platform: ..." names the option once, by its first long name: "--platform: ..."
        message = re.sub(r"^argument ([^:]+): ", lambda m: next(
            (o for o in m.group(1).split("/") if o.startswith("--")), m.group(1)) + ": ", message)
        unknown = re.match(r"unrecognized arguments: (.*)", message)
        if unknown:
            hints = []
            for arg in unknown.group(1).split():
                flag = arg.split("=")[0]
                close = difflib.get_close_matches(flag, self._options(), n=1, cutoff=0.6) if flag.startswith("-") else []
                if close:
                    hints.append(f"did you mean {close[0]} (for {flag})?")
            message += "; " + ("; ".join(hints) if hints else f"{self.prog} --help lists the options")
        super().error(message)


def platform_name(text: str) -> str:
    """argparse type of ``--platform``: a platform's name in any case."""
    from Deeploy.targets import platforms
    names = list(platforms())
    lower = {n.lower(): n for n in names}
    if text.lower() in lower:
        return lower[text.lower()]
    close = difflib.get_close_matches(text.lower(), list(lower), n=1, cutoff=0.5)
    hint = f"did you mean {lower[close[0]]}?" if close else f"use one of {', '.join(names)}"
    raise argparse.ArgumentTypeError(f"unknown platform '{text}': {hint}")


def add_platform_flag(p: argparse.ArgumentParser, default: str = "Generic") -> None:
    from Deeploy.targets import platforms
    p.add_argument("--platform", type=platform_name, default=default, metavar="NAME",
                   help=f"the target platform: {', '.join(platforms())} (any case; default {default})")


def add_platform_options(p: argparse.ArgumentParser) -> None:
    """The flags of ``_platform_options``, for every command that compiles."""
    p.add_argument("--no-npu-for", default="", metavar="NAME[,NAME]",
                   help="platforms with an NPU (Siracusa_w_neureka, GAP9_w_ne16): keep these layers on the cluster")
    p.add_argument("--wmem-size", type=int, default=None, metavar="BYTES",
                   help="platforms with an NPU weight memory: its size (default 4 MiB)")
    p.add_argument("--neureka-wmem", action="store_true",
                   help="platforms with an NPU weight memory: place the NPU weights that save the most "
                        "modelled cycles in it (never tiled or DMA'd)")
    p.add_argument("--cpu", default=None, metavar="CORE",
                   help="CortexM: the core and its board, cortex-m4 (default, mps2-an386) or cortex-m55 (mps3-an547)")
    p.add_argument("--sram", type=int, default=None, metavar="BYTES",
                   help="CortexM: SRAM the program may use, stack included (default: all of the board's)")


def platform_options(args) -> dict | None:
    """Options of the platform itself (its ``configure``): NPU exclusions, weight-memory size and
    placement, the Cortex-M core and its SRAM budget."""
    options = {}
    if args.neureka_wmem:
        options["neureka_wmem"] = True
    if args.no_npu_for:
        options["no_npu_for"] = [n for n in args.no_npu_for.split(",") if n]
    if args.wmem_size is not None:
        options["wmem_size"] = args.wmem_size
    if args.cpu is not None:
        options["cpu"] = args.cpu
    if args.sram is not None:
        options["sram"] = args.sram
    return options or None


def add_compile_flags(p: argparse.ArgumentParser) -> None:
    """The flags deciding what ``deeploy compile`` generates (cores, tiling, loop rolling, NPU
    options); ``deeploy sweep`` configs name them without the dashes."""
    p.add_argument("--cores", type=int, default=None,
                   help="cluster cores the code will run on (cluster platforms; default: all)")
    add_tiling_flags(p)
    add_loop_flags(p)
    add_platform_options(p)


def compile_options(args) -> dict:
    """The keyword arguments of ``compile_graph`` that the flags of ``add_compile_flags`` ask for."""
    return {"cores": args.cores, "tiling": tiling_options(args), "platform_options": platform_options(args),
            "loop_rolling": loop_rolling_options(args)}
