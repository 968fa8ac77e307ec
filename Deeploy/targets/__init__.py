"""Targets by name. Each target is a package ``Deeploy/targets/<package>/`` whose ``platform``
module defines ``PLATFORM`` (a ``Platform``: memory levels, engines, bindings, passes, tiling and
timing parameters), and, with a cycle model, whose ``roofs`` module defines ``ROOFS`` (the
roofline's roofs); the registry finds them, so a new target is a new package."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from Deeploy.analysis.roofs import Roofs
from Deeploy.errors import DeeployError
from Deeploy.platform import Platform

__all__ = ["get_platform", "platforms", "roofs_of"]


@cache
def platforms() -> dict[str, Platform]:
    """Every target's platform by its name."""
    return {name: platform for name, (_, platform) in _found().items()}


@cache
def _found() -> dict[str, tuple[str, Platform]]:
    """Every target's platform by its name, with the target's package."""
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
            found[platform.name] = (module.__name__.rsplit(".", 1)[0], platform)
    return found


def get_platform(name: str) -> Platform:
    try:
        return platforms()[name]
    except KeyError:
        raise DeeployError(f"unknown platform '{name}' (available: {', '.join(platforms())})") from None


def roofs_of(name: str) -> Roofs:
    """The roofs of platform ``name`` (its target's ``roofs`` module); one error if it has none."""
    if name in _found():
        package = _found()[name][0]
        try:
            return importlib.import_module(f"{package}.roofs").ROOFS
        except ModuleNotFoundError as exc:
            if exc.name != f"{package}.roofs":
                raise
    raise DeeployError(f"platform {name} has no cycle model, so no roofline (--roofline): use a platform with "
                       f"one, e.g. Siracusa")
