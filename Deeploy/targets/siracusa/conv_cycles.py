"""Modelled cycles of one requantised channels-last convolution call on the cluster (Siracusa
``conv2d_hwc.inc`` with ``CONV_REQUANT``, integer, not depthwise), as a formula of the tile's
shape and the core count, for the tiler's cost model.

The kernel splits the output pixels over the cores (the output channels when there are fewer
pixels than cores) and sums each output over the taps of its window that lie inside the image
and the group's input channels, in register blocks of two pixels x four channels. The slowest
core costs

    outputs * (PER_OUTPUT + taps * (PER_TAP + cig * PER_MAC))

with ``outputs`` its pixels times its output channels, ``taps`` the window taps inside the image
per output pixel (on average over the layer: ``window_taps``) and ``cig`` the input channels per
group. The constants were fitted (least squares on the relative error) to the calibrated cycle
model (``timing.py``) on 11 single-tile runs of 1x1, 3x3 and 3x3 stride-2 convolutions, 3..64
input and 8..64 output channels, 4x4..32x32 images, on 1 and 8 cores: all within 6%
(``DeeployTest/test_suite/test_conv_cycles.py`` checks other shapes within 10%)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

__all__ = ["PER_OUTPUT", "PER_TAP", "PER_MAC", "window_taps", "conv_rq_cycles", "ConvTileCycles", "conv_tile_model"]

PER_OUTPUT = 30.7
PER_TAP = 6.26
PER_MAC = 4.12


def _inside(in_size: int, out_size: int, k: int, stride: int, dilation: int, pad: int) -> int:
    """Taps of a 1-D window inside the input, summed over the output positions."""
    return sum(sum(1 for t in range(k) if 0 <= o * stride - pad + t * dilation < in_size) for o in range(out_size))


def window_taps(p) -> float:
    """The taps inside the image per output pixel, on average over the convolution's output."""
    (oh, ow), (ih, iw) = p.out_hw, p.in_hw
    rows = _inside(ih, oh, p.kernel[0], p.stride[0], p.dilation[0], p.pads[0])
    cols = _inside(iw, ow, p.kernel[1], p.stride[1], p.dilation[1], p.pads[1])
    return rows * cols / max(oh * ow, 1)


def conv_rq_cycles(batch: int, pixels: int, channels: int, taps: float, cig: int, cores: int) -> float:
    """Modelled kernel cycles of ``batch`` images of ``pixels`` output pixels x ``channels``
    output channels, ``taps`` window taps per pixel over ``cig`` input channels, on ``cores``
    cores."""
    if pixels >= cores:
        outputs = math.ceil(pixels / cores) * channels
    else:
        outputs = pixels * math.ceil(channels / cores)
    return batch * outputs * (PER_OUTPUT + taps * (PER_TAP + cig * PER_MAC))


@dataclass(frozen=True)
class ConvTileCycles:
    """Compute cycles of one tile (extents of the dims N, OH, OW, CO) of a requantised
    convolution with ``taps`` window taps per pixel over ``cig`` input channels: a LayerSpec's
    ``tile_cycles``."""

    taps: float
    cig: int
    cores: int

    def __call__(self, ext: Mapping[str, int]) -> int:
        return math.ceil(conv_rq_cycles(ext.get("N", 1), ext["OH"] * ext["OW"], ext["CO"], self.taps, self.cig,
                                        self.cores))


def conv_tile_model(node, graph, cores: int) -> ConvTileCycles | None:
    """The tile cycles of a requantised channels-last integer convolution that is not depthwise
    (the kernel this formula describes); None for the others (the tiler's ops model)."""
    p = node.params.base
    if not p.channels_last or p.depthwise:
        return None
    if any(graph.tensors[t].dtype.is_float for t in node.inputs[:2]):
        return None
    return ConvTileCycles(window_taps(p), p.ch_in // p.group, cores)
