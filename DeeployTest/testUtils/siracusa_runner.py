"""The Siracusa side of the test runners: generated linker script, cross build, QEMU run with
the timing plugin, modelled cycles, and the profiles and memory plot named from the network's
manifest (``manifest.json`` next to the generated code)."""

from __future__ import annotations

import argparse
from pathlib import Path

from Deeploy.analysis.roofline import build_roofline, format_roofline, layer_work
from Deeploy.analysis.roofline_plot import write_roofline_html
from Deeploy.codegen.memory_plot import write_manifest_plot
from Deeploy.errors import DeeployError
from Deeploy.manifest import read_manifest
from Deeploy.targets import get_platform, roofs_of
from Deeploy.targets.siracusa.linker import link_error_message, linker_script
from Deeploy.targets.siracusa.profile import layer_profile, network_line, tiling_profile
from Deeploy.targets.siracusa.roofs import measured_cycles
from Deeploy.targets.siracusa.trace_export import write_profile_files
from Deeploy.targets.siracusa.execute import last_run, run_program  # noqa: F401 (last_run: re-exported)
from DeeployTest.testUtils.runner import RunnerPlatform

__all__ = ["cluster_runner", "core_count", "last_run"]


def core_count(text: str) -> int:
    """argparse type of --cores: an integer 1..8 (the Siracusa cluster)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number of cores (1..8)") from None
    if not 1 <= value <= 8:
        raise argparse.ArgumentTypeError(f"{value} is outside 1..8, the cores of the Siracusa cluster")
    return value


def _memory(target, args: argparse.Namespace):
    """The platform's memory levels as they are: --l2 budgets the data, the code lives in the
    rest of the physical L2, and the linker checks that both fit it."""
    return target.memory


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
        run = run_program(binary, target.timing, args.cores, timeout=timeout, records=gen / "build" / "records.txt")
        out, result = run.output, run.timing
        if result is not None:
            profile_layers = getattr(args, "profileUntiled", False)
            profile_tiles = getattr(args, "profileTiling", None)   # None: off, "all" or a level
            level = None if profile_tiles in (None, False, True, "all") else profile_tiles
            if profile_layers or profile_tiles:
                manifest = read_manifest(gen / "network")
                if profile_layers:
                    out += "\n".join(["Per-layer modelled cycles:"] + layer_profile(result, manifest)) + "\n"
                if profile_tiles and manifest.tiles:
                    out += "\n".join(tiling_profile(result, manifest, level)) + "\n"
                paths = write_profile_files(gen, result, manifest, level, gen.name)
                out += "Profile files: " + ", ".join(str(p) for p in paths) + "\n" + network_line(result) + "\n"
            if getattr(args, "roofline", False):
                out += _roofline(result, gen)
        return run.exit_code, out

    def _roofline(timing, gen: Path) -> str:
        """The roofline of the run (--roofline): its text, then roofline.json and roofline.html."""
        if "compiled" not in roofline:
            raise DeeployError("--roofline needs the compiler's decisions (tiling, memory plan): run without --skipgen")
        compiled, work = roofline["compiled"]
        report = build_roofline(compiled, work, roofs_of(platform), measured_cycles(timing, compiled.manifest))
        (gen / "roofline.json").write_text(report.to_json())
        page = write_roofline_html(gen / "roofline.html", report, f"Roofline: {platform}, {gen.name}")
        return format_roofline(report) + f"Roofline files: {gen / 'roofline.json'}, {page}\n"

    memory = {"levels": target.memory}
    roofline = {}   # --roofline: the compile result and its layers' work, from after_compile

    def explain(output: str) -> str | None:
        return link_error_message(output, memory["levels"])

    def after_compile(result, args: argparse.Namespace, gen: Path) -> None:
        if getattr(args, "roofline", False):
            roofline["compiled"] = (result, layer_work(result, target, roofs_of(platform)))
        if getattr(args, "plotMemAlloc", False):
            path = write_manifest_plot(gen / "memory_allocation.html", f"{platform}: {gen.name}", result.manifest)
            print(f"Memory allocation plot: {path}")

    return RunnerPlatform(platform=platform, gen_root=gen_root, cmake_platform=target.cmake_platform,
                          execute=execute, prepare=prepare, timeout=600.0, harness_runs=2, harness_section=target.reference_section,
                          explain_build_error=explain, after_compile=after_compile)
