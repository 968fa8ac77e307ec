"""A tiled layer whose kernel tabulates in its shared scratch (the requantised Add's output table,
RequantShift's, RequantizediSoftmax's e(d) and output tables) fills the tables on the first tile
of each tile class only (deeploy_tile_t.fill): the later tiles of the class skip the fill and its
barrier. On Siracusa's cycle model, a later tile's kernel phase is therefore shorter than the
first one of the same size by at least what the fill costs a core: its share of the entries
(entries / 8 cores), at least 3 instructions each (the arithmetic, the clip, the store), each at
least a cycle. Outputs are bit-exact (the runner checks them)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.integer import _unary, isoftmax_attrs
from DeeployTest.test_suite.kernel_cases import TILED, _check, byte_values, needs_qemu
from DeeployTest.testUtils.runner import run_test

CORES = 8


def _add(rng):
    net = Net("Add")
    s = net.node("Add", [net.input("input_0", byte_values(rng, (16, 256))),
                         net.input("input_1", byte_values(rng, (16, 256)))], name="v")
    net.output(net.rqs(s, 700, -30, 9, name="rqs"))
    return net


def _rqs(rng):
    net = Net("RequantShift")
    net.output(net.rqs(net.input("input", byte_values(rng, (16, 256))), 300, -20, 8, name="rqs"))
    return net


def _softmax(rng):
    return _unary("iSoftmax", byte_values(rng, (1, 1, 32, 64)), isoftmax_attrs(255), rq=True, rng=rng)


# (name, network, layer op, table entries the cores fill per call, L1 bytes: a few tiles, each with
# at least two outputs per entry, as the kernels tabulate only then)
CASES = [
    ("add", _add, "RequantizedAdd", 511, 5000),                  # a + b of two int8: -256..254
    ("requant_shift", _rqs, "RequantShift", 256, 3000),
    ("softmax_rq", _softmax, "RequantizediSoftmax", 256 + 256, 3000),   # e(d) and the outputs
]


@needs_qemu
@pytest.mark.parametrize("name,build,op,entries,l1", CASES, ids=[c[0] for c in CASES])
def test_later_tiles_skip_the_table_fill(name, build, op, entries, l1, tmp_path, capsys):
    test, gen = tmp_path / name, tmp_path / "gen"
    write_test(build(np.random.default_rng(5)), test)
    tiling = TilingOptions(l1, TilingOptions.l2, "L2", False)
    args = argparse.Namespace(test=str(test), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=CORES, l1=tiling.l1, l2=tiling.l2, defaultMemLevel="L2", doublebuffer=False,
                              profileTiling="all", plotMemAlloc=False, timeout=None)
    _check(run_test(args, TILED, {"cores": CORES, "tiling": tiling}), capsys.readouterr().out)
    layer = next(e for e in json.loads((gen / "profile.json").read_text())["layers"] if e["op"] == op)
    tiles = [t for t in layer["tiles"] if t["level"] == "L1"]
    later = [t["kernel"] for t in tiles[1:] if t["ops"] == tiles[0]["ops"]]
    assert later, f"no later tile of the first tile's size: {tiles}"
    code = (gen / "network" / "Network.c").read_text()
    assert "((void *)(deeploy_l1_arena" in code   # the kernel tabulates (a shared scratch pointer)
    fill = -(-entries // CORES) * 3
    assert max(later) <= tiles[0]["kernel"] - fill, (tiles[0]["kernel"], later, fill)
