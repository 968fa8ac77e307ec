"""Sliding-window geometry shared by Conv and MaxPool: the 2-D window fields of their params and
the parsing of ``pads`` / ``auto_pad`` (a 1-D window is held as 2-D with height 1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from Deeploy.errors import OpError
from Deeploy.ir.graph import Node
from Deeploy.ops._attrs import attr_ints, attr_str

__all__ = ["WindowGeometry", "window_pads", "window_fields"]


@dataclass(frozen=True)
class WindowGeometry:
    """Geometry of a sliding window over the two spatial axes (a 1-D window has height 1)."""

    in_hw: tuple[int, int]
    out_hw: tuple[int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int]  # top, left, bottom, right


def _same_pads(mode: str, in_size: int, k: int, s: int, d: int) -> tuple[int, int]:
    out = -(-in_size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - in_size, 0)
    small = total // 2
    return (small, total - small) if mode == "SAME_UPPER" else (total - small, small)


def window_pads(node: Node, in_sizes: Sequence[int], kernel: Sequence[int], strides: Sequence[int],
                dilations: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(begin, end) padding per spatial axis from the node's ``pads`` or ``auto_pad``."""
    dims = len(in_sizes)
    mode = attr_str(node, "auto_pad", "NOTSET")
    if mode == "NOTSET":
        pads = attr_ints(node, "pads", (0,) * (2 * dims))
        if len(pads) != 2 * dims or min(pads) < 0:
            raise OpError(node, f"pads {list(pads)} must hold {2 * dims} non-negative values")
        return tuple(pads[:dims]), tuple(pads[dims:])
    if mode == "VALID":
        return (0,) * dims, (0,) * dims
    if mode not in ("SAME_UPPER", "SAME_LOWER"):
        raise OpError(node, f"unknown auto_pad '{mode}' (NOTSET, VALID, SAME_UPPER or SAME_LOWER)")
    both = [_same_pads(mode, in_sizes[a], kernel[a], strides[a], dilations[a]) for a in range(dims)]
    return tuple(b[0] for b in both), tuple(b[1] for b in both)


def _lift(values: Sequence[int], fill: int, dims: int) -> tuple[int, int]:
    return ((fill,) + tuple(values)) if dims == 1 else tuple(values)  # type: ignore[return-value]


def window_fields(in_sizes: Sequence[int], out_sizes: Sequence[int], kernel: Sequence[int],
                  strides: Sequence[int], dilations: Sequence[int], begin: Sequence[int],
                  end: Sequence[int]) -> dict[str, Any]:
    """The ``WindowGeometry`` fields of a 1-D or 2-D window (as many axes as ``in_sizes``), lifted
    to 2-D."""
    dims = len(in_sizes)
    b0, e0 = _lift(begin, 0, dims), _lift(end, 0, dims)
    return dict(in_hw=_lift(in_sizes, 1, dims), out_hw=_lift(out_sizes, 1, dims), kernel=_lift(kernel, 1, dims),
                stride=_lift(strides, 1, dims), dilation=_lift(dilations, 1, dims),
                pads=(b0[0], b0[1], e0[0], e0[1]))
