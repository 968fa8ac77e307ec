"""Layers of an engine with a job queue (an NPU) that run asynchronously: their straight-line tile
loop returns with the last tile's jobs in flight, the cluster layers that follow run meanwhile, and
the wait and the last tile's write-back come just before the first layer that reads their outputs
or cannot run beside them (another engine's, one of a region, or one whose L1 tiles do not fit
above theirs). The layers in between take their L1 tiles above the asynchronous layer's
(``l1_base``), within ``--l1``. Where it costs less, such a layer runs as one tile, its whole job
in flight (``plan_overlaps``'s ``whole``). The order that puts independent layers after a job layer
is the NPU targets' (``targets/npu/overlap.py``); codegen renders the waits (``codegen/tiled.py``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from Deeploy.binding import Layer
from Deeploy.tiling.dma_plan import loop_kind
from Deeploy.tiling.schedule import TileSchedule

__all__ = ["Overlaps", "plan_overlaps"]

_ALIGN = 16     # the L1 base of the layers in between: a multiple of this and of the level's alignment


@dataclass(frozen=True)
class Overlaps:
    """``finish``: layer index -> the asynchronous layers waited for just before it (index
    ``len(layers)``: the end of the run); ``l1_base``: the L1 offset of each layer in between;
    ``hidden``: per asynchronous layer, the modelled cycles of its jobs the layers in between cover."""

    finish: dict[int, list[int]] = field(default_factory=dict)
    l1_base: dict[int, int] = field(default_factory=dict)
    hidden: dict[int, int] = field(default_factory=dict)

    @property
    def deferred(self) -> set[int]:
        return {k for ks in self.finish.values() for k in ks}


def _window(layers: list[Layer], schedules: dict[int, TileSchedule], k: int, sched: TileSchedule, l1: int,
            skip: set[int], align: int) -> tuple[int, int, list[int]]:
    """(the layer waiting for ``k``, the L1 base of the layers in between, the tiled ones among them)."""
    outs = set(layers[k].node.outputs)
    base = (sched.l1_bytes + align - 1) // align * align
    stop = next((j for j in range(k + 1, len(layers)) if outs & set(layers[j].node.inputs) or j in skip
                 or (j in schedules and (not layers[j].engine.forked or base + schedules[j].l1_bytes > l1))),
                len(layers))
    return stop, base, [j for j in range(k + 1, stop) if j in schedules]


def plan_overlaps(layers: list[Layer], schedules: dict[int, TileSchedule], l1: int, skip: set[int],
                  cycles: Callable[[TileSchedule], int],
                  whole: Callable[[int], TileSchedule | None] | None = None,
                  alignment: int = 4) -> tuple[Overlaps, dict]:
    """Which tiled layers (``schedules``; none of ``skip``) run asynchronously: an engine with a job
    queue (``tile_sync``) in straight-line code with cluster layers (forked) after it, within ``l1``
    bytes of the tile level (buffers aligned to ``alignment``). ``whole(k)``:
    layer k as one tile (None if it does not fit), taken where its modelled cycles (``cycles``) less
    the job cycles the layers in between cover are fewer. Returns the overlaps and the schedules."""
    out, schedules = Overlaps(), dict(schedules)
    align = math.lcm(_ALIGN, alignment)
    for k, layer in enumerate(layers):
        sched = schedules.get(k)
        if (sched is None or k in skip or layer.engine.forked or not layer.engine.tile_sync
                or loop_kind(layer, sched) != "code"):
            continue
        if not _window(layers, schedules, k, sched, l1, skip, align)[2]:
            continue      # nothing beside it (a single tile, taking more L1, has no more)
        options = [sched] + ([w] if whole is not None and sched.num_tiles > 1 and (w := whole(k)) is not None
                             and loop_kind(layer, w) == "code" else [])
        best = None
        for option in options:
            stop, base, between = _window(layers, schedules, k, option, l1, skip, align)
            if not between:
                continue
            last_job = option.l1.compute_cycles // max(1, option.num_tiles)
            hidden = min(last_job, sum(cycles(schedules[j]) for j in between))
            if best is None or cycles(option) - hidden < cycles(best[0]) - best[4]:
                best = (option, stop, base, between, hidden)
        if best is None:
            continue
        option, stop, base, between, hidden = best
        schedules[k] = option
        out.finish.setdefault(stop, []).append(k)
        out.l1_base.update({j: base for j in between})
        out.hidden[k] = hidden
    return out, schedules
