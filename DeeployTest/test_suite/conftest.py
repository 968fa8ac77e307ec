"""Shared fixtures: where the test networks are."""

from __future__ import annotations

import functools
import zlib
from pathlib import Path

import pytest

DEEPLOY_TEST = Path(__file__).resolve().parents[1]
REPO = DEEPLOY_TEST.parent
CORPUS = REPO.parent / "shared" / "corpus"
# the external corpus's float tests (float32, bfloat16, and float graphs around quantisation)
FLOAT_CORPUS = ("Kernels/FP32", "Kernels/BF16", "Kernels/Mixed")
# corpus tests the compiler refuses, with a fragment of the one-line error they must give (docs/GUIDE.md,
# "Float networks"): none today
REJECTED: dict[str, str] = {}
# the project's models above this many nodes are deep stacks of the smaller stacks' blocks
# (Decoder8, Decoder16): their cluster runs are left to -m slow
DEEP_STACK_NODES = 300


def share_of(name: str, parts: int) -> int:
    """Which of ``parts`` stable shares a test named ``name`` falls in (a digest of the name, the
    same on every machine): how a family of network runs spreads its configurations over the
    default suite and leaves the rest to ``-m slow``."""
    return zlib.crc32(name.encode()) % parts


@functools.cache
def deep_stack(folder: Path) -> bool:
    """A project model (not the corpus's) of more than DEEP_STACK_NODES nodes."""
    import onnx

    if folder.is_relative_to(CORPUS):
        return False
    return len(onnx.load(folder / "network.onnx", load_external_data=False).graph.node) > DEEP_STACK_NODES


def network_dirs(root: Path, *subdirs: str) -> list[Path]:
    """Every folder below root/subdir holding a network.onnx, sorted."""
    found = []
    for sub in subdirs:
        base = root / sub
        if base.is_dir():
            found += [p.parent for p in base.rglob("network.onnx")]
    return sorted(found)


# every int8 network of the corpus (the targets' "all int8 networks" goals; their sweeps run with -m slow)
INT8_NETWORKS = [str(d.relative_to(CORPUS)) for d in network_dirs(CORPUS, "Kernels/Integer", "Models/miniMobileNetv2",
                                                                   "Models/microLlama/INT8")
                 if str(d.relative_to(CORPUS)) not in REJECTED]


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip(f"external corpus not found at {CORPUS}")
    return CORPUS
