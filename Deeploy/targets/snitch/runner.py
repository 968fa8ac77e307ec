"""How a Snitch program is built, run and read back: the cluster runner of the Siracusa family
(``Deeploy.targets.siracusa.runner``) with Snitch's linker script, cores and cycle model; QEMU
runs the data-mover core as a ninth hart."""

from Deeploy.targets.siracusa.runner import cluster_runner, core_counter
from Deeploy.targets.snitch.platform import SNITCH

__all__ = ["RUNNER", "core_count"]

RUNNER = cluster_runner(SNITCH)
_compute_cores = core_counter(SNITCH)


def core_count(text: str) -> int:
    """argparse type of --cores / --num-cores: compute cores 1..8; 9, the peer's count with the
    data-mover core (its CI's NUM_CORES), means all 8."""
    return SNITCH.max_cores if text.strip() == str(SNITCH.max_cores + 1) else _compute_cores(text)

