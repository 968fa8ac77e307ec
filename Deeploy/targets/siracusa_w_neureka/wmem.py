"""Weight-memory placement (``--neureka-wmem``): which NPU weight blobs live in the weight memory.

Every NeurekaConv layer's encoded weight blob is a candidate. Its value is the modelled cycles
it saves there: tiled, the tiler's cycles of the layer with the blob DMA'd per tile (from L2 or
L3, as placed) less those with the blob read in place (no DMA, no L1 slot; the freed L1 may also
allow larger tiles); untiled, the cycles of one DMA of the blob into L1 (what the NPU, reading
through its L1 port, would otherwise need). The blobs placed are the best knapsack within the
weight memory's capacity (``Deeploy/memory/knapsack.py``), not the first in graph order. They
are valued on the memory plan made without them; the compiler plans again with them in the
placement (``memory/planner.Placement.weights``), where each becomes a ``BufferKind.WEIGHT`` of the
weight-memory level (a constant array in its section, loaded with the program as the MRAM/SRAM
would be preloaded); its job gets the config bit that selects the weight memory
(``NpuConvParams.wmem``).

Weights of a rolled region's body stored in L3 are streamed (``memory/stream.py``): when every NPU
blob fits the weight memory, they are preloaded there instead (not streamed); when they do not
but two iterations' worth do, they are streamed into a double buffer in the weight memory (the
next iteration's copied from L3 while this one runs), so the jobs read them through the weight
port and the blobs preloaded take the rest of it (``stream_into_wmem``)."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from Deeploy.binding import Layer
from Deeploy.errors import TilingError
from Deeploy.ir.graph import Graph
from Deeploy.ir.region import InputKind, body_inputs
from Deeploy.memory.knapsack import Item, choose
from Deeploy.memory.planner import BufferKind, MemoryPlan, align

__all__ = ["place_weights", "stream_into_wmem", "weight_values"]

WMEM = "WMEM"
# A layer that tiles only with its weights in the weight memory: placing them comes first.
MUST_PLACE = 10**9


def _dma_cycles(nbytes: int, params) -> int:
    """One 1-D DMA of ``nbytes`` into L1 (the tiling DMA model: set-up, then bytes per cycle)."""
    return params.dma_setup + -(-nbytes // params.dma_bytes_per_cycle)


def _layer_cycles(layer: Layer, graph: Graph, plan: MemoryPlan, platform, tiling, cores: int, budget: int,
                  resident: frozenset[str]) -> int | None:
    """The tiler's modelled cycles of ``layer`` with ``resident`` read in place; None: it does not tile."""
    from Deeploy.tiling.network import schedule_cycles, schedule_one
    try:
        sched = schedule_one(layer, graph, plan, tiling, platform.tiling, cores, budget, resident)
    except TilingError:
        return None
    return 0 if sched is None else schedule_cycles(sched)


def stream_into_wmem(graph: Graph, layers: list[Layer], platform) -> dict[str, tuple[str, int] | None]:
    """Where the NPU weights of rolled regions go when streamed (see the module doc): None (not
    streamed: every blob is preloaded) or the weight memory's double buffer."""
    level = platform.level(WMEM)
    blobs = {layer.node.inputs[1] for layer in layers if layer.node.op == "NeurekaConv"}
    families = [b.tensors for region in graph.regions for b in body_inputs(graph, region)
                if b.kind == InputKind.PER_ITERATION and set(b.tensors) <= blobs]
    if sum(align(graph.tensors[w].nbytes, level.alignment) for w in blobs) <= level.size:
        return {t: None for f in families for t in f}
    per_iteration = sum(align(graph.tensors[f[0]].nbytes, level.alignment) for f in set(families))
    if 2 * per_iteration > level.size:
        return {}
    return {t: (WMEM, level.alignment) for f in families for t in f}


