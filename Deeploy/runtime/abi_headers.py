"""Generates the C headers of ``abi.py``: the runtime's ``deeploy_abi.h`` (marker ids, tile-table
structs) and the timing plugin's ``deeploy_markers.h`` (the marker ids it decodes).

    python -m Deeploy.runtime.abi_headers          # rewrite the headers
    python -m Deeploy.runtime.abi_headers --check  # exit 1 if a header differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from Deeploy.resources import data_root
from Deeploy.runtime import abi

__all__ = ["REPO", "RUNTIME_HEADER", "PLUGIN_HEADER", "render_headers", "write_headers", "stale_headers"]

REPO = data_root()   # the folder holding TargetLibraries/ and toolchain/ (the repository in a checkout)
RUNTIME_HEADER = Path("TargetLibraries/PULPOpen/inc/deeploy_abi.h")
PLUGIN_HEADER = Path("toolchain/qemu_plugin/deeploy_markers.h")
_SOURCE = "Deeploy/runtime/abi.py"
_COMMAND = "python -m Deeploy.runtime.abi_headers"


def _banner(what: str) -> list[str]:
    return [f"/* Generated from {_SOURCE} by `{_COMMAND}`: do not edit.",
            f" * {what} */"]


def _define(name: str, value: str, doc: str) -> str:
    return f"#define {name} {value}" + (f" /* {doc} */" if doc else "")


def _marker_lines(plugin_only: bool) -> list[str]:
    return [_define(m.c_name, str(m.value) if m.count else f"0x{m.value:03x}", m.doc)
            for m in abi.MARKERS if m.plugin or not plugin_only]


def _struct_lines(s: abi.CStruct) -> list[str]:
    lines = [f"/* {s.doc} */", "typedef struct {"]
    for f in s.fields:
        lines.append(f"  {f.declaration()}" + (f" /* {f.doc} */" if f.doc else ""))
    return lines + [f"}} {s.c_name};"]


def _runtime_header() -> str:
    lines = _banner("Marker ids (`slti x0, x0, ID`) and the tables of tiled layers shared by the generated code,\n"
                    " * the runtime (deeploy_runtime.h, deeploy_dma.h, deeploy_tiling.h), the QEMU timing plugin and\n"
                    " * the cycle model. In the wait-region range an even id stops counting a hart, an odd one\n"
                    " * resumes it; all other ids leave counting as it is.")
    lines += ["#ifndef DEEPLOY_ABI_H", "#define DEEPLOY_ABI_H", "", "#include <stdint.h>", "",
              "/* ---- marker ids ---- */"]
    lines += _marker_lines(plugin_only=False)
    lines += ["#define DEEPLOY_RT_DMA_ENGINE(e) (DEEPLOY_RT_DMA_ENGINE_BASE + (e)) /* e = 0..MAX_ENGINES-1 */", "",
              "/* ---- tables of tiled layers (read by deeploy_run_tiled) ---- */"]
    lines += [_define(name, str(value), doc) for name, value, doc in abi.TILE_LIMITS + abi.TILE_SYNC]
    for s in abi.TILE_STRUCTS:
        lines += [""] + _struct_lines(s)
    return "\n".join(lines + ["", "#endif", ""])


def _plugin_header() -> str:
    lines = _banner("Marker ids the QEMU timing plugin decodes (deeploy_timing.c).")
    lines += ["#ifndef DEEPLOY_MARKERS_H", "#define DEEPLOY_MARKERS_H", ""]
    lines += _marker_lines(plugin_only=True)
    return "\n".join(lines + ["", "#endif", ""])


def render_headers() -> dict[Path, str]:
    """Path (relative to the repository) -> content of every generated header."""
    return {RUNTIME_HEADER: _runtime_header(), PLUGIN_HEADER: _plugin_header()}


def stale_headers(repo: Path = REPO) -> list[Path]:
    """The generated headers whose committed content differs from a fresh rendering."""
    return [p for p, text in render_headers().items()
            if not (repo / p).is_file() or (repo / p).read_text() != text]


def write_headers(repo: Path = REPO) -> list[Path]:
    """Rewrites the headers that changed; returns them."""
    stale = stale_headers(repo)
    rendered = render_headers()
    for p in stale:
        (repo / p).parent.mkdir(parents=True, exist_ok=True)
        (repo / p).write_text(rendered[p])
    return stale


def main(argv: list[str] | None = None, repo: Path = REPO) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only report headers that differ (exit 1)")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_headers(repo)
        for p in stale:
            print(f"error: {p} is out of date with {_SOURCE}: run `{_COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for p in write_headers(repo):
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
