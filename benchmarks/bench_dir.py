"""Where the benchmarks put their generated folders: one folder per checkout in the system's
temporary directory (``deeploy_bench-<hash of the checkout's path>``), so that benchmarks of two
checkouts running at once never write into each other's folders."""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

__all__ = ["BENCH_DIR"]

_REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = Path(tempfile.gettempdir()) / f"deeploy_bench-{hashlib.sha1(str(_REPO).encode()).hexdigest()[:8]}"
