"""Modelled cycles of one requantised channels-last convolution call on the cluster (Siracusa
``conv2d_hwc.inc`` with ``CONV_REQUANT``, integer), as a formula of the tile's shape and the core
count, for the tiler's cost model: ``conv_rq_cycles`` (not depthwise) and ``dw_cycles``
(depthwise 3x3 with 8-bit operands).

The kernel splits the output pixels over the cores (the output channels when there are fewer
pixels than cores) and sums each output over the taps of its window that lie inside the image
and the group's input channels, in register blocks of two pixels x four channels on the
cluster's dot-product loop (a window row's bytes a word at a time); a pixel whose window is
clipped differently from its neighbour's runs alone (four channels), at a higher cost per
multiply-accumulate. The slowest core costs

    outputs * (PER_OUTPUT + taps * (PER_TAP + cig * (PER_MAC + single * PER_SINGLE_MAC)))

with ``outputs`` its pixels times its output channels, ``taps`` the window taps inside the image
per output pixel (on average over the layer: ``window_taps``), ``cig`` the input channels per
group and ``single`` the share of pixels that run alone (``single_share``). The constants were
fitted (least squares on the relative error) to the calibrated cycle model (``timing.py``) on
14 single-tile runs of 1x1, 3x3 and 3x3 stride-2 convolutions, 8..64 input and 8..64 output
channels, 6x6..32x32 images, on 1 and 8 cores: all within 8%. Layers the formula knows less
well: 3 input channels (the row's bytes mostly a tail in C) and images so small that a core has
no pixel pairs (4x4 on 8 cores); grouped convolutions and other operand types run in C, slower.
(``DeeployTest/test_suite/test_conv_cycles.py`` checks other shapes within 10%)

The last ``channels % 4`` output channels of a core's share (a tile of 10 of 64, say, or 2 each
when 16 channels of fewer pixels than cores split) leave the blocks: each of those outputs is
summed alone in C, for REST_PER_OUTPUT +
taps * cig * REST_PER_MAC. Fitted the same way on 4 runs (3x3 and 1x1, strides 1 and 2, 5..18
output channels, 8 cores: within 8%), tested on 2 others (3 channels on 8 cores, 7 on 1 core:
within 8%); priced as blocks, a ResNet8 convolution tiled into 10 of 64 channels cost 4x its price.

The depthwise 3x3 kernel splits the channels over the cores (the output rows when there are
fewer channels than cores and rows), gathers each channel's input rows into a plane and sums
the outputs on dot products; the slowest core costs

    channels * (rows * cols * DW_PER_OUTPUT + in_rows * cols * stride * DW_PER_BYTE
                + rows * DW_PER_ROW + DW_PER_CHANNEL)

with ``channels`` and ``rows`` its share, ``cols`` the output columns, ``in_rows`` the input
rows its output rows read. Fitted the same way on 10 runs (4..64 channels, 8x8..32x32 images,
strides 1 and 2, 1 and 8 cores): all within 2%."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

__all__ = ["PER_OUTPUT", "PER_TAP", "PER_MAC", "PER_SINGLE_MAC", "REST_PER_OUTPUT", "REST_PER_MAC", "window_taps",
           "single_share", "DW_PER_OUTPUT", "DW_PER_BYTE", "DW_PER_ROW", "DW_PER_CHANNEL", "dw_cycles", "DwTileCycles",
           "conv_rq_cycles", "ConvTileCycles", "conv_tile_model"]

PER_OUTPUT = 17.7
PER_TAP = 1.64
PER_MAC = 0.413
PER_SINGLE_MAC = 0.251
REST_PER_OUTPUT = 53.3
REST_PER_MAC = 9.98
DW_PER_OUTPUT = 9.46
DW_PER_BYTE = 3.11
DW_PER_ROW = 18.4
DW_PER_CHANNEL = 134.0


def _inside(in_size: int, out_size: int, k: int, stride: int, dilation: int, pad: int) -> int:
    """Taps of a 1-D window inside the input, summed over the output positions."""
    return sum(sum(1 for t in range(k) if 0 <= o * stride - pad + t * dilation < in_size) for o in range(out_size))


def window_taps(p) -> float:
    """The taps inside the image per output pixel, on average over the convolution's output."""
    (oh, ow), (ih, iw) = p.out_hw, p.in_hw
    rows = _inside(ih, oh, p.kernel[0], p.stride[0], p.dilation[0], p.pads[0])
    cols = _inside(iw, ow, p.kernel[1], p.stride[1], p.dilation[1], p.pads[1])
    return rows * cols / max(oh * ow, 1)


