"""Runner plumbing of the cluster platforms on the QEMU virtual platform: generated linker
script, cross build, QEMU run with the timing plugin, modelled cycles."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

from Deeploy.errors import DeeployError
from Deeploy.targets import get_platform
from Deeploy.codegen.memory_plot import write_memory_plot
from Deeploy.memory.report import memory_levels
from Deeploy.targets.siracusa.linker import link_error_message, linker_script
from Deeploy.targets.siracusa.profile import tiling_profile
from Deeploy.targets.siracusa.qemu import run_elf
from Deeploy.targets.siracusa.timing import model_cycles
from DeeployTest.testUtils.runner import RunnerPlatform

__all__ = ["cluster_runner", "core_count", "layer_profile"]


def core_count(text: str) -> int:
    """argparse type of --cores: an integer 1..8 (the Siracusa cluster)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of cores (1..8)") from None
    if not 1 <= value <= 8:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..8, the cores of the Siracusa cluster")
    return value


def layer_profile(result, layer_names: list[str]) -> list[str]:
    lines = []
    for k, cycles in sorted(result.per_layer().items()):
        name = layer_names[k] if k < len(layer_names) else f"layer {k}"
        lines.append(f"  [{k:3d}] {name}: {cycles:.0f} cycles")
    return lines


def _layer_titles(network_dir: Path) -> list[str]:
    """Layer titles from the generated RunNetwork comments ("k: Op 'name' -> kernel")."""
    titles = []
    for line in (network_dir / "Network.c").read_text().splitlines():
        line = line.strip()
        if line.startswith("/* ") and ": " in line and "->" in line and line[3:4].isdigit():
            titles.append(line[3:-3].split(": ", 1)[1])
    return titles


def _memory(target, args: argparse.Namespace):
    """The platform's memory levels, L2 sized by --l2 when given."""
    l2 = getattr(args, "l2", None)
    return tuple(replace(m, size=l2) if m.name == "L2" and l2 else m for m in target.memory)


def cluster_runner(platform: str, gen_root: str) -> RunnerPlatform:
    target = get_platform(platform)

    def prepare(args: argparse.Namespace, gen: Path) -> list[str]:
        if not 1 <= args.cores <= target.max_cores:
            raise DeeployError(f"--cores={args.cores} is outside 1..{target.max_cores} ({platform} cluster)")
        script = gen / "harness" / "link.ld"
        script.parent.mkdir(parents=True, exist_ok=True)
        memory["levels"] = _memory(target, args)
        script.write_text(linker_script(memory["levels"]))
        return [f"-DNUM_CORES={args.cores}", f"-DLINKER_SCRIPT={script}"]

    def execute(binary: Path, args: argparse.Namespace, gen: Path, timeout: float) -> tuple[int, str]:
        run = run_elf(binary, args.cores, timeout=timeout, records=gen / "build" / "records.txt")
        out = run.stdout
        if run.records is not None and "Errors:" in out:
            result = model_cycles(run.records, target.timing)
            network = sum(layer.cycles for layer in result.layers)
            out += ("" if out.endswith("\n") else "\n") + f"Runtime: {network:.0f} cycles\n"
            if getattr(args, "profileUntiled", False):
                out += "\n".join(["Per-layer modelled cycles:"] + layer_profile(result, _layer_titles(gen / "network"))) + "\n"
            manifest = gen / "network" / "tiling.json"
            if getattr(args, "profileTiling", False) and manifest.is_file():
                out += "\n".join(tiling_profile(result, json.loads(manifest.read_text()))) + "\n"
        return run.exit_code, out

    memory = {"levels": target.memory}

    def explain(output: str) -> str | None:
        return link_error_message(output, memory["levels"])

    def after_compile(result, args: argparse.Namespace, gen: Path) -> None:
        if getattr(args, "plotMemAlloc", False):
            steps, levels = memory_levels(result, target)
            path = write_memory_plot(gen / "memory_allocation.html", f"{platform}: {gen.name}", steps, levels)
            print(f"Memory allocation plot: {path}")

    return RunnerPlatform(platform=platform, gen_root=gen_root, cmake_platform=target.cmake_platform,
                          execute=execute, prepare=prepare, timeout=600.0, harness_runs=1, harness_section=".l3_rodata",
                          explain_build_error=explain, after_compile=after_compile)
