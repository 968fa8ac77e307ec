"""A tiled layer whose kernel tabulates in its shared scratch (the requantised Add's output table,
RequantShift's, RequantizediSoftmax's e(d) and output tables) fills the tables on the first tile
of each tile class only (deeploy_tile_t.fill): the later tiles of the class skip the fill and its
barrier. On Siracusa's cycle model, a later tile's kernel phase is therefore shorter than the
first one of the same size by at least what the fill costs a core: its share of the entries
(entries / 8 cores), at least 3 instructions each (the arithmetic, the clip, the store), each at
least a cycle. Outputs are bit-exact (the runner checks them). The tiler's price of a call
(``call_cycles``, fitted on microLlama64_parallel's layers) holds on other shapes: a layer split
into more tiles spends about that much per extra tile beyond the fork and join; and so does the
compute price of the ops with a rate of their own (``ops_rate``)."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest

from Deeploy.targets import get_platform
from Deeploy.tiling import layer_spec
from Deeploy.tiling.costs import compute_cycles
from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.integer import _unary, isoftmax_attrs
from DeeployTest.test_suite.kernel_cases import TILED, _check, byte_values, needs_qemu
from DeeployTest.test_suite.test_tiling_model import lowered
from DeeployTest.testUtils.runner import run_test

CORES = 8


def _add(rng, shape=(16, 256)):
    net = Net("Add")
    s = net.node("Add", [net.input("input_0", byte_values(rng, shape)),
                         net.input("input_1", byte_values(rng, shape))], name="v")
    net.output(net.rqs(s, 700, -30, 9, name="rqs"))
    return net


def _rqs(rng, shape=(16, 256)):
    net = Net("RequantShift")
    net.output(net.rqs(net.input("input", byte_values(rng, shape)), 300, -20, 8, name="rqs"))
    return net


def _transpose(rng, shape=(16, 64, 4)):
    net = Net("Transpose")
    net.output(net.node("Transpose", [net.input("input", byte_values(rng, shape))], {"perm": [1, 0, 2]}, name="t"))
    return net


def _softmax(rng, shape=(1, 1, 32, 64)):
    return _unary("iSoftmax", byte_values(rng, shape), isoftmax_attrs(255), rq=True, rng=rng)


# (name, network, layer op, table entries the cores fill per call, L1 bytes: a few tiles, each with
# at least two outputs per entry, as the kernels tabulate only then)
CASES = [
    ("add", _add, "RequantizedAdd", 511, 5000),                  # a + b of two int8: -256..254
    ("requant_shift", _rqs, "RequantShift", 256, 3000),
    ("softmax_rq", _softmax, "RequantizediSoftmax", 256 + 256, 3000),   # e(d) and the outputs
]


def _tiles(test, gen, l1: int, op: str, capsys) -> list[dict]:
    """The L1 tiles of the ``op`` layer in the profile of a bit-exact single-buffered tiled run."""
    tiling = TilingOptions(l1, TilingOptions.l2, "L2", False)
    args = argparse.Namespace(test=str(test), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=CORES, l1=tiling.l1, l2=tiling.l2, defaultMemLevel="L2", doublebuffer=False,
                              profileTiling="all", plotMemAlloc=False, timeout=None)
    _check(run_test(args, TILED, {"cores": CORES, "tiling": tiling}), capsys.readouterr().out)
    layer = next(e for e in json.loads((gen / "profile.json").read_text())["layers"] if e["op"] == op)
    return [t for t in layer["tiles"] if t["level"] == "L1"]


@needs_qemu
@pytest.mark.parametrize("name,build,op,entries,l1", CASES, ids=[c[0] for c in CASES])
def test_later_tiles_skip_the_table_fill(name, build, op, entries, l1, tmp_path, capsys):
    test, gen = tmp_path / name, tmp_path / "gen"
    write_test(build(np.random.default_rng(5)), test)
    tiles = _tiles(test, gen, l1, op, capsys)
    later = [t["kernel"] for t in tiles[1:] if t["ops"] == tiles[0]["ops"]]
    assert later, f"no later tile of the first tile's size: {tiles}"
    code = (gen / "network" / "Network.c").read_text()
    assert "((void *)(deeploy_l1_arena" in code   # the kernel tabulates (a shared scratch pointer)
    fill = -(-entries // CORES) * 3
    assert max(later) <= tiles[0]["kernel"] - fill, (tiles[0]["kernel"], later, fill)


OUTSIDE = [(_rqs, "RequantShift", (12, 384), 3000), (_add, "RequantizedAdd", (12, 384), 6000),
           (_transpose, "Transpose", (16, 64, 4), 2400), (_softmax, "RequantizediSoftmax", (1, 1, 48, 32), 2000)]
OUTSIDE_IDS = ["requant_shift", "add", "transpose", "softmax_rq"]


@needs_qemu
@pytest.mark.parametrize("build,op,shape,l1", OUTSIDE, ids=OUTSIDE_IDS)
def test_call_price_holds_outside_the_fit(build, op, shape, l1, tmp_path, capsys):
    """One tile (a large L1) against several (whose first call fills any table): the kernel
    cycles per extra tile beyond the fork and join are within a factor of 2 of the op's call
    price (``call_price``: ``call_cycles``, or the op's own where it costs several times that)."""
    params = get_platform("Siracusa").tiling.tiles
    test = tmp_path / "net"
    write_test(build(np.random.default_rng(7), shape), test)
    one = _tiles(test, tmp_path / "one", 200_000, op, capsys)
    many = _tiles(test, tmp_path / "many", l1, op, capsys)
    assert len(one) == 1 and len(many) >= 3, (one, many)
    per_tile = (sum(t["kernel"] for t in many) - one[0]["kernel"]) / (len(many) - 1)
    call = per_tile - params.fork_cycles - params.barrier_cycles
    price = params.call_price(op)
    assert price / 2 <= call <= 2 * price, (call, price)


@needs_qemu
@pytest.mark.parametrize("build,op,shape", [(_rqs, "RequantShift", (24, 1000)),
                                           (_softmax, "RequantizediSoftmax", (1, 2, 40, 96))],
                         ids=["requant_shift", "softmax_rq"])
def test_compute_price_holds_outside_the_fit(build, op, shape, tmp_path, capsys):
    """The tiler's price of a whole layer as one tile (compute at the op's ``ops_rate``, the call,
    fork and join) is within 20% of its kernel cycles measured on a shape outside the fit."""
    params = get_platform("Siracusa").tiling.tiles
    test = tmp_path / "net"
    write_test(build(np.random.default_rng(11), shape), test)
    (tile,) = _tiles(test, tmp_path / "one", 200_000, op, capsys)
    graph = lowered(test)
    spec = layer_spec(next(n for n in graph.nodes if n.op == op), graph)
    whole = {d.name: d.size for d in spec.dims}
    price = compute_cycles(spec, whole, params) + params.call_price(op) + params.fork_cycles + params.barrier_cycles
    assert 0.8 * tile["kernel"] <= price <= 1.2 * tile["kernel"], (price, tile["kernel"])