def weight_values(graph: Graph, layers: list[Layer], plan: MemoryPlan, platform, tiling, cores: int
                  ) -> dict[str, tuple[int, int]]:
    """(bytes, modelled cycles saved) of every NPU weight blob in the weight memory."""
    from Deeploy.tiling.network import staging_budget
    level = platform.level(WMEM)
    values: dict[str, tuple[int, int]] = {}
    budget = staging_budget(graph, plan, tiling) if tiling is not None else 0
    for layer in layers:
        if layer.node.op != "NeurekaConv" or plan.placements[layer.node.inputs[1]].kind == BufferKind.STREAMED:
            continue
        w = layer.node.inputs[1]
        size = align(graph.tensors[w].nbytes, level.alignment)
        if tiling is None:
            saved = _dma_cycles(graph.tensors[w].nbytes, platform.tiling.tiles)
        else:
            in_place = _layer_cycles(layer, graph, plan, platform, tiling, cores, budget, frozenset({w}))
            moved = _layer_cycles(layer, graph, plan, platform, tiling, cores, budget, frozenset())
            if in_place is None:
                saved = 0
            elif moved is None:
                saved = MUST_PLACE + in_place
            else:
                saved = max(0, moved - in_place)
        values[w] = (size, values.get(w, (size, 0))[1] + saved)
    return values


def place_weights(graph: Graph, layers: list[Layer], plan: MemoryPlan, platform, tiling, cores: int,
                  log: Callable[[str], None] | None = None) -> tuple[dict[str, str], list[str]]:
    """The NPU weight blobs to place in the weight memory (tensor -> its level), chosen on ``plan``
    (made without them; it is not changed), and notes saying what was placed; the jobs of the
    blobs placed or streamed there get the weight-memory bit."""
    streamed = _read_streamed(layers, plan)
    values = weight_values(graph, layers, plan, platform, tiling, cores)
    if not values:
        return {}, streamed or ["--neureka-wmem: no layer runs on the NPU, the weight memory stays empty"]
    capacity = platform.level(WMEM).size - plan.stream_buffers.get(WMEM, 0)
    chosen = set(choose([Item(w, size, value) for w, (size, value) in values.items()], capacity))
    for w, (size, value) in values.items():
        if log:
            worth = f"{value % MUST_PLACE} modelled cycles" + (" (its layer tiles only so)" if value >= MUST_PLACE else "")
            log(f"weight memory: '{w}' {size} B saves {worth}: "
                f"{'placed' if w in chosen else 'DMA per tile'}")
    for layer in layers:
        if layer.node.op == "NeurekaConv" and layer.node.inputs[1] in chosen:
            layer.node.attrs["wmem"] = 1
            layer.node.params = replace(layer.node.params, wmem=True)
    used = sum(values[w][0] for w in chosen)
    saved = sum(values[w][1] % MUST_PLACE for w in chosen)
    rest = "; the rest are DMA'd per tile" if len(chosen) < len(values) else ""
    return {w: WMEM for w in values if w in chosen}, streamed + [
        f"weight memory: {len(chosen)} of {len(values)} NPU weight blobs placed ({used} of {capacity} B), "
        f"saving {saved} modelled cycles{rest}"]


def _read_streamed(layers: list[Layer], plan: MemoryPlan) -> list[str]:
    """The jobs of weights streamed into the weight memory read them there; a note saying so."""
    blobs = [layer for layer in layers if layer.node.op == "NeurekaConv"
             and plan.placements[layer.node.inputs[1]].kind == BufferKind.STREAMED
             and plan.placements[layer.node.inputs[1]].level == WMEM]
    for layer in blobs:
        layer.node.attrs["wmem"] = 1
        layer.node.params = replace(layer.node.params, wmem=True)
    if not blobs:
        return []
    size = plan.stream_buffers[WMEM]
    return [f"weight memory: the weights of {len(blobs)} NPU layers of rolled regions are streamed into it "
            f"(double buffer {size} B: two iterations' worth, copied from L3 while the previous iteration runs)"]
