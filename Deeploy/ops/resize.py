"""Resize (opsets 11-19): modes nearest (any data type) and linear (float data; N-linear over every
resized axis), constant ``scales`` or ``sizes``. Every output index's source indices and weights
are fixed by the shapes: they are computed once here, in float32 as onnxruntime computes them, and
the reference and the kernels read the same tables."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from Deeploy.errors import OpError
from Deeploy.ops._attrs import attr_int, attr_ints, attr_str, const_input, in_tensor, normalize_axis, require_inputs
from Deeploy.ops.examples import F32, I8, U8, Case, act, const, frand, i64, rand
from Deeploy.ops._registry import Cost, OpDef, Trait, register

__all__ = ["ResizeParams", "AxisTaps"]

_F = np.float32
_TRANSFORMS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
               "tf_half_pixel_for_nn")
_NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


@dataclass(frozen=True)
class AxisTaps:
    """Per output index of one axis: the input indices it reads (``lo``, and ``hi`` for linear) and
    their weights (float32)."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    w_lo: tuple[float, ...]
    w_hi: tuple[float, ...]

    @property
    def identity(self) -> bool:
        """Output index i reads input index i alone."""
        return all(lo == i and (w == 0.0 or hi == lo) for i, (lo, hi, w) in enumerate(zip(self.lo, self.hi, self.w_hi)))


@dataclass(frozen=True)
class ResizeParams:
    """Input and output shapes, the mode, the scale of every axis and its taps."""

    in_shape: tuple[int, ...]
    out_shape: tuple[int, ...]
    linear: bool
    scales: tuple[float, ...]
    taps: tuple[AxisTaps, ...]
    from_sizes: bool
    stretch: bool

    @property
    def kept(self) -> tuple[int, ...]:
        """Axes the resize leaves alone (scale 1, identity taps): tiles may cut them."""
        return tuple(k for k, (s, t) in enumerate(zip(self.scales, self.taps)) if s == 1.0 and t.identity)

    @property
    def resized(self) -> tuple[int, ...]:
        return tuple(k for k in range(len(self.in_shape)) if k not in self.kept)


def _original(mode: str, x: int, scale, n_in: int, n_out: int):
    """The input coordinate of output index ``x`` (float32 arithmetic, onnxruntime's order)."""
    x, scale, n_in, n_out = _F(x), _F(scale), _F(n_in), _F(n_out)
    if mode == "half_pixel":
        return (x + _F(0.5)) / scale - _F(0.5)
    if mode == "half_pixel_symmetric":
        adjustment = n_out / (scale * n_in)
        offset = n_in / _F(2) * (_F(1) - adjustment)
        return offset + (x + _F(0.5)) / scale - _F(0.5)
    if mode == "pytorch_half_pixel":
        return (x + _F(0.5)) / scale - _F(0.5) if n_out > 1 else _F(0)
    if mode == "align_corners":
        return _F(0) if n_out == 1 else x * (n_in - _F(1)) / (n_out - _F(1))
    if mode == "asymmetric":
        return x / scale
    return (x + _F(0.5)) / scale                                        # tf_half_pixel_for_nn


def _nearest(mode: str, v) -> int:
    if mode == "round_prefer_floor":
        return int(np.floor(v)) if v == _F(int(v)) + _F(0.5) else int(np.sign(v) * np.floor(abs(v) + 0.5))
    if mode == "round_prefer_ceil":
        return int(np.sign(v) * np.floor(abs(v) + 0.5))
    return int(np.floor(v)) if mode == "floor" else int(np.ceil(v))


def _taps(linear: bool, transform: str, nearest: str, scale, n_in: int, n_out: int) -> AxisTaps:
    lo, hi, w_lo, w_hi = [], [], [], []
    for x in range(n_out):
        v = _F(x) if scale == 1.0 and linear else _original(transform, x, scale, n_in, n_out)
        if not linear:
            i = min(max(_nearest(nearest, v), 0), n_in - 1)
            lo.append(i), hi.append(i), w_lo.append(1.0), w_hi.append(0.0)
            continue
        v = max(_F(0), min(v, _F(n_in - 1)))
        a = min(int(v), n_in - 1)
        b = min(a + 1, n_in - 1)
        da, db = (_F(0.5), _F(0.5)) if a == b else (abs(v - _F(a)), abs(v - _F(b)))
        lo.append(a), hi.append(b), w_lo.append(float(db)), w_hi.append(float(da))
    return AxisTaps(tuple(lo), tuple(hi), tuple(w_lo), tuple(w_hi))


