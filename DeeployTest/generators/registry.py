"""The registry of generated tests, and the random-data helpers the families share."""

from __future__ import annotations

import importlib
import zlib
from dataclasses import dataclass
from typing import Callable

import numpy as np

__all__ = ["TestDef", "TESTS", "FAMILIES", "test", "all_tests", "seed_of", "s8", "u8", "ints_in"]

# the family modules, each registering its builders when imported
FAMILIES = ("elementwise", "conv", "linear", "shape", "reduce", "integer", "mobilenet", "llama", "kws",
            "autoencoder", "resnet", "cct", "floatnets", "stacks", "standard_ops")


@dataclass(frozen=True)
class TestDef:
    path: str                      # below DeeployTest/Tests, e.g. "Kernels/Add/Regular"
    build: Callable                # (rng) -> Net
    family: str
    max_data_bytes: int = 64 * 1024


TESTS: dict[str, TestDef] = {}


def test(path: str, max_data_bytes: int = 64 * 1024):
    def register(fn):
        if path in TESTS:
            raise RuntimeError(f"test {path} registered twice")
        family = fn.__module__.rsplit(".", 1)[-1]
        TESTS[path] = TestDef(path, fn, family, max_data_bytes)
        return fn
    return register


def all_tests() -> dict[str, TestDef]:
    for fam in FAMILIES:
        importlib.import_module(f"DeeployTest.generators.{fam}")
    return dict(sorted(TESTS.items()))


def seed_of(path: str) -> int:
    """A stable per-test seed (independent of Python's hash randomisation)."""
    return zlib.crc32(path.encode())


def ints_in(rng: np.random.Generator, lo: int, hi: int, shape, extremes: bool = True) -> np.ndarray:
    """Uniform integers in [lo, hi]; with ``extremes`` the first two elements are lo and hi, so
    the type inferred from the sample is the full type (int8 for [-128, 127])."""
    v = rng.integers(lo, hi + 1, size=shape, dtype=np.int64)
    if extremes and v.size >= 2:
        flat = v.reshape(-1)
        k = rng.choice(v.size, 2, replace=False)
        flat[k[0]], flat[k[1]] = lo, hi
    return v


def s8(rng, shape, extremes=True):
    return ints_in(rng, -128, 127, shape, extremes)


def u8(rng, shape, extremes=True):
    return ints_in(rng, 0, 255, shape, extremes)


def weights(rng, shape, amp: int = 127):
    """Int8 weights, roughly Gaussian (as trained weights are), clipped to [-amp, amp]."""
    return np.clip(np.round(rng.normal(0, amp / 2.5, size=shape)), -amp, amp).astype(np.int64)
