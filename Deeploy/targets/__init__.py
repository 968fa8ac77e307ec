"""Targets by name. Each target is a package ``Deeploy/targets/<package>/`` whose ``platform``
module defines ``PLATFORM`` (a ``Platform``: memory levels, engines, bindings, passes, tiling and
timing parameters), with a cycle model, whose ``roofs`` module defines ``ROOFS`` (the roofline's
roofs), and, when its programs do not run on the host, whose ``runner`` module defines ``RUNNER``
(a ``TargetRunner``: build options, launch and read-back); the registry finds them, so a new
target is a new package."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from Deeploy.analysis.roofs import Roofs
from Deeploy.errors import DeeployError
from Deeploy.platform import HOST_RUNNER, Platform, TargetRunner

__all__ = ["get_platform", "platforms", "roofs_of", "runner_of"]


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


def _part(name: str, module: str, attribute: str):
    """``attribute`` of platform ``name``'s target module ``module``; None if it has none."""
    get_platform(name)
    package = _found()[name][0]
    try:
        return getattr(importlib.import_module(f"{package}.{module}"), attribute, None)
    except ModuleNotFoundError as exc:
        if exc.name != f"{package}.{module}":
            raise
    return None


def runner_of(name: str) -> TargetRunner:
    """How programs of platform ``name`` are built, run and read back (its target's ``runner``
    module); the host's runner if it has none."""
    return _part(name, "runner", "RUNNER") or HOST_RUNNER


def roofs_of(name: str) -> Roofs:
    """The roofs of platform ``name`` (its target's ``roofs`` module); one error if it has none."""
    roofs = _part(name, "roofs", "ROOFS") if name in _found() else None
    if roofs is not None:
        return roofs
    raise DeeployError(f"platform {name} has no cycle model, so no roofline (--roofline): use a platform with "
                       f"one, e.g. Siracusa")
