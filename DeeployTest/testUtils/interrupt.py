"""Ctrl-C while a runner starts up (before it can clean anything): one error line, exit 130."""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["exit_quietly_on_interrupt", "raise_on_interrupt"]


def _exit(signum, frame) -> None:
    print("error: interrupted", file=sys.stderr, flush=True)
    os._exit(130)


def exit_quietly_on_interrupt() -> None:
    """Until :func:`raise_on_interrupt`: Ctrl-C prints one line and exits 130 at once."""
    signal.signal(signal.SIGINT, _exit)


def raise_on_interrupt() -> None:
    """Ctrl-C raises KeyboardInterrupt again, for code that cleans up after itself."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