def _resize_parse(node, graph):
    require_inputs(node, 3, 4)
    x = graph.tensors[node.inputs[0]]
    shape, rank = tuple(x.shape), len(x.shape)
    mode = attr_str(node, "mode", "nearest")
    if mode not in ("nearest", "linear"):
        raise OpError(node, f"mode '{mode}' is not supported; use 'nearest' or 'linear'")
    transform = attr_str(node, "coordinate_transformation_mode", "half_pixel")
    if transform not in _TRANSFORMS:
        raise OpError(node, f"coordinate_transformation_mode '{transform}' is not supported; use one of "
                      f"{', '.join(_TRANSFORMS)}")
    nearest = attr_str(node, "nearest_mode", "round_prefer_floor")
    if nearest not in _NEAREST:
        raise OpError(node, f"nearest_mode '{nearest}' is not one of {', '.join(_NEAREST)}")
    linear = mode == "linear"
    if linear and x.dtype.is_integer:
        raise OpError(node, f"linear Resize of integer data ('{x.name}', {x.dtype}) is not supported; "
                      "use mode 'nearest' or Resize float data")
    if linear and attr_int(node, "antialias", 0):
        raise OpError(node, "antialias is not supported")
    axes = [normalize_axis(node, a, rank, "axes") for a in attr_ints(node, "axes", tuple(range(rank)))]
    policy = attr_str(node, "keep_aspect_ratio_policy", "stretch")
    scales_t, sizes_t = in_tensor(node, graph, 2), in_tensor(node, graph, 3)
    given = [t for t in (scales_t, sizes_t) if t is not None and t.size]
    if len(given) != 1:
        raise OpError(node, "give exactly one of 'scales' and 'sizes' (a constant)")
    scale, out = [1.0] * rank, list(shape)
    if given[0] is scales_t:
        const_input(node, graph, 2, "scales")
        values = np.asarray(scales_t.value, dtype=_F).reshape(-1)
        if len(values) != len(axes) or not np.all(values > 0):
            raise OpError(node, f"scales {values.tolist()} must be {len(axes)} positive values")
        for a, s in zip(axes, values):
            scale[a], out[a] = float(s), int(np.floor(_F(s) * _F(shape[a])))
    else:
        sizes = const_input(node, graph, 3, "sizes").reshape(-1)
        if len(sizes) != len(axes) or np.any(sizes < 0):
            raise OpError(node, f"sizes {sizes.tolist()} must be {len(axes)} non-negative lengths")
        if policy == "stretch":
            for a, n in zip(axes, sizes):
                out[a], scale[a] = int(n), float(_F(n) / _F(shape[a]))
        elif policy in ("not_larger", "not_smaller"):
            ratios = [_F(n) / _F(shape[a]) for a, n in zip(axes, sizes)]
            common = float(min(ratios) if policy == "not_larger" else max(ratios))
            for a in axes:
                scale[a], out[a] = common, int(np.round(common * shape[a]))
        else:
            raise OpError(node, f"keep_aspect_ratio_policy '{policy}' is not one of stretch, not_larger, not_smaller")
    taps = tuple(_taps(linear, transform, nearest, scale[k], shape[k], out[k]) for k in range(rank))
    return ResizeParams(shape, tuple(out), linear, tuple(scale), taps, given[0] is sizes_t, policy == "stretch")


def _resize_reference(p: ResizeParams, xs):
    x = xs[0]
    if not p.linear:
        return [x[np.ix_(*[np.asarray(t.lo, dtype=np.int64) for t in p.taps])]] if x.size else [
            np.zeros(p.out_shape, x.dtype)]
    acc = np.zeros(p.out_shape, np.float64)
    for corner in itertools.product((0, 1), repeat=len(p.taps)):
        index, weight = [], np.ones((), np.float64)
        for k, (t, c) in enumerate(zip(p.taps, corner)):
            index.append(np.asarray(t.hi if c else t.lo, dtype=np.int64))
            w = np.asarray(t.w_hi if c else t.w_lo, np.float64)
            weight = np.multiply.outer(weight, w) if k else w
        acc += weight * x.astype(np.float64)[np.ix_(*index)]
    return [acc.astype(np.float32)]


def _resize_cost(p: ResizeParams, ins, outs):
    corners = 2 ** len(p.resized) if p.linear else 0
    return Cost(2 * corners * outs[0].size, ins[0].nbytes + outs[0].nbytes)


def _resize_cases(rng):
    def scales(*v):
        return const(np.array(v, F32))
    empty = const(np.zeros(0, F32))
    return [
        Case("nearest_int8_scales_2x", (act(rand(rng, [1, 2, 3, 4]), I8), None, scales(1, 1, 2, 2))),
        Case("nearest_asymmetric_floor_down", (act(rand(rng, [1, 1, 7, 9], 0, 255), U8), None, scales(1, 1, 0.6, 0.45)),
             dict(coordinate_transformation_mode="asymmetric", nearest_mode="floor"), out_type="uint8"),
        Case("nearest_round_prefer_ceil_sizes", (act(rand(rng, [2, 5, 3]), I8), empty, empty, const(i64(2, 8, 7))),
             dict(nearest_mode="round_prefer_ceil")),
        Case("nearest_align_corners_ceil", (act(frand(rng, [1, 3, 4, 5]), F32), None, None, const(i64(1, 3, 7, 3))),
             dict(coordinate_transformation_mode="align_corners", nearest_mode="ceil"), out_type="float32"),
        Case("linear_half_pixel_up", (act(frand(rng, [1, 2, 3, 4]), F32), None, scales(1, 1, 2.5, 1.5)),
             dict(mode="linear"), out_type="float32"),
        Case("linear_align_corners_sizes", (act(frand(rng, [2, 3, 5, 4]), F32), None, None, const(i64(2, 3, 3, 9))),
             dict(mode="linear", coordinate_transformation_mode="align_corners"), out_type="float32"),
        Case("linear_pytorch_half_pixel_down", (act(frand(rng, [1, 2, 8, 6]), F32), None, scales(1, 1, 0.5, 0.34)),
             dict(mode="linear", coordinate_transformation_mode="pytorch_half_pixel"), out_type="float32"),
        Case("linear_asymmetric_2d", (act(frand(rng, [3, 4]), F32), None, scales(2, 1.75)),
             dict(mode="linear", coordinate_transformation_mode="asymmetric"), out_type="float32"),
        Case("opset19_axes_not_larger", (act(frand(rng, [1, 2, 4, 6]), F32), None, None, const(i64(6, 6))),
             dict(mode="linear", axes=[2, 3], keep_aspect_ratio_policy="not_larger",
                  coordinate_transformation_mode="half_pixel_symmetric"), opset=19, out_type="float32"),
    ]


register(OpDef("Resize", _resize_parse, lambda p, ins: [(p.out_shape, ins[0].dtype)], _resize_reference,
               _resize_cost, traits=frozenset({Trait.STANDARD}), tiling="resize", examples=_resize_cases))
