"""How a GAP9 program is built, run and read back: the cluster runner of the Siracusa family
(``Deeploy.targets.siracusa.runner``) with GAP9's linker script, cores and cycle model; QEMU runs
the cluster controller as a ninth hart."""

from Deeploy.targets.gap9.platform import GAP9
from Deeploy.targets.siracusa.runner import cluster_runner, core_counter

__all__ = ["RUNNER", "core_count"]

RUNNER = cluster_runner(GAP9)
_worker_cores = core_counter(GAP9)


def core_count(text: str) -> int:
    """argparse type of --cores: worker cores 1..8; 9, the count with the cluster controller,
    means all 8."""
    return GAP9.max_cores if text.strip() == str(GAP9.max_cores + 1) else _worker_cores(text)
