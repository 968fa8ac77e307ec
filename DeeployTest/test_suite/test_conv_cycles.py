"""The requantised channels-last convolution's cycle formula (Deeploy/targets/siracusa/
conv_cycles.py) against the kernel cycles the calibrated model measures on QEMU, on shapes other
than those its constants came from: within 10%."""

from __future__ import annotations

import argparse
import json
from types import SimpleNamespace

import numpy as np
import pytest

from Deeploy.targets.siracusa.conv_cycles import conv_rq_cycles, window_taps
from Deeploy.tiling.network import TilingOptions
from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.layers import conv_rq, image
from DeeployTest.testUtils.runner import run_test
from DeeployTest.testUtils.siracusa_runner import cluster_runner
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401

TILED = cluster_runner("Siracusa", "TEST_SIRACUSA_TILED")
L1 = 200_000   # every operand fits: one tile, the kernel runs once on L1 data


def _conv(c: int, hw: int, k: int, ks: int, stride: int) -> Net:
    rng = np.random.default_rng(5)
    net = Net("Conv")
    x = net.input("input", image(rng, (1, c, hw, hw)))
    net.output(net.rename(conv_rq(net, rng, x, k, ks, stride=stride, name="conv"), "output"))
    return net


@pytest.mark.parametrize("c,hw,k,ks,stride,cores", [(12, 12, 24, 3, 1, 8), (24, 8, 48, 1, 1, 8),
                                                    (8, 20, 16, 3, 2, 8), (16, 6, 8, 3, 1, 1)])
def test_formula_within_ten_percent(c, hw, k, ks, stride, cores, tmp_path, capsys):
    test, gen = tmp_path / "net", tmp_path / "gen"
    write_test(_conv(c, hw, k, ks, stride), test)
    args = argparse.Namespace(test=str(test), verbose=False, skipgen=False, skipsim=False, gen_dir=str(gen),
                              cores=cores, l1=L1, l2=TilingOptions.l2, defaultMemLevel="L2", doublebuffer=False,
                              profileTiling="all", plotMemAlloc=False, timeout=None)
    code = run_test(args, TILED, {"cores": cores, "tiling": TilingOptions(L1, TilingOptions.l2, "L2", False)})
    out = capsys.readouterr().out
    assert code == 0 and "Errors: 0 out of" in out, out
    layer = next(e for e in json.loads((gen / "profile.json").read_text())["layers"] if e["op"] == "RequantizedConv")
    assert layer["kernel"].startswith("ConvHWC_RQ"), layer["kernel"]
    measured = sum(t["kernel"] for t in layer["tiles"] if t["level"] == "L1")
    out_hw = (hw + 2 * (ks // 2) - ks) // stride + 1   # 'same' pads (conv_rq)
    geometry = SimpleNamespace(in_hw=(hw, hw), out_hw=(out_hw, out_hw), kernel=(ks, ks), stride=(stride, stride),
                               dilation=(1, 1), pads=(ks // 2,) * 4)
    predicted = conv_rq_cycles(1, out_hw * out_hw, k, window_taps(geometry), c, cores)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)
