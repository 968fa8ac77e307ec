"""RequantShift calibration: choose ``mul``, ``add`` and ``div = 2^shift`` so that the 8-bit
output of ``(acc*mul + add + 2^(shift-1)) >> shift`` uses most of its range on the observed
accumulators (a small fraction saturates), while ``|acc*mul + add|`` stays below 2^31 for every
accumulator the inputs' types allow (``bound``), not only for the observed ones."""

from __future__ import annotations

import numpy as np

from DeeployTest.generators.limits import INT32_LIMIT, BuildError

__all__ = ["calibrate", "pick_shift"]


def _groups(acc: np.ndarray, axis: int | None) -> np.ndarray:
    if axis is None:
        return acc.reshape(1, -1)
    return np.moveaxis(acc, axis, 0).reshape(acc.shape[axis], -1)


def pick_shift(scale: np.ndarray, offset: np.ndarray, bound: int, max_shift: int = 20):
    """The largest shift <= max_shift for which the rounded mul/add keep the worst-case
    accumulator inside int32; returns (mul, add, shift)."""
    for shift in range(max_shift, -1, -1):
        mul = np.round(scale * (1 << shift)).astype(np.int64)
        add = np.round(offset * (1 << shift)).astype(np.int64)
        mul = np.where(mul == 0, np.where(scale < 0, -1, 1), mul)  # never a zero multiplier
        worst = int(np.max(np.abs(mul))) * bound + int(np.max(np.abs(add))) + (1 << max(shift - 1, 0))
        if worst < INT32_LIMIT:
            return mul, add, shift
    raise BuildError(f"no RequantShift fits int32 for accumulators bounded by {bound}")


def calibrate(acc: np.ndarray, bound: int, signed: bool = True, axis: int | None = None,
              target: float | None = None, center: bool = True, max_shift: int = 20,
              rng: np.random.Generator | None = None, percentile: float = 99.7,
              zero_frac: float | None = None):
    """Per-tensor (axis None) or per-channel RequantShift parameters for accumulators ``acc``.

    signed: map [-amp, amp] around the (per-group) mean onto +-target (default 120), where amp
    is the given percentile of |acc - mean|. unsigned: map the [100-p, p] percentile interval
    onto [0, target] (default 250), or, with ``zero_frac``, the interval from that quantile
    (a ReLU-like cut: that fraction of the outputs clips to 0). ``rng`` adds a small random offset (as a folded batch-norm
    bias would). Returns (mul, add, shift) with mul/add as 1-D int64 arrays (one per group).
    """
    acc = np.asarray(acc, dtype=np.int64)
    groups = _groups(acc, axis).astype(np.float64)
    if signed:
        target = 120.0 if target is None else target
        c = np.round(groups.mean(axis=1)) if center else np.zeros(groups.shape[0])
        amp = np.percentile(np.abs(groups - c[:, None]), percentile, axis=1)
        amp = np.maximum(amp, 1.0)
        scale = target / amp
        offset = -c * scale
        if rng is not None:
            offset = offset + rng.uniform(-4, 4, size=offset.shape)
    else:
        target = 250.0 if target is None else target
        lo = np.percentile(groups, 100 - percentile if zero_frac is None else 100 * zero_frac, axis=1)
        hi = np.percentile(groups, percentile, axis=1)
        span = np.maximum(hi - lo, 1.0)
        scale = target / span
        offset = -lo * scale
        if rng is not None:
            offset = offset + rng.uniform(0, 3, size=offset.shape)
    return pick_shift(scale, offset, bound, max_shift)
