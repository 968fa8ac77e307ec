"""How a Siracusa-family program is built, launched and read back (``TargetRunner``): the
generated linker script and the cores of a build, the QEMU run with the timing plugin and its
modelled cycles, then the profiles and the roofline of the run named from the network's manifest
(``manifest.json`` next to the generated code). ``deeploy run`` and the test runners use it."""

from __future__ import annotations

import argparse
from pathlib import Path

from Deeploy.analysis.roofline import build_roofline, format_roofline, layer_work
from Deeploy.analysis.roofline_plot import write_roofline_html
from Deeploy.codegen.memory_plot import write_manifest_plot
from Deeploy.errors import DeeployError
from Deeploy.manifest import read_manifest
from Deeploy.platform import Platform, TargetRunner
from Deeploy.targets import roofs_of
from Deeploy.targets.siracusa.execute import run_program
from Deeploy.targets.siracusa.linker import link_error_message
from Deeploy.targets.siracusa.platform import SIRACUSA
from Deeploy.targets.siracusa.profile import PROFILE_LEVELS, network_line, overhead_shares, profile_report
from Deeploy.targets.siracusa.roofs import measured_cycles
from Deeploy.targets.siracusa.trace_export import write_profile_files

__all__ = ["RUNNER", "cluster_runner", "core_count", "core_counter"]


def core_counter(target: Platform):
    """argparse type of --cores of ``target``: an integer 1..its cores."""
    cores = target.max_cores

    def core_count(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not a number of cores (1..{cores})") from None
        if not 1 <= value <= cores:
            raise argparse.ArgumentTypeError(f"{value} is outside 1..{cores}, the cores of the {target.name} cluster: "
                                             f"give 1 to {cores}")
        return value
    return core_count


core_count = core_counter(SIRACUSA)   # --cores of the Siracusa runners: 1..8


def cluster_runner(target: Platform) -> TargetRunner:
    """The runner of ``target``, a cluster on QEMU's virt machine (the Siracusa family, MemPool)
    with its linker script and cycle model (``target.timing``). The memory levels are the platform's:
    --l2 budgets the data, the code lives in the rest of the physical L2, and the linker checks
    that both fit it."""

    def build_options(options: argparse.Namespace, gen: Path) -> list[str]:
        cores = getattr(options, "cores", target.max_cores)
        if not 1 <= cores <= target.max_cores:
            raise DeeployError(f"--cores={cores} is outside 1..{target.max_cores} ({target.name} cluster): give 1 to "
                               f"{target.max_cores}")
        script = gen / "harness" / "link.ld"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(target.linker_script(target.memory))
        return [f"-DNUM_CORES={cores}", f"-DLINKER_SCRIPT={script}"]

    def execute(binary: Path, options: argparse.Namespace, gen: Path | None, timeout: float,
                compiled=None) -> tuple[int, str]:
        records = gen / "build" / "records.txt" if gen is not None else None
        run = run_program(binary, target.timing, getattr(options, "cores", None), timeout=timeout, records=records)
        out, result = run.output, run.timing
        if result is not None and gen is not None:
            profile_layers = getattr(options, "profileUntiled", False)
            profile_tiles = getattr(options, "profileTiling", None)   # None: off, "all", "tiles" or a level
            level = profile_tiles if profile_tiles in PROFILE_LEVELS else None
            if profile_layers or profile_tiles:
                manifest = read_manifest(gen / "network")
                tiles = profile_tiles not in (None, False, True, "all") or getattr(options, "verbose", False)
                out += "\n".join(profile_report(result, manifest, tiles, level)) + "\n"
                paths = write_profile_files(gen, result, manifest, level, _network(options, gen))
                out += "Profile files: " + ", ".join(str(p) for p in paths) + "\n" + network_line(result) + "\n"
            if getattr(options, "roofline", False):
                out += _roofline(result, gen, compiled, _network(options, gen))
        return run.exit_code, out

    def _network(options: argparse.Namespace, gen: Path) -> str:
        """The network's name in the profile and roofline pages: the test folder's (-t), else the output's."""
        return Path(getattr(options, "test", None) or gen).name

    def _roofline(timing, gen: Path, compiled, name: str) -> str:
        """The roofline of the run (--roofline): its text, then roofline.json and roofline.html."""
        if compiled is None:
            raise DeeployError("--roofline needs the compiler's decisions (tiling, memory plan): run without --skipgen")
        roofs = roofs_of(target.name)
        report = build_roofline(compiled, layer_work(compiled, target, roofs), roofs,
                                measured_cycles(timing, compiled.manifest), overhead_shares(timing, compiled.manifest))
        (gen / "roofline.json").write_text(report.to_json())
        page = write_roofline_html(gen / "roofline.html", report, f"Roofline: {target.name}, {name}")
        return format_roofline(report) + f"Roofline files: {gen / 'roofline.json'}, {page}\n"

    def after_compile(compiled, options: argparse.Namespace, gen: Path) -> None:
        if getattr(options, "plotMemAlloc", False):
            path = write_manifest_plot(gen / "memory_allocation.html", f"{target.name}: {_network(options, gen)}",
                                       compiled.manifest)
            print(f"Memory allocation plot: {path}")

    return TargetRunner(build_options=build_options, execute=execute, timeout=600.0,
                        explain_build_error=lambda output: link_error_message(output, target.memory),
                        after_compile=after_compile)


RUNNER = cluster_runner(SIRACUSA)
