"""Siracusa_w_neureka programs are built, launched and read back as Siracusa's."""

from Deeploy.targets.siracusa.runner import cluster_runner
from Deeploy.targets.siracusa_w_neureka.platform import PLATFORM

__all__ = ["RUNNER"]

RUNNER = cluster_runner(PLATFORM)
