"""Layers of an engine with a job queue (an NPU) that run asynchronously: their straight-line tile
loop returns with the last tile's jobs in flight, the cluster layers that follow run meanwhile, and
the wait and the last tile's write-back come just before the first reader of their outputs (or the
first layer that cannot run beside them: another engine's, a rolled one, or one whose L1 tiles do
not fit above theirs).
The layers in between take their L1 tiles above the asynchronous layer's (``l1_base``), within
``--l1``. The order that puts independent layers there is the NPU targets' (``targets/npu/overlap.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from Deeploy.binding import Layer
from Deeploy.ir.graph import Graph
from Deeploy.tiling.dma_plan import loop_kind

__all__ = ["Overlaps", "plan_overlaps"]

_ALIGN = 16


@dataclass(frozen=True)
class Overlaps:
    """``finish``: reader layer index -> the asynchronous layers whose wait comes just before it
    (index ``len(layers)``: the end of the run); ``l1_base``: L1 offset of each layer in between."""

    finish: dict[int, list[int]] = field(default_factory=dict)
    l1_base: dict[int, int] = field(default_factory=dict)

    @property
    def deferred(self) -> set[int]:
        return {k for ks in self.finish.values() for k in ks}

    def l1_size(self, schedules: dict, l1_size: int) -> int:
        """The tile arena's bytes with the layers in between moved up."""
        return max([l1_size] + [base + schedules[j].l1_bytes for j, base in self.l1_base.items()])


def plan_overlaps(graph: Graph, layers: list[Layer], schedules: dict, l1: int, skip: set[int]) -> Overlaps:
    """Which tiled layers (``schedules``; none of ``skip``, the rolled ones) run asynchronously: an
    engine with a job queue (``tile_sync``) in straight-line code, followed by cluster layers
    (forked) whose tiles fit in ``l1`` above its own; the wait comes before the first layer that
    reads its outputs or does not qualify."""
    out = Overlaps()
    for k, layer in enumerate(layers):
        sched = schedules.get(k)
        if (sched is None or k in skip or layer.engine.forked or not layer.engine.tile_sync
                or loop_kind(layer, sched) != "code"):
            continue
        outs = set(layer.node.outputs)
        base = (sched.l1_bytes + _ALIGN - 1) // _ALIGN * _ALIGN
        stop = next((j for j in range(k + 1, len(layers)) if outs & set(layers[j].node.inputs) or j in skip
                     or (j in schedules and (not layers[j].engine.forked or base + schedules[j].l1_bytes > l1))),
                    len(layers))
        between = [j for j in range(k + 1, stop) if j in schedules]
        if between:
            out.finish.setdefault(stop, []).append(k)
            out.l1_base.update({j: base for j in between})
    return out
