"""GAP9_w_ne16 programs are built, launched and read back as GAP9's."""

from Deeploy.targets.gap9_w_ne16.platform import PLATFORM
from Deeploy.targets.siracusa.runner import cluster_runner

__all__ = ["RUNNER"]

RUNNER = cluster_runner(PLATFORM)
