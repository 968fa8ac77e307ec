"""C of one tiled layer: the tile kernel, one call of the layer's kernel per tile class, rendered
with the params of that class's tile node (built by the tiler: TileSchedule.classes) on the L1
tiles, and the loop over the tiles: a layer with few tiles that a compile-time DMA plan covers
(``tiling/dma_plan.py``) runs as straight-line code (its transfers' addresses and lengths as
constants), any other one through the tables ``deeploy_run_tiled`` reads
(TargetLibraries/Siracusa/inc/deeploy_tiling.h)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, replace

from Deeploy.binding import Layer
from Deeploy.codegen.buffers import Buf, BufferNames
from Deeploy.codegen.calls import call_parts
from Deeploy.codegen.c_text import comment_text
from Deeploy.codegen.c_values import CallParts
from Deeploy.ir.graph import Graph
from Deeploy.errors import DeeployError
from Deeploy.runtime.abi import (TILE_ARG, TILE_AXIS, TILE_COPY, TILE_GEOMETRY, TILE_OPERAND, TILE_PLAN, TILE_STEP,
                                 TILED_LAYER, check_tile_limits)
from Deeploy.tiling.dma_plan import Copy, DmaPlan, dma_plan, first_loads, loop_kind, with_handoff
from Deeploy.tiling.schedule import TileSchedule

__all__ = ["TiledCode", "tiled_layer_code"]

@dataclass(frozen=True)
class TiledCode:
    """The statement running the layer, the profile manifest entry (ops of every tile in execution
    order), and its definitions (before RunNetwork): a comment, the tables, the tile kernel (one
    call per tile class: ``calls``, each class's index and call) and the layer."""

    run: str
    manifest: dict
    finish: str = ""          # an asynchronous layer's wait and last write-back (tiling/overlap.py)
    head: str = ""
    tables: tuple[str, ...] = ()
    calls: tuple[tuple[int, CallParts], ...] = ()
    kernel: str = ""          # the tile kernel's first lines, up to its switch over the classes
    layer: str = ""

    def definitions(self, calls: list[str] | None = None) -> str:
        """The C of the definitions, with each class's call ``calls`` (default: as rendered)."""
        if calls is None:
            calls = ["".join(map(str, parts)) for _, parts in self.calls]
        cases = [f"    case {index}: {{\n{textwrap.indent(call, ' ' * 8)}\n        break;\n    }}"
                 for (index, _), call in zip(self.calls, calls)]
        kernel = self.kernel + "\n".join(cases) + "\n    default:\n        break;\n    }\n}"
        return "\n".join([self.head, *self.tables, kernel, self.layer])


def _c_list(values) -> str:
    return ", ".join(map(str, map(int, values))) or "0"


def _axis(a, dims: tuple[str, ...]) -> str:
    q, r = a.group if a.group is not None else (0, 0)
    dim = dims.index(a.dim) if a.dim is not None else -1
    return TILE_AXIS.initializer(dict(size=a.size, stride=a.stride, offset=a.offset, span=a.span, dim=dim,
                                      reverse=int(a.reverse), group_q=q, group_r=r))


def _tile_call(layer: Layer, node, tgraph: Graph, ptrs: dict[str, str], names: BufferNames,
               scratch: str, shared: str) -> CallParts:
    def buf(name: str) -> Buf:
        if name in ptrs:
            t = tgraph.tensors[name]
            return Buf(name, f"(({t.dtype.ctype} *){ptrs[name]})", tuple(t.shape), t.dtype)
        if name not in names.graph.tensors:      # a constant of the tile node only (params carry it)
            t = tgraph.tensors[name]
            return Buf(name, f"(({t.dtype.ctype} *)0)", tuple(t.shape), t.dtype)
        return names.buf(name)

    return call_parts(layer, node, [buf(i) if i else None for i in node.inputs],
                      [buf(o) if o else None for o in node.outputs], scratch, shared, "tile->fill")


def _ends(c: Copy, home: str, slot: str) -> tuple[str, str]:
    """Destination and source of copy ``c`` between ``home`` and ``slot``."""
    view, dense = (f"{base} + {off}" if off else base for base, off in ((home, c.home), (slot, c.dense)))
    return (dense, view) if c.load else (view, dense)


def _copy_call(c: Copy, home: str, slot: str) -> str:
    """The DMA call of copy ``c`` (1-D, 2-D or 3-D, as few arguments as its shape needs)."""
    (dst, src), (row, rows, dr, sr, planes, dp, sp) = _ends(c, home, slot), c.shape
    if planes > 1:
        return f"deeploy_dma_copy_3d(DEEPLOY_DMA_CLUSTER, {dst}, {src}, {row}, {rows}, {dr}, {sr}, {planes}, {dp}, {sp})"
    if rows > 1:
        return f"deeploy_dma_copy_2d(DEEPLOY_DMA_CLUSTER, {dst}, {src}, {row}, {rows}, {dr}, {sr})"
    return f"deeploy_dma_copy(DEEPLOY_DMA_CLUSTER, {dst}, {src}, {row})"


def _plan_tables(p: str, plan: DmaPlan, homes: list[str], slots: list[list[str]], noperands: int) -> tuple[str, ...]:
    """The tables of a planned loop (``deeploy_run_planned``), the plan's struct aside (``homes``
    and ``slots`` beyond the layer's ``noperands``: the next layer's, whose copies take a handle
    no tile waits for)."""
    shapes = {shape: g for g, shape in enumerate(plan.shapes)}
    # an output slot's write-back handle by the operand's index among the outputs: the loop's
    # walk over a step's reuse bits stops after the few outputs
    outputs = {o: j for j, o in enumerate(sorted({c.operand for c in plan.copies
                                                   if not c.load and c.operand < noperands}))}
    copies = [TILE_COPY.initializer(dict(zip(("dst", "src"), _ends(c, homes[c.operand], slots[c.operand][c.slot])),
                                         geometry=shapes[c.shape], handle=1 + 2 * noperands if c.operand >= noperands
                                         else 0 if c.load else 1 + 2 * outputs[c.operand] + c.slot))
              for c in plan.copies]
    steps = [TILE_STEP.initializer(dict(
        cls=t.cls, loads=len(t.loads), prefetch=len(t.prefetch), stores=len(t.stores), wait=int(t.wait),
        reuse=sum(1 << (2 * outputs[o] + k) for o, k in t.reuse), slots=sum(k << o for o, k in enumerate(t.slots))))
        for t in plan.tiles]
    names = [f.name for f in TILE_GEOMETRY.fields]
    geometries = [TILE_GEOMETRY.initializer(dict(zip(names, shape))) for shape in plan.shapes]
    pointers = [ptr for s in slots[:noperands] for ptr in (s + s)[:2]]
    return (f"static const {TILE_GEOMETRY.c_name} {p}_geometries[] = {{{', '.join(geometries)}}};",
            f"static uint8_t *const {p}_slots[] = {{{', '.join(pointers)}}};",
            f"static const {TILE_STEP.c_name} {p}_steps[] = {{\n    " + ",\n    ".join(steps) + "};",
            f"static const {TILE_COPY.c_name} {p}_copies[] = {{\n    " + ",\n    ".join(copies) + "};")


def _run_function(p: str, plan: DmaPlan, homes: list[str], slots: list[list[str]], noperands: int,
                  forked: bool = True, defer: str = "") -> str:
    """The straight-line tile loop of a layer from its DMA plan (the runtime's phases and markers):
    each tile's kernel forked on the cluster, or (``forked`` false: an engine core 0 programs)
    called on core 0, waiting for its jobs while the next tile's inputs arrive. ``defer`` (the
    engine's ``tile_sync``): the last tile's jobs stay in flight, and ``<p>_finish`` waits for them
    and writes that tile back. Copies of operands from ``noperands`` on (the next layer's) keep no
    handle: the final wait for all transfers covers them."""
    waited = {r for t in plan.tiles for r in t.reuse}
    body: list[str] = []

    def issue(copies, later: bool = True):
        for c in copies:
            call = _copy_call(c, homes[c.operand], slots[c.operand][c.slot])
            var = ("" if c.operand >= noperands else "r" if c.load
                   else f"w{c.operand}_{c.slot}" if later and (c.operand, c.slot) in waited else "")
            body.append(f"{var} = {call};" if var else f"{call};")

    mark = "DEEPLOY_MARKER(DEEPLOY_MARK_TILE_{});".format
    issue(plan.before)
    seen: set[int] = set()
    for t in plan.tiles:
        body.append(mark("INPUT"))
        issue(t.loads)
        if t.wait:
            body.append("deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, r);")
        body += [f"deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, w{o}_{k});" for o, k in t.reuse]
        body += [f"tile.cls = {t.cls};", f"tile.fill = {int(t.cls not in seen)};"]
        seen.add(t.cls)
        body += [f"tile.buf[{o}] = {slots[o][k]};" for o, k in enumerate(t.slots)]
        issue(t.prefetch)
        run = f"deeploy_cluster_fork({p}_kernel, &tile);" if forked else f"{p}_kernel(&tile);"
        last = defer and t is plan.tiles[-1]
        body += [mark("KERNEL")] + ([f"{defer}(DEEPLOY_TILE_SYNC_DEFER);"] if last else []) + [run, mark("OUTPUT")]
        if last:
            if any(c.operand >= noperands for c in plan.copies):   # the next layer's copies, before it runs
                body.append("deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);")
            body.append(mark("END"))
            split = len(body)
            body.append(f"{defer}(DEEPLOY_TILE_SYNC_ALL);")
        issue(t.stores, not last)    # no later tile waits for the last tile's stores
        if t.wait_all:
            body.append("deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);")
        if not last:
            body.append(mark("END"))
    if not plan.tiles[-1].wait_all:
        body.append("deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);")
    loads = any(c.load and c.operand < noperands for c in plan.copies)
    handles = (["r"] if loads else []) + [f"w{o}_{k}" for o, k in sorted(waited)]
    decl = [f"{TILE_ARG.c_name} tile;"] + ([f"deeploy_dma_t {', '.join(handles)};"] if handles else [])
    if not defer:
        return f"static void {p}_run(void) {{\n" + "".join(f"    {line}\n" for line in decl + body) + "}"
    finish = body[split:]
    return (f"static void {p}_run(void) {{\n" + "".join(f"    {line}\n" for line in decl + body[:split]) + "}\n"
            f"static void {p}_finish(void) {{\n" + "".join(f"    {line}\n" for line in finish) + "}")


def _tables(p: str, sched: TileSchedule, homes: list[str], slots: list[list[str]], staging_arena: str,
            writable_ops: bool) -> tuple[str, ...]:
    """The tables ``deeploy_run_tiled`` reads (the layer's struct aside)."""
    dims = sched.dims
    lines, ops = [], []
    for s in sched.slots:
        o = s.operand
        lines.append(f"static const {TILE_AXIS.c_name} {p}_axes{s.index}[] = {{"
                     + ", ".join(_axis(a, dims) for a in o.axes) + "};")
        staging = f"{staging_arena} + {s.staging_offset}" if s.in_l3 else "NULL"
        ops.append(TILE_OPERAND.initializer(dict(
            home=homes[s.index], axes=f"{p}_axes{s.index}", rank=len(o.axes), elem=o.elem_bytes,
            output=int(s.output), in_l3=int(s.in_l3), copies=s.copies, l1=slots[s.index] + ["NULL"] * (2 - s.copies),
            staging=staging)))
    const = "" if writable_ops else "const "
    lines.append(f"static {const}{TILE_OPERAND.c_name} {p}_ops[] = {{\n    " + ",\n    ".join(ops) + "};")
    for d, classes in enumerate(sched.dim_class):
        lines.append(f"static const uint16_t {p}_cls{d}[] = {{{_c_list(classes)}}};")
    lines.append(f"static const uint16_t *const {p}_cls[] = {{{', '.join(f'{p}_cls{d}' for d in range(len(dims)))}}};")
    lines.append(f"static const uint32_t {p}_radix[] = {{{_c_list(sched.radix)}}};")
    lines.append(f"static const uint8_t {p}_order[] = {{{_c_list(dims.index(d) for d in sched.order)}}};")
    lines.append(f"static const int32_t {p}_size[] = {{{_c_list(d.size for d in sched.spec.dims)}}};")
    lines.append(f"static const int32_t {p}_l2[] = {{{_c_list(sched.l2_tile)}}};")
    lines.append(f"static const int32_t {p}_l1[] = {{{_c_list(sched.l1_tile)}}};")
    return tuple(lines)


def _homes(sched: TileSchedule, names: BufferNames) -> list[str]:
    return [f"(uint8_t *){names.address(s.operand.tensor)}" for s in sched.slots]


def _slots(sched: TileSchedule, l1_arena: str, l1_base: int) -> list[list[str]]:
    return [[f"{l1_arena} + {l1_base + off}" for off in s.l1_offsets] for s in sched.slots]


def tiled_layer_code(k: int, layer: Layer, sched: TileSchedule, graph: Graph, names: BufferNames,
                     l1_arena: str, staging_arena: str, l1_base: int = 0, prefix: str | None = None,
                     writable_ops: bool = False, deferred: bool = False, preloaded: tuple[int, ...] = (),
                     ahead: tuple[TileSchedule, int, tuple[int, ...]] | None = None) -> TiledCode:
    """The C of tiled layer ``k`` (tables prefixed ``prefix``, default ``deeploy_t<k>``; the
    operand table ``writable_ops`` when homes are set before each run; ``deferred``: a straight-line
    layer of an engine with a job queue that returns with its last jobs in flight, ``finish`` ends it).
    ``preloaded``: inputs whose first tile the layer before loaded (``tiling/prefetch.py``);
    ``ahead``: the next layer's schedule, L1 base and inputs whose first tile this layer loads
    (``dma_plan.with_handoff``)."""
    p = prefix or f"deeploy_t{k}"
    dims = sched.dims
    too_big = check_tile_limits(len(dims), [len(s.operand.axes) for s in sched.slots])
    if too_big:
        raise DeeployError(f"layer '{layer.node.name}' ({layer.node.op}) cannot run tiled: {too_big}")
    title = comment_text(f"{layer.node.op} '{layer.node.name}'")
    head = (f"/* layer {k}: {title} tiled: {sched.num_tiles} L1 tiles ({sched.l2_tiles()} L2 tiles), "
            f"{'double' if sched.double_buffer else 'single'}-buffered, L1 {sched.l1_bytes} B */")
    loop = loop_kind(layer, sched, writable_ops)
    plan = dma_plan(sched, preloaded) if loop != "tables" else None
    ptrs = {s.operand.tensor: f"tile->buf[{s.index}]" for s in sched.slots}
    scratch_at = l1_base + sched.scratch_offset
    has_scratch = sched.scratch_bytes > 0   # the tiler may drop an optional scratch
    scratch = f"((void *)({l1_arena} + {scratch_at}))" if has_scratch else "NULL"
    shared = f"((void *)({l1_arena} + {scratch_at + layer.shared_offset}))" if has_scratch else "NULL"
    calls = tuple((tc.index, _tile_call(layer, tc.node, tc.graph, ptrs, names, scratch, shared))
                  for tc in sched.classes)
    class_ops = {tc.index: tc.ops for tc in sched.classes}
    arg = TILE_ARG.c_name
    # the tile loop forks every tile's kernel; an engine that is not a cluster (an accelerator
    # programmed by one core) gets its calls from core 0 only
    only_core0 = "" if layer.engine.forked else "    if (DEEPLOY_CORE_ID() != 0) return;\n"
    kernel = (f"static void {p}_kernel(void *arg) {{\n    const {arg} *tile = (const {arg} *)arg;\n"
              f"    (void)tile;\n{only_core0}    switch (tile->cls) {{\n")
    homes, slots = _homes(sched, names), _slots(sched, l1_arena, l1_base)
    if ahead is not None:     # the next layer's copies, its operands numbered after this layer's
        nxt, base, ops = ahead
        plan = with_handoff(plan, tuple(replace(c, operand=c.operand + len(homes)) for c in first_loads(nxt, ops)))
        homes, slots = homes + _homes(nxt, names), slots + _slots(nxt, l1_arena, base)
    defer = layer.engine.tile_sync if deferred else ""
    if defer and loop != "code":
        raise ValueError(f"layer {k} runs from tables: only straight-line code defers its jobs")
    if loop == "code":
        tables, run, layer_def = (), f"{p}_run();", _run_function(p, plan, homes, slots, len(sched.slots),
                                                                   layer.engine.forked, defer)
    elif loop == "plan":
        tables, run = _plan_tables(p, plan, homes, slots, len(sched.slots)), f"deeploy_run_planned(&{p});"
        layer_def = f"static const {TILE_PLAN.c_name} {p} = " + TILE_PLAN.initializer(dict(
            ntiles=len(plan.tiles), before=len(plan.before), ncopies=len(plan.copies), noperands=len(sched.slots),
            ngeometries=len(plan.shapes), wait_all=int(not sched.double_buffer), geometries=f"{p}_geometries",
            slots=f"{p}_slots", steps=f"{p}_steps", copies=f"{p}_copies", kernel=f"{p}_kernel")) + ";"
    else:
        tables, run = _tables(p, sched, homes, slots, staging_arena, writable_ops), f"deeploy_run_tiled(&{p});"
        layer_def = f"static const {TILED_LAYER.c_name} {p} = " + TILED_LAYER.initializer(dict(
            ndims=len(dims), noperands=len(sched.slots), double_buffer=int(sched.double_buffer),
            order=f"{p}_order", size=f"{p}_size", l2_tile=f"{p}_l2", l1_tile=f"{p}_l1", dim_class=f"{p}_cls",
            class_radix=f"{p}_radix", operands=f"{p}_ops", kernel=f"{p}_kernel",
            engine_sync=layer.engine.tile_sync or "NULL")) + ";"
    tile_ops, l2_ops = [], [0] * sched.l2_tiles()
    for j2, cls, _ in sched.tiles():
        tile_ops.append(class_ops[cls])
        l2_ops[j2] += class_ops[cls]
    manifest = {
        "index": k, "layer": layer.node.name, "op": layer.node.op,
        "buffering": "DB" if sched.double_buffer else "SB",
        "staged": sched.l2 is not None, "l2_tiles": sched.l2_tiles(),
        "tile_ops": tile_ops, "l2_tile_ops": l2_ops,
        "l1_bytes": sched.l1_bytes, "staging_bytes": sched.staging_bytes, "engine": layer.engine.name,
        "loop": loop,
    }
    return TiledCode(run, manifest, f"{p}_finish();" if defer else "", head, tables, calls, kernel, layer_def)
