"""Compile work grows linearly with the number of nodes: a chain twice as long costs about twice the
Python function calls (a deterministic count, unlike time), in every stage from loading to writing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from Deeploy.compiler import compile_network
from Deeploy.frontend import load_npz_arrays
from DeeployTest.testUtils.chain import write_chain


def _calls(folder: Path, nodes: int, platform: str) -> int:
    """Python function calls (and generator resumptions) of one compile of a ``nodes``-long chain."""
    path = write_chain(folder / "net", nodes)
    values = load_npz_arrays(path.with_name("inputs.npz"))
    count = 0

    def tally(frame, event, arg):
        nonlocal count
        count += event == "call"
    compile_network(path, platform, folder / "warm", input_values=values)   # imports and caches outside the count
    sys.setprofile(tally)
    try:
        compile_network(path, platform, folder / "out", input_values=values)
    finally:
        sys.setprofile(None)
    return count


@pytest.mark.parametrize("platform", ["Generic", "Siracusa"])
def test_doubling_a_chain_doubles_the_work(tmp_path, platform):
    small, large = _calls(tmp_path / "small", 300, platform), _calls(tmp_path / "large", 600, platform)
    assert large < 2.2 * small, f"{platform}: 300 nodes {small} calls, 600 nodes {large} ({large / small:.2f}x)"


@pytest.mark.slow
def test_100k_node_chain_compiles(tmp_path):
    path = write_chain(tmp_path / "net", 100_000)
    result = compile_network(path, "Generic", tmp_path / "out", input_values=load_npz_arrays(path.with_name("inputs.npz")))
    assert result.summary.layers == 100_000
