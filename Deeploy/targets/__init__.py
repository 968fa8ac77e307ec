"""Targets by name. Each target is a package ``Deeploy/targets/<package>/`` whose ``platform``
module defines ``PLATFORM`` (a ``Platform``: memory levels, engines, bindings, passes, tiling and
timing parameters); the registry finds them, so a new target is a new package."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from Deeploy.errors import DeeployError
from Deeploy.targets.platform import Platform

__all__ = ["get_platform", "platforms"]


@cache
def platforms() -> dict[str, Platform]:
    """Every target's platform by its name."""
    found = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        try:
            module = importlib.import_module(f"{__name__}.{info.name}.platform")
        except ModuleNotFoundError as exc:
            if exc.name == f"{__name__}.{info.name}.platform":
                continue
            raise
        platform = getattr(module, "PLATFORM", None)
        if isinstance(platform, Platform):
            if platform.name in found:
                raise RuntimeError(f"two targets are named {platform.name}")
            found[platform.name] = platform
    return found


def get_platform(name: str) -> Platform:
    """The platform named ``name``: first from the package of that name in lower case (without
    loading the other targets), else from the registry."""
    platform = None
    if name.isidentifier():
        try:
            platform = getattr(importlib.import_module(f"{__name__}.{name.lower()}.platform"), "PLATFORM", None)
        except ModuleNotFoundError as exc:
            if not (exc.name or "").startswith(f"{__name__}.{name.lower()}"):
                raise
    if isinstance(platform, Platform) and platform.name == name:
        return platform
    try:
        return platforms()[name]
    except KeyError:
        raise DeeployError(f"unknown platform '{name}' (available: {', '.join(platforms())})") from None
