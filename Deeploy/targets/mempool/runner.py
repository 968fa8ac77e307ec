"""How a MemPool program is built, run and read back: the cluster runner of the Siracusa family
(``Deeploy.targets.siracusa.runner``) with MemPool's linker script, cores and cycle model."""

from Deeploy.targets.mempool.platform import MEMPOOL
from Deeploy.targets.siracusa.runner import cluster_runner, core_counter

__all__ = ["RUNNER", "core_count"]

RUNNER = cluster_runner(MEMPOOL)
core_count = core_counter(MEMPOOL)   # --cores / --num-threads: 1..256
