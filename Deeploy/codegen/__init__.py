"""Code generation: C project emission from a bound, planned graph."""

import sys


def _import_mako() -> None:
    """Loads Mako's templates without pygments, which ``mako.exceptions`` imports when installed
    only to colour its HTML error pages (about 5 MiB and 60 ms; Mako falls back to plain text)."""
    hide = "pygments" not in sys.modules
    if hide:
        sys.modules["pygments"] = None   # an import of it raises ImportError
    try:
        import mako.template  # noqa: F401
    finally:
        if hide:
            del sys.modules["pygments"]


_import_mako()
