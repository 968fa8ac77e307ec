"""The register-blocked convolutions and the word-at-a-time element-wise kernels on shapes that
select their different paths: channels-last blocks of two pixels x four channels and the
single-pixel edges (padding, odd pixel counts, a core's last pixel), channel remainders of a
group, grouped and depthwise convolutions with channel counts that are not multiples of four,
dilation and stride; the cluster's dot-product convolutions (window rows with byte tails, channel
tails, depthwise planes: odd widths, stride 2, row splits, several slabs); Generic's NCHW patch
path with its clipped windows; RequantShift, fused residual Adds, and Concat/Transpose copies at offsets that are not word-aligned. Outputs must
match the reference interpreter's goldens bit-exactly on Generic and on Siracusa with 1 and 8
cores; the Siracusa ELF carries the convolutions' CORE-V dot products."""

from __future__ import annotations


import numpy as np
import pytest

from DeeployTest.generators.builder import Net
from DeeployTest.generators.golden import write_test
from DeeployTest.generators.layers import conv_rq, image, residual_add
from DeeployTest.generators.registry import ints_in, weights
from DeeployTest.test_suite.kernel_cases import case_batch, needs_qemu, run_generic, run_siracusa
from DeeployTest.test_suite.test_gemm_kernels import SDOTSP_B, _simd_words

DOTSP_B = (1, 0b1001000)    # cv.dotsp.b: funct3 001, funct7 = funct5 10010 << 2 (CV32E40P manual)


def _conv(c, h, w, k, kernel, stride=1, pads=None, group=1, bias=True, signed_in=False, signed_out=True):
    def build(rng):
        net = Net("Conv")
        x = net.input("input_0", ints_in(rng, -128, 127, (1, c, h, w)) if signed_in else image(rng, (1, c, h, w)))
        net.output(conv_rq(net, rng, x, k, kernel, stride=stride, pads=pads, group=group, bias=bias,
                           signed=signed_out))
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
    # the cluster's dot-product paths (int8 x int8 / uint8 x int8): window rows of 18 bytes (a
    # tail of 2), 10 channels (2 in C), a 1x1 with stride 2; depthwise 3x3 planes with an odd
    # output width (a last single output), stride 2, cores taking output rows (4 channels),
    # several slabs per channel (a wide image), an unsigned output
    ("rv_signed_tails", _conv(6, 5, 7, 10, 3, signed_in=True)),
    ("rv_pointwise_strided", _conv(12, 6, 7, 8, 1, stride=2, signed_in=True)),
    ("dw_odd_width", _conv(12, 6, 7, 12, 3, group=12, signed_in=True)),
    ("dw_strided", _conv(8, 9, 9, 8, 3, stride=2, group=8)),
    ("dw_rows", _conv(4, 12, 6, 4, 3, group=4)),
    ("dw_slabs", _conv(8, 16, 100, 8, 3, group=8, bias=False)),
    ("dw_unsigned_out", _conv(16, 7, 8, 16, 3, group=16, signed_out=False)),
    ("residual_add", _residual),
    ("copies", _copies),
    ("requant", _requant),
]


batch_dir = case_batch(CASES, 11)


def test_generic(batch_dir, capsys):
    run_generic(batch_dir, capsys)


@needs_qemu
@pytest.mark.parametrize("cores", [1, 8])
def test_siracusa(batch_dir, cores, capsys):
    run_siracusa(batch_dir, cores, capsys)


@needs_qemu
def test_siracusa_elf_has_dot_products(tmp_path, capsys):
    """An int8 3x3 convolution and a depthwise 3x3 run bit-exactly on the cluster on their
    dot-product loops: the ELF holds the 4 x 2 and 4 x 1 blocks' cv.sdotsp.b words (8 + 4) and the
    depthwise pair loop's cv.dotsp.b (2 per loop) besides its own cv.sdotsp.b (4 per loop)."""
    rng = np.random.default_rng(2)
    net = Net("Conv")
    x = net.input("input_0", ints_in(rng, -128, 127, (1, 8, 6, 6)))
    y = conv_rq(net, rng, x, 8, 3, name="conv")
    net.output(conv_rq(net, rng, y, 8, 3, group=8, name="dw"))
    write_test(net, tmp_path / "net")
    run_siracusa(tmp_path / "net", 8, capsys)
    words = _simd_words(tmp_path / "net" / "siracusa8" / "build" / "deeploy_test")
    assert words[SDOTSP_B] >= 8 + 4 + 4 and words[DOTSP_B] >= 2, words