def single_share(p) -> float:
    """The share of an output row's pixels the kernel sums alone: it pairs a pixel with the next
    one when their windows have the same columns inside the image."""
    ow, iw, k, s, d, pad = p.out_hw[1], p.in_hw[1], p.kernel[1], p.stride[1], p.dilation[1], p.pads[1]

    def columns(o: int) -> tuple[int, ...]:
        return tuple(t for t in range(k) if 0 <= o * s - pad + t * d < iw)

    singles, o = 0, 0
    while o < ow:
        pair = o + 1 < ow and columns(o) == columns(o + 1)
        singles += not pair
        o += 2 if pair else 1
    return singles / max(ow, 1)


def conv_rq_cycles(batch: int, pixels: int, channels: int, taps: float, cig: int, cores: int,
                   single: float = 0.0) -> float:
    """Modelled kernel cycles of ``batch`` images of ``pixels`` output pixels x ``channels``
    output channels, ``taps`` window taps per pixel over ``cig`` input channels, a share
    ``single`` of the pixels summed alone, on ``cores`` cores."""
    if pixels >= cores:
        pixels = math.ceil(pixels / cores)
    else:
        channels = math.ceil(channels / cores)
    block = PER_OUTPUT + taps * (PER_TAP + cig * (PER_MAC + single * PER_SINGLE_MAC))
    return batch * pixels * (channels // 4 * 4 * block + channels % 4 * (REST_PER_OUTPUT + taps * cig * REST_PER_MAC))


def dw_cycles(batch: int, rows: int, cols: int, channels: int, stride: tuple[int, int], cores: int) -> float:
    """Modelled kernel cycles of a depthwise 3x3 convolution (dilation 1, 8-bit operands) of
    ``batch`` images of ``rows`` x ``cols`` output pixels x ``channels`` channels with ``stride``
    (rows, columns), on ``cores`` cores."""
    by_channel = channels >= cores or channels >= rows
    mine = math.ceil(channels / cores) if by_channel else channels
    my_rows = rows if by_channel else math.ceil(rows / cores)
    in_rows = (my_rows - 1) * stride[0] + 3
    return batch * mine * (my_rows * cols * DW_PER_OUTPUT + in_rows * cols * stride[1] * DW_PER_BYTE
                           + my_rows * DW_PER_ROW + DW_PER_CHANNEL)


@dataclass(frozen=True)
class DwTileCycles:
    """Compute cycles of one tile (extents of the dims N, OH, OW, CO) of a requantised depthwise
    3x3 convolution with ``stride``: a LayerSpec's ``tile_cycles``."""

    stride: tuple[int, int]
    cores: int

    def __call__(self, ext: Mapping[str, int]) -> int:
        return math.ceil(dw_cycles(ext.get("N", 1), ext["OH"], ext["OW"], ext["CO"], self.stride, self.cores))


@dataclass(frozen=True)
class ConvTileCycles:
    """Compute cycles of one tile (extents of the dims N, OH, OW, CO) of a requantised
    convolution with ``taps`` window taps per pixel over ``cig`` input channels, a share
    ``single`` of its pixels summed alone: a LayerSpec's ``tile_cycles``."""

    taps: float
    cig: int
    cores: int
    single: float = 0.0

    def __call__(self, ext: Mapping[str, int]) -> int:
        return math.ceil(conv_rq_cycles(ext.get("N", 1), ext["OH"] * ext["OW"], ext["CO"], self.taps, self.cig,
                                        self.cores, self.single))


def conv_tile_model(node, graph, cores: int) -> ConvTileCycles | DwTileCycles | None:
    """The tile cycles of a requantised channels-last integer convolution: not depthwise, or
    depthwise 3x3 (dilation 1) with 8-bit operands (the kernels these formulas describe); None for
    the others (the tiler's ops model)."""
    p = node.params.base
    operands = [graph.tensors[t].dtype for t in node.inputs[:2]]
    if not p.channels_last or any(t.is_float for t in operands):
        return None
    if p.depthwise:
        dw3x3 = tuple(p.kernel) == (3, 3) and tuple(p.dilation) == (1, 1)
        return DwTileCycles(tuple(p.stride), cores) if dw3x3 and all(t.bits == 8 for t in operands) else None
    return ConvTileCycles(window_taps(p), p.ch_in // p.group, cores, single_share(p))
