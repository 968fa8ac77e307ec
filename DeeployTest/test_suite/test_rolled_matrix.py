"""Rolled networks (``--loop-rolling``) against their golden outputs, bit-exact, on every target:
the corpus microLlamas and the project's stacks (``Tests/Models/Stacks``) on Generic, Siracusa
(1 and 8 cores), tiled Siracusa (--l1 64000; data in L2 and L3, single and double buffered; and
constants moved to L3 to fit --l2) and with the NPU (untiled; tiled with data in L2; tiled with
data in L3 and the weight memory); the stack whose weights exceed L2 only where they may live in
L3. Each run must also have rolled at least one region into a loop (the runner's note says so).

Two cases run by default; the whole matrix (about 100 runs, 15 minutes on 2 cores) with

    python -m pytest DeeployTest/test_suite/test_rolled_matrix.py -m slow -n 2
"""

from __future__ import annotations

import itertools
import re

import pytest

from Deeploy.tiling.network import TilingOptions
from DeeployTest.testRunner_generic import GENERIC
from DeeployTest.testUtils.runner import RunnerPlatform
from DeeployTest.test_suite.conftest import CORPUS, DEEPLOY_TEST
from DeeployTest.test_suite.test_rolled import AUTO, TOOLCHAIN, _runs

LLAMAS = [CORPUS / "Models" / "microLlama" / "INT8" / n for n in ("microLlama64", "microLlama128", "microLlama64_parallel")]
STACKS = [DEEPLOY_TEST / "Tests" / "Models" / "Stacks" / n
          for n in ("Decoder2", "Decoder4", "Decoder8", "Decoder16", "Decoder8NoMetadata", "EncoderDecoder", "BigWeights")]


def _tiled(level: str | None, double: bool) -> dict:
    return {"cores": 8, "tiling": TilingOptions(l1=64000, default_level=level, double_buffer=double)}


# name -> (runner platform, its output folder, compile options)
CONFIGS = {
    "generic": ("Generic", "TEST_GENERIC", {}),
    "siracusa-1": ("Siracusa", "TEST_SIRACUSA", {"cores": 1}),
    "siracusa-8": ("Siracusa", "TEST_SIRACUSA", {"cores": 8}),
    **{f"tiled-{lvl}-{'db' if db else 'sb'}": ("Siracusa", "TEST_SIRACUSA_TILED", _tiled(lvl, db))
       for lvl, db in itertools.product(("L2", "L3"), (False, True))},
    "tiled-fit-db": ("Siracusa", "TEST_SIRACUSA_TILED", _tiled(None, True)),   # constants moved to L3 to fit --l2
    "npu": ("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA", {"cores": 8}),
    "npu-tiled-L2": ("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA_TILED", _tiled("L2", True)),
    "npu-tiled-L3-wmem": ("Siracusa_w_neureka", "TEST_SIRACUSA_W_NEUREKA_TILED",
                          _tiled("L3", True) | {"platform_options": {"neureka_wmem": True}}),
}
DEFAULT = {("EncoderDecoder", "tiled-L3-db"), ("Decoder8NoMetadata", "npu-tiled-L3-wmem")}
# configurations that keep every constant in L2 (2 MiB): not for the stack whose weights exceed it
IN_L2 = {"siracusa-1", "siracusa-8", "tiled-L2-sb", "tiled-L2-db", "npu", "npu-tiled-L2"}
OVER_L2 = {"BigWeights"}


def _cases():
    return [pytest.param(d, c, id=f"{d.name}-{c}", marks=() if (d.name, c) in DEFAULT else pytest.mark.slow)
            for d in LLAMAS + STACKS for c in CONFIGS if not (d.name in OVER_L2 and c in IN_L2)]


@TOOLCHAIN
@pytest.mark.parametrize("test_dir,config", _cases())
def test_rolled_network_is_bit_exact(test_dir, config, capsys):
    if not test_dir.is_dir():
        pytest.skip(f"{test_dir} not found")
    platform, root, options = CONFIGS[config]
    runner = GENERIC if platform == "Generic" else RunnerPlatform(platform, root)
    out = _runs(runner, test_dir, DEEPLOY_TEST / root / "rolled_matrix" / f"{test_dir.name}-{config}",
                options | {"loop_rolling": AUTO}, capsys)
    assert re.search(r"\d+ iterations of \d+ layers run as one loop", out), out
