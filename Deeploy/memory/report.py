"""Every buffer of a compiled network per memory level over the schedule (layer steps), for the
``--plotMemAlloc`` picture: L2 activations with their lifetimes, graph I/O and constants (whole
schedule) in their level, and per tiled layer its L1 tile slots, kernel scratch and L2 staging
buffers (live during that layer only)."""

from __future__ import annotations

from Deeploy.codegen.memory_plot import PlotBuffer, PlotLevel
from Deeploy.memory.lifetimes import alias_roots, lifetimes

__all__ = ["memory_levels"]


def memory_levels(result, platform) -> tuple[list[str], list[PlotLevel]]:
    """(step labels, levels) of a ``CompileResult`` (tiled or not) on ``platform``."""
    graph, plan, tiled = result.graph, result.plan, result.tiled
    steps = [f"{k}: {layer.node.op} {layer.node.name}" for k, layer in enumerate(result.layers)]
    last = max(len(steps) - 1, 0)
    buffers: dict[str, list[PlotBuffer]] = {m.name: [] for m in platform.memory}
    arena_level = plan.level.name

    roots = alias_roots(graph)
    sizes = {n: graph.tensors[n].nbytes for n, p in plan.placements.items() if p.kind == "arena" and n not in roots}
    for iv in lifetimes(graph, sizes, roots):
        p = plan.placements[iv.name]
        buffers[arena_level].append(PlotBuffer(iv.name, p.offset, iv.size, iv.first, iv.last, "activation"))
    for k, layer in enumerate(result.layers):
        at = plan.scratch_offsets.get(layer.node.name)
        if at is not None:
            buffers[arena_level].append(PlotBuffer(f"{layer.node.name}: kernel scratch", at, layer.scratch, k, k,
                                                   "scratch"))
    data_level = tiled.options.default_level if tiled is not None else arena_level
    offset = plan.arena_size if data_level == arena_level else 0
    for name, p in sorted(plan.placements.items()):
        if p.kind in ("input", "output", "constant") and p.root == name and name in graph.tensors:
            size = graph.tensors[name].nbytes
            buffers[data_level].append(PlotBuffer(name, offset, size, 0, last, p.kind))
            offset += -(-size // 16) * 16
    if tiled is not None:
        staging_base = offset if arena_level == data_level else plan.arena_size
        for k, sched in tiled.schedules.items():
            name = result.layers[k].node.name
            for s in sched.slots:
                for c, off in enumerate(s.l1_offsets):
                    buffers["L1"].append(PlotBuffer(f"{name}: {s.operand.tensor} tile (slot {c + 1}/{s.copies})",
                                                    off, s.slot_bytes, k, k, "tile"))
                if s.in_l3:
                    buffers["L2"].append(PlotBuffer(f"{name}: {s.operand.tensor} L2 tile", staging_base + s.staging_offset,
                                                    s.staging_bytes, k, k, "staging"))
            if sched.spec.scratch:
                buffers["L1"].append(PlotBuffer(f"{name}: kernel scratch", sched.scratch_offset, sched.spec.scratch,
                                                k, k, "scratch"))
    capacity = {m.name: m.size for m in platform.memory}
    if tiled is not None:
        capacity.update(L1=tiled.options.l1, L2=tiled.options.l2)
    levels = [PlotLevel(m.name, capacity[m.name], tuple(buffers[m.name])) for m in platform.memory]
    return steps, levels
