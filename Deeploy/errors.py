"""User-facing errors. Each message names the file, node or op at fault and what was expected;
the command-line tools print it on one line (``error_text``) and exit non-zero. An error's
``details`` (what led to it) are printed below it with ``-v``."""

import difflib
from typing import Sequence

__all__ = ["DeeployError", "FrontendError", "GraphError", "UnsupportedOpError", "OpError",
           "BindingError", "BuildError", "TilingError", "error_text"]


class DeeployError(Exception):
    """Base class of every error that is the user's to fix (bad input, unsupported network)."""

    details: str = ""       # the longer story, shown with -v


def error_text(exc: DeeployError, verbose: bool = False) -> str:
    """``error: <message>``, then its details with ``verbose``, else a pointer to ``-v``."""
    if not exc.details:
        return f"error: {exc}"
    return f"error: {exc}\n  {exc.details}" if verbose else f"error: {exc} (-v: details)"


class FrontendError(DeeployError):
    """A malformed or unreadable ONNX file or npz data file."""


class GraphError(DeeployError):
    """A graph that breaks an invariant (dangling tensor, cycle, double producer)."""


class OpError(DeeployError):
    """A node with attributes or input shapes its operator does not accept."""

    def __init__(self, node, message: str):
        super().__init__(f"node '{node.name}' ({node.op}): {message}")
        self.node = node


class UnsupportedOpError(DeeployError):
    """Nodes whose operator (or operator/type combination) the chosen platform cannot run; the
    message names the operators, where to see what the platform runs and, from ``supported`` (the
    platform's operators), the nearest by name; the details list the nodes."""

    def __init__(self, platform: str, pairs: list[tuple[str, str]], what: str = "operators",
                 supported: Sequence[str] = ()):
        by_op: dict[str, list[str]] = {}
        for op, name in pairs:
            by_op.setdefault(op, []).append(f"'{name}'")
        near = {op: difflib.get_close_matches(op.lower(), [s.lower() for s in supported], n=1, cutoff=0.6)
                for op in by_op}
        lower = {s.lower(): s for s in supported}
        nearest = ", ".join(f"{op} -> {lower[m[0]]}?" for op, m in near.items() if m)
        super().__init__(f"platform {platform} does not support the {what} {', '.join(by_op)} "
                         f"({len(pairs)} node{'s' if len(pairs) != 1 else ''}); "
                         + (f"nearest: {nearest}; " if nearest else "") + f"all: deeploy ops --platform {platform}")
        self.details = "; ".join(f"{op} ({len(names)}): {', '.join(names)}" for op, names in by_op.items())
        self.pairs = pairs


class BindingError(DeeployError):
    """No kernel of the platform accepts a node's operator and input types."""


class BuildError(DeeployError):
    """The generated C project failed to configure, build or run."""


class TilingError(DeeployError):
    """A layer the tiler cannot place in a memory level, or an op it has no tiling rule for.

    For a layer that does not fit, ``min_bytes`` is the smallest level size (e.g. ``--l1``) with
    which some tiling fits, and ``constraint`` says what keeps the tiles from shrinking further.
    """

    def __init__(self, message: str, *, layer: str | None = None, op: str | None = None,
                 level: str | None = None, capacity: int | None = None, min_bytes: int | None = None,
                 constraint: str | None = None):
        super().__init__(message)
        self.layer = layer
        self.op = op
        self.level = level
        self.capacity = capacity
        self.min_bytes = min_bytes
        self.constraint = constraint
