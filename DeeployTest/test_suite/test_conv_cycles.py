"""The requantised channels-last convolution's cycle formulas (Deeploy/targets/siracusa/
conv_cycles.py: dense and depthwise 3x3) against the kernel cycles the calibrated model measures
on QEMU, on shapes other than those their constants came from: within 10%."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from Deeploy.targets.siracusa.conv_cycles import conv_rq_cycles, dw_cycles, single_share, window_taps
from DeeployTest.generators.builder import Net
from DeeployTest.generators.layers import conv_rq, image
from DeeployTest.test_suite.kernel_cases import one_tile_kernel
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401


def _conv(c: int, hw: int, k: int, ks: int, stride: int, group: int = 1) -> Net:
    rng = np.random.default_rng(5)
    net = Net("Conv")
    x = net.input("input", image(rng, (1, c, hw, hw)))
    net.output(net.rename(conv_rq(net, rng, x, k, ks, stride=stride, group=group, name="conv"), "output"))
    return net


@pytest.mark.parametrize("c,hw,k,ks,stride,cores", [(12, 12, 24, 3, 1, 8), (24, 8, 48, 1, 1, 8),
                                                    (8, 20, 16, 3, 2, 8), (16, 6, 8, 3, 1, 1)])
def test_formula_within_ten_percent(c, hw, k, ks, stride, cores, tmp_path, capsys):
    measured, kernel = one_tile_kernel(_conv(c, hw, k, ks, stride), ("RequantizedConv",), cores, tmp_path, capsys)
    assert kernel.startswith("ConvHWC_RQ"), kernel
    out_hw = (hw + 2 * (ks // 2) - ks) // stride + 1   # 'same' pads (conv_rq)
    geometry = SimpleNamespace(in_hw=(hw, hw), out_hw=(out_hw, out_hw), kernel=(ks, ks), stride=(stride, stride),
                               dilation=(1, 1), pads=(ks // 2,) * 4)
    predicted = conv_rq_cycles(1, out_hw * out_hw, k, window_taps(geometry), c, cores, single_share(geometry))
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)


@pytest.mark.parametrize("c,hw,k,cores", [(8, 12, 3, 8), (16, 6, 7, 1), (24, 8, 14, 8)])
def test_channel_rest_within_ten_percent(c, hw, k, cores, tmp_path, capsys):
    """Output channels beyond a multiple of 4 are summed alone in C (REST_PER_OUTPUT, REST_PER_MAC):
    what a tile of a few channels of many costs."""
    measured, _ = one_tile_kernel(_conv(c, hw, k, 3, 1), ("RequantizedConv",), cores, tmp_path, capsys)
    geometry = SimpleNamespace(in_hw=(hw, hw), out_hw=(hw, hw), kernel=(3, 3), stride=(1, 1), dilation=(1, 1),
                               pads=(1,) * 4)
    predicted = conv_rq_cycles(1, hw * hw, k, window_taps(geometry), c, cores, single_share(geometry))
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)


@pytest.mark.parametrize("c,hw,stride,cores", [(12, 14, 1, 8), (20, 10, 2, 8), (8, 12, 1, 1), (6, 18, 1, 8)])
def test_depthwise_formula_within_ten_percent(c, hw, stride, cores, tmp_path, capsys):
    measured, kernel = one_tile_kernel(_conv(c, hw, c, 3, stride, group=c), ("RequantizedConv",), cores, tmp_path,
                                       capsys)
    assert kernel.startswith("ConvHWC_RQ"), kernel
    out_hw = (hw - 1) // stride + 1
    predicted = dw_cycles(1, out_hw, out_hw, c, (stride, stride), cores)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)


def test_single_share():
    """A 3x3 'same' convolution pairs the pixels whose windows have the same columns inside the
    image: of 6 columns, the first (window clipped left) and the last (clipped right) run alone;
    stride 2, 4 of 8 columns: the first (clipped) and the last (no neighbour left); a 1x1 over 5
    columns: the fifth."""
    row = SimpleNamespace(in_hw=(6, 6), out_hw=(6, 6), kernel=(3, 3), stride=(1, 1), dilation=(1, 1),
                          pads=(1, 1, 1, 1))
    assert single_share(row) == 2 / 6
    strided = SimpleNamespace(in_hw=(8, 8), out_hw=(4, 4), kernel=(3, 3), stride=(2, 2), dilation=(1, 1),
                              pads=(1, 1, 1, 1))
    assert single_share(strided) == 2 / 4
    pointwise = SimpleNamespace(in_hw=(5, 5), out_hw=(5, 5), kernel=(1, 1), stride=(1, 1), dilation=(1, 1),
                                pads=(0, 0, 0, 0))
    assert single_share(pointwise) == 1 / 5
