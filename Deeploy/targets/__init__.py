"""Platforms by name."""

from __future__ import annotations

from Deeploy.errors import DeeployError
from Deeploy.targets.platform import Kernel, MemoryLevel, Platform  # noqa: F401

__all__ = ["get_platform", "PLATFORMS"]

PLATFORMS = ("Generic", "Siracusa")


def get_platform(name: str) -> Platform:
    if name == "Generic":
        from Deeploy.targets.generic.platform import GENERIC
        return GENERIC
    if name == "Siracusa":
        from Deeploy.targets.siracusa.platform import SIRACUSA
        return SIRACUSA
    raise DeeployError(f"unknown platform '{name}' (available: {', '.join(PLATFORMS)})")
