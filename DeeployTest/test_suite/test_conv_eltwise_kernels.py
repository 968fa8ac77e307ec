"""The register-blocked convolutions and the word-at-a-time element-wise kernels on shapes that
select their different paths: channels-last blocks of two pixels x four channels and the
single-pixel edges (padding, odd pixel counts, a core's last pixel), channel remainders of a
group, grouped and depthwise convolutions with channel counts that are not multiples of four,
dilation and stride; Generic's NCHW patch path with its clipped windows; RequantShift, fused
residual Adds, and Concat/Transpose copies at offsets that are not word-aligned. Outputs must
match the reference interpreter's goldens bit-exactly on Generic and on Siracusa with 1 and 8
cores."""

from __future__ import annotations


import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.layers import conv_rq, image, residual_add
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.kernel_cases import needs_qemu, run_generic, run_siracusa



def _conv(c, h, w, k, kernel, stride=1, pads=None, group=1, bias=True):
    def build(rng):
        net = Net("Conv")
        x = net.input("input_0", image(rng, (1, c, h, w)))
        net.output(conv_rq(net, rng, x, k, kernel, stride=stride, pads=pads, group=group, bias=bias))
        return net
    return build


def _dilated(rng):
    net = Net("Conv")
    x = net.input("input_0", image(rng, (1, 6, 9, 8)))
    wt = net.const(weights(rng, (8, 6, 3, 3)), "conv.weight")
    y = net.node("Conv", [x, wt], {"dilations": [2, 2], "group": 1, "kernel_shape": [3, 3],
                                    "pads": [2, 1, 2, 1], "strides": [1, 2]}, name="conv")
    net.output(net.calib_rqs(y, axis=1, offset_rng=rng, name="conv.rqs"))
    return net


def _residual(rng):
    net = Net("Add")
    a = net.input("input_0", ints_in(rng, -128, 127, (1, 3, 7, 5)))
    b = net.input("input_1", ints_in(rng, -128, 127, (1, 3, 7, 5)))
    net.output(residual_add(net, a, b, "res"))
    return net


def _copies(rng):
    """Concat rows of 15 and 10 bytes into rows of 25 (unaligned row starts), then a Transpose
    moving whole rows of 5 (contiguous, unaligned) and one moving the last axis (strided)."""
    net = Net("Concat")
    a = net.input("input_0", ints_in(rng, -128, 127, (2, 3, 5)))
    b = net.input("input_1", ints_in(rng, -128, 127, (2, 2, 5)))
    c = net.node("Concat", [a, b], {"axis": 1})
    rows = net.node("Transpose", [c], {"perm": [1, 0, 2]})
    net.output(rows, net.node("Transpose", [c], {"perm": [2, 0, 1]}))
    return net


def _requant(rng):
    net = Net("RequantShift")
    x = net.input("input_0", ints_in(rng, -2000, 2000, (3, 37)))
    net.output(net.rqs(x, 1 << 12, -5000, 14))
    return net


CASES = [
    ("pairs_edges", _conv(8, 7, 9, 12, 3)),                      # 2 x 4 blocks, padded edge pixels
    ("k_remainder", _conv(5, 6, 6, 6, 3, stride=2, pads=[1, 0, 0, 1])),  # 4 + 2 channels, asymmetric pads
    ("grouped", _conv(12, 5, 5, 12, 3, group=2)),                 # 6 channels per group: block + 2 singles
    ("depthwise_odd", _conv(6, 5, 7, 6, 3, group=6)),             # 4 channels per pass + 2 singles
    ("pointwise_odd", _conv(16, 3, 5, 8, 1, bias=False)),         # 15 pixels: pairs and a last single
    ("wide_kernel", _conv(2, 12, 10, 4, (5, 7), pads=[1, 2, 1, 2])),  # windows clipped on both sides
    ("dilated", _dilated),
    ("residual_add", _residual),
    ("copies", _copies),
    ("requant", _requant),
]


@pytest.fixture(params=CASES, ids=[c[0] for c in CASES])
def case_dir(request, tmp_path):
    name, build = request.param
    folder = tmp_path / name
    write_test(build(np.random.default_rng(11)), folder)
    return folder


def test_generic(case_dir, capsys):
    run_generic(case_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(case_dir, cores, capsys):
    run_siracusa(case_dir, cores, capsys)
