"""The requantised channels-last convolution's cycle formula (Deeploy/targets/siracusa/
conv_cycles.py) against the kernel cycles the calibrated model measures on QEMU, on shapes other
than those its constants came from: within 10%."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from Deeploy.targets.siracusa.conv_cycles import conv_rq_cycles, window_taps
from DeeployTest.generators.builder import Net
from DeeployTest.generators.layers import conv_rq, image
from DeeployTest.test_suite.kernel_cases import one_tile_kernel
from DeeployTest.test_suite.test_siracusa_networks import pytestmark  # noqa: F401


def _conv(c: int, hw: int, k: int, ks: int, stride: int) -> Net:
    rng = np.random.default_rng(5)
    net = Net("Conv")
    x = net.input("input", image(rng, (1, c, hw, hw)))
    net.output(net.rename(conv_rq(net, rng, x, k, ks, stride=stride, name="conv"), "output"))
    return net


@pytest.mark.parametrize("c,hw,k,ks,stride,cores", [(12, 12, 24, 3, 1, 8), (24, 8, 48, 1, 1, 8),
                                                    (8, 20, 16, 3, 2, 8), (16, 6, 8, 3, 1, 1)])
def test_formula_within_ten_percent(c, hw, k, ks, stride, cores, tmp_path, capsys):
    measured, kernel = one_tile_kernel(_conv(c, hw, k, ks, stride), ("RequantizedConv",), cores, tmp_path, capsys)
    assert kernel.startswith("ConvHWC_RQ"), kernel
    out_hw = (hw + 2 * (ks // 2) - ks) // stride + 1   # 'same' pads (conv_rq)
    geometry = SimpleNamespace(in_hw=(hw, hw), out_hw=(out_hw, out_hw), kernel=(ks, ks), stride=(stride, stride),
                               dilation=(1, 1), pads=(ks // 2,) * 4)
    predicted = conv_rq_cycles(1, out_hw * out_hw, k, window_taps(geometry), c, cores)
    assert abs(predicted - measured) <= 0.10 * measured, (predicted, measured)
