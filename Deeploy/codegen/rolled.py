"""C of rolled regions: one function for a region's body, called in a loop with the iteration
``i``. Every operand of a body layer is one C expression in ``i``: the same pointer in every
iteration (invariant data, and activations the memory plan gives one place in all iterations,
``memory/fold.py``), a slice of a per-iteration constant stacked ``[N, ...]``, or an entry of the
region's pointer table ``deeploy_r<R>_ptr[i][m]``. Each iteration's calls are typed parts
(``codegen/c_values.py``); an integer or constant array argument that differs per iteration reads
a table of the region. A body position is rolled only when the parts of every iteration agree
otherwise; else the whole region is emitted layer by layer (``RolledNetwork.notes`` says why).
Tiled layers share one set of tile tables; the operand homes that differ per iteration are set
before each run."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from Deeploy.binding import Layer
from Deeploy.codegen.buffers import Buf, BufferNames, stream_buffer
from Deeploy.codegen.c_text import comment_text
from Deeploy.codegen.calls import layer_call_parts
from Deeploy.codegen.c_values import CallParts, CArray, Unsigned, Value, c_int
from Deeploy.codegen.describe import idle_reason
from Deeploy.codegen.tiled import tiled_layer_code
from Deeploy.ir.graph import Graph
from Deeploy.manifest import LoopInfo
from Deeploy.memory.fold import Span, region_spans
from Deeploy.memory.planner import BufferKind, MemoryPlan

__all__ = ["RolledRegion", "RolledNetwork", "roll_regions", "stream_code"]


@dataclass
class RolledRegion:
    """One region's C: ``definitions`` (tables, layer functions, the body) before RunNetwork and
    ``run``, the loop that replaces its layers there."""

    span: Span
    definitions: str
    run: str
    stacks: list[tuple] = field(default_factory=list)   # (ident, DType, elements, values, level) of stacked constants
    families: list[tuple[str, ...]] = field(default_factory=list)   # the constants each stack holds


@dataclass
class RolledNetwork:
    regions: dict[int, RolledRegion]     # first layer index -> region
    covered: set[int]                    # every layer index a rolled region runs
    notes: list[str]
    tiled_manifest: dict[int, dict]      # tiled layer index -> its manifest entry (every iteration)

    def stacked(self) -> set[str]:
        """The constants the stacked arrays hold."""
        return {name for r in self.regions.values() for family in r.families for name in family}

    def loops(self) -> tuple[LoopInfo, ...]:
        return tuple(LoopInfo(r.span.name, r.span.start, r.span.body, r.span.iterations) for r in self.regions.values())

    def unmarked(self) -> set[int]:
        """Layers after a rolled region's first iteration: the body's markers name the first
        iteration's layers, so a profile aggregates every iteration of a body layer there."""
        return {k for r in self.regions.values() for k in range(r.span.start + r.span.body, r.span.end)}


class _IterNames:
    """BufferNames as one iteration's layer sees them: its operands' rolled expressions
    (``exprs``: tensor -> (expression, differs per iteration))."""

    def __init__(self, names: BufferNames, exprs: dict[str, tuple[str, bool]]):
        self.names, self.exprs, self.graph = names, exprs, names.graph
        self.patches: dict[str, str] = {}   # tensor -> expression of its home, set before each run

    def buf(self, name: str) -> Buf:
        if name in self.exprs:
            t = self.graph.tensors[name]
            return Buf(name, self.exprs[name][0], tuple(t.shape), t.dtype)
        return self.names.buf(name)

    def address(self, name: str) -> str:
        """A static initialiser: "0" for a home that differs per iteration (set before each run)."""
        if name not in self.exprs:
            return self.names.address(name)
        expr, varies = self.exprs[name]
        if varies:
            self.patches[name] = expr
            return "0"
        return expr

    def scratch(self, node_name: str, within: int = 0) -> str:
        return self.names.scratch(node_name, within)


class _Region:
    """Builds the operand expressions of one region."""

    def __init__(self, r: int, span: Span, graph: Graph, layers: list[Layer], plan: MemoryPlan, names: BufferNames):
        self.r, self.span, self.graph, self.layers, self.plan, self.names = r, span, graph, layers, plan, names
        self.table: list[list[str]] = []           # columns: the address of each iteration's tensor
        self.columns: dict[tuple, int] = {}
        self.stacks: dict[tuple, tuple] = {}
        self.used: set[str] = set()                 # constants the rolled code refers to one by one
        self.i = f"deeploy_r{r}_i"                  # the iteration running (set by the body)
        # the tables of values that differ per iteration: (integers, unsigned) or arrays (CArray)
        self.values: list[tuple[list[int], bool] | list[CArray]] = []

    def lift(self, calls: list[CallParts]) -> str | None:
        """The one C text of ``calls`` (one per iteration) where an integer that differs per
        iteration reads a table ``deeploy_r<R>_v<m>[i]`` and a constant array that does points
        at its row of a table ``deeploy_r<R>_v<m>[N][n]``; None if they differ otherwise."""
        if len({len(c) for c in calls}) != 1:
            return None
        out = []
        for column in zip(*calls):
            if len({str(v) for v in column}) == 1:
                out.append(str(column[0]))
                continue
            if not all(isinstance(v, Value) for v in column):
                return None
            values = [v.v for v in column]
            table = f"deeploy_r{self.r}_v{len(self.values)}"
            if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values) \
                    and len({isinstance(v, Unsigned) for v in values}) == 1:   # all signed or unsigned
                self.values.append(([int(v) for v in values], isinstance(values[0], Unsigned)))
                out.append(f"{table}[{self.i}]")
            elif all(isinstance(v, CArray) for v in values) \
                    and len({(a.ctype, a.name, len(a.values)) for a in values}) == 1:
                a = values[0]
                self.values.append(values)
                out.append(f"const {a.ctype} *const {a.name} = {table}[{self.i}];")
            else:
                return None
        return "".join(out)

    def node(self, i: int, pos: int):
        return self.layers[self.span.start + i * self.span.body + pos].node

    def expr(self, family: tuple[str, ...]) -> tuple[str, bool]:
        """The expression of the tensors ``family`` names in each iteration, and whether it differs."""
        flat = [self.names.buf(t) for t in family]
        ct = flat[0].ctype
        if len({b.expr for b in flat}) == 1 or _equal_constants(self.graph, self.plan, family):
            if self.plan.placements[family[0]].kind == BufferKind.CONSTANT:
                self.used.add(family[0])
            return flat[0].expr, False
        tensors = [self.graph.tensors[t] for t in family]
        levels = {self.plan.placements[t].level for t in family}
        stackable = all(self.plan.placements[t].kind == BufferKind.CONSTANT for t in family)
        if stackable and len({(t.shape, t.dtype) for t in tensors}) == 1 and len(levels) == 1:
            if family not in self.stacks:
                ident = f"deeploy_r{self.r}_c{len(self.stacks)}"
                self.stacks[family] = (ident, tensors[0].dtype, tensors[0].size * len(family),
                                       np.stack([t.value for t in tensors]), levels.pop())
            ident, _, _, _, _ = self.stacks[family]
            return f"(({ct} *)({ident} + {self.i} * {max(1, tensors[0].size)}))", True
        if family not in self.columns:
            self.columns[family] = len(self.columns)
            self.table.append([f"(void *){self.names.address(t)}" for t in family])
            self.used.update(t for t in family if self.plan.placements[t].kind == BufferKind.CONSTANT)
        align = min(self._alignment(t) for t in family)
        return (f"(({ct} *)__builtin_assume_aligned(deeploy_r{self.r}_ptr[{self.i}][{self.columns[family]}], {align}))",
                True)

    def _alignment(self, name: str) -> int:
        """What the address of ``name``'s storage is known to be a multiple of (I/O buffers:
        aligned(16), constants: aligned(4), the arena: aligned(16) plus the offset); the compiler
        is told so (``__builtin_assume_aligned``), as it knows it of the addresses themselves."""
        p = self.plan.placements[name]
        if p.kind in (BufferKind.INPUT, BufferKind.OUTPUT):
            return 16
        if p.kind == BufferKind.CONSTANT:
            return 4
        if p.kind in (BufferKind.ACTIVATION, BufferKind.STREAMED):
            return min(16, p.offset & -p.offset) if p.offset else 16
        return 1

    def iteration_names(self, pos: int) -> list[_IterNames]:
        """For each iteration, the names its layer at ``pos`` renders with."""
        n = self.span.iterations
        nodes = [self.node(i, pos) for i in range(n)]
        exprs: list[dict[str, tuple[str, bool]]] = [{} for _ in range(n)]
        for io in ("inputs", "outputs"):
            for slot, name in enumerate(getattr(nodes[0], io)):
                if not name:
                    continue
                family = tuple(getattr(nd, io)[slot] for nd in nodes)
                e = self.expr(family)
                for i, t in enumerate(family):
                    if exprs[i].setdefault(t, e) != e:
                        return []   # one tensor in two roles: not rolled
        return [_IterNames(self.names, x) for x in exprs]


def _equal_constants(graph, plan, family: tuple[str, ...]) -> bool:
    """Whether the tensors of ``family`` are constants of one shape, type, memory level and value:
    one copy serves every iteration (an invariant body input, as ``body_inputs`` counts it)."""
    first = graph.tensors[family[0]]
    return all(plan.placements[t].kind == BufferKind.CONSTANT for t in family) \
        and len({plan.placements[t].level for t in family}) == 1 \
        and all(graph.tensors[t].shape == first.shape and graph.tensors[t].dtype == first.dtype
                and np.array_equal(graph.tensors[t].value, first.value) for t in family[1:])


def _tables(r: int, n: int, values: list) -> list[str]:
    """The C of region ``r``'s tables of per-iteration values (``_Region.values``)."""
    lines = []
    for m, v in enumerate(values):
        if isinstance(v, tuple):
            ints, unsigned = v
            bits = 32 if all(-2**31 <= x < 2**31 or unsigned and x < 2**32 for x in ints) else 64
            ctype = f"{'u' if unsigned else ''}int{bits}_t"   # the literals' C types
            lines.append(f"static const {ctype} deeploy_r{r}_v{m}[{n}] = {{{', '.join(map(str, ints))}}};")
        else:
            rows = ", ".join("{" + ", ".join(map(c_int, a.values or (0,))) + "}" for a in v)
            lines.append(f"static const {v[0].ctype} deeploy_r{r}_v{m}[{n}][{max(1, len(v[0].values))}] = {{{rows}}};")
    return lines


def _region_code(b: _Region, tiling, arenas: dict) -> tuple[RolledRegion, dict] | str:
    """The region's C, or why it is not rolled."""
    span, r = b.span, b.r
    fns, body, tiled_manifest = [], [], {}
    for pos in range(span.body):
        ks = [span.start + i * span.body + pos for i in range(span.iterations)]
        layers = [b.layers[k] for k in ks]
        head = layers[0]
        title = comment_text(f"{pos}: {head.node.op} -> {head.variant}")
        if len({(lay.variant, lay.engine.name) for lay in layers}) != 1:
            return f"body position {pos} ({head.node.op}) binds different kernels per iteration"
        names = b.iteration_names(pos)
        if not names:
            return f"body position {pos} ({head.node.op}) reads a tensor in two roles"
        if tiling is not None and ks[0] in tiling.schedules:
            if any(k not in tiling.schedules for k in ks):
                return f"body position {pos} ({head.node.op}) is tiled in some iterations only"
            p = f"deeploy_t{ks[0]}"   # one set of tables for every iteration
            codes = [tiled_layer_code(k, lay, tiling.schedules[k], b.graph, nm, arenas["tile_arena"],
                                      arenas["staging_arena"], prefix=p, writable_ops=True)
                     for lay, k, nm in zip(layers, ks, names)]
            tiled_manifest.update((k, c.manifest) for k, c in zip(ks, codes))
            same = len({(c.tables, c.layer, tuple(j for j, _ in c.calls)) for c in codes}) == 1
            calls = [b.lift(list(column)) for column in zip(*[[parts for _, parts in c.calls] for c in codes])]
            if not same or None in calls:
                return f"body position {pos} ({head.node.op}) has different tile schedules per iteration"
            fns.append(codes[0].definitions(calls))
            slot_of = {s.operand.tensor: s.index for s in tiling.schedules[ks[0]].slots}
            sets = [f"{p}_ops[{slot_of[t]}].home = (uint8_t *){e};" for t, e in names[0].patches.items()]
            body.append((title, ks[0], [*sets, codes[0].run]))
            continue
        reasons = {idle_reason(lay, b.graph, b.plan) for lay in layers}
        if len(reasons) != 1:
            return f"body position {pos} ({head.node.op}) runs in some iterations only"
        reason = reasons.pop()
        if reason is not None:
            body.append((title, None, [f"/* {reason} */"]))
            continue
        call = b.lift([layer_call_parts(lay, nm) for lay, nm in zip(layers, names)])
        if call is None:
            return f"body position {pos} ({head.node.op}) has different code per iteration"
        if head.engine.forked:
            fn = f"deeploy_r{r}_layer_{pos}"
            fns.append(f"static void {fn}(void *arg) {{\n    (void)arg;\n    {call}\n}}")
            body.append((title, ks[0], [f"deeploy_cluster_fork({fn}, NULL);"]))
        else:
            body.append((title, ks[0] if head.engine.runtime else None, [call]))
    lines = [f"/* ---- region {r} '{comment_text(span.name)}': layers {span.start}..{span.end - 1} run as "
             f"{span.iterations} iterations of one body of {span.body} layers ---- */"]
    if b.table:
        rows = ",\n    ".join("{" + ", ".join(col[i] for col in b.table) + "}" for i in range(span.iterations))
        lines.append(f"static void *const deeploy_r{r}_ptr[{span.iterations}][{len(b.table)}] = {{\n    {rows}}};")
    lines += _tables(r, span.iterations, b.values)
    for n, stream in enumerate(b.plan.streams):   # iteration i's parameters arrive, i + 1's start coming
        if stream.span.name == span.name:
            j = f"i + {(span.start - stream.span.start) // span.body}u"
            for pos, stmts in stream_statements(n, stream, j).items():   # first after the marker
                body[pos][2][:0] = stmts
    lines.append(f"static uint32_t {b.i};   /* the iteration running */")
    lines += fns
    stmts = "\n".join(f"    /* {title} */\n" + "\n".join(
        f"    {s}" for s in [f"DEEPLOY_MARK_LAYER({mark});"] * (mark is not None) + ss) for title, mark, ss in body)
    lines.append(f"static void deeploy_r{r}_body(uint32_t i) {{\n    {b.i} = i;\n{stmts}\n}}")
    run = f"for (uint32_t i = 0; i < {span.iterations}u; ++i) {{\n        deeploy_r{r}_body(i);\n    }}"
    return RolledRegion(span, "\n".join(lines), run, list(b.stacks.values()), list(b.stacks)), tiled_manifest


def roll_regions(graph: Graph, layers: list[Layer], plan: MemoryPlan, names: BufferNames, tiling=None,
                 arenas: dict | None = None) -> RolledNetwork:
    """The C of every region of ``graph`` that can run as a loop (see the module doc)."""
    spans, notes = region_spans(graph)
    out = RolledNetwork({}, set(), notes, {})
    for r, whole in enumerate(spans):
        code, why = None, None
        for span in _sub_spans(whole):
            referenced = set(names.referenced)
            b = _Region(r, span, graph, layers, plan, names)
            code = _region_code(b, tiling, arenas or {})
            if not isinstance(code, str):
                break
            names.referenced = referenced   # what a failed attempt referred to stays unemitted
            why, code = why or code, None
        if code is None:
            out.notes.append(f"region '{whole.name}' is emitted layer by layer: {why}")
            continue
        region, tiled_manifest = code
        names.referenced |= b.used
        out.regions[span.start] = region
        out.covered |= set(range(span.start, span.end))
        out.tiled_manifest.update(tiled_manifest)
        peeled = whole.iterations - span.iterations
        stacked = sum(size * dtype.nbytes for _, dtype, size, _, _ in b.stacks.values())
        out.notes.append(f"region '{span.name}': {span.iterations} iterations of {span.body} layers run as "
                         f"one loop (compiled: {len(b.stacks)} per-iteration constants stacked, {stacked} B of the "
                         f"network's constants; {len(b.table)} per-iteration pointers"
                         + (f"; {peeled} iteration(s) emitted layer by layer: {why}" if peeled else "") + ")")
    return out


def _sub_spans(span: Span):
    """The span, then without its first and/or last iteration (at least 2 left): the first or last
    iteration may read or write data that live elsewhere (a graph input or output in another
    memory level) and need code of its own."""
    n = span.iterations
    for first, last in ((0, n), (1, n), (0, n - 1), (1, n - 1)):
        if last - first >= 2:
            yield Span(span.name, span.start + first * span.body, span.body, last - first)


def stream_statements(n: int, s, j: str) -> dict[int, list[str]]:
    """Stream ``n``'s statements for iteration ``j`` (a C expression) per body position: the wait
    for the iteration's parameters, the first iteration's copies and waits, the next iteration's
    pieces."""
    at: dict[int, list[str]] = {0: [f"deeploy_s{n}_fetch({j});"]}
    ends = [e for _, _, e in s.first]
    for pos in range(s.span.body):
        issued = [c for c, (q, _, _) in enumerate(s.first) if q == pos]
        chunk = [e for q, _, e in s.chunks if q == pos]
        wait = ends.index(chunk[0]) if chunk else len(s.first)
        if issued or wait < len(s.first):
            a, b = (issued[0], issued[-1] + 1) if issued else (0, 0)
            at.setdefault(pos, []).append(f"deeploy_s{n}_first({j}, {a}u, {b}u, {wait}u);")
    for c, (pos, _, _) in enumerate(s.pieces):
        at.setdefault(pos, []).append(f"deeploy_s{n}_next({j}, {c}u);")
    return at


def stream_code(plan: MemoryPlan, names: BufferNames, engine: str, rolled: RolledNetwork
                ) -> tuple[list[str], dict[int, str], list[tuple]]:
    """Weight streaming (``memory/stream.py``): per stream its C (``deeploy_s<n>_fetch(j)`` at
    iteration j > 0's start waits for its parameters; ``deeploy_s<n>_first`` issues the first
    iteration's copies of a body position and waits for those the position reads;
    ``deeploy_s<n>_next(j, c)`` starts copying iteration j + 1's piece c into the other slot), those
    statements before the layers of every iteration a rolled body does not run, and the stored
    blocks (ident, bytes, values, level)."""
    defs, at, blocks = [], {}, []
    for n, s in enumerate(plan.streams):
        slot0 = f"({stream_buffer(s.into) if s.into else names.arena} + {s.offset})"
        src, count, p = f"deeploy_s{n}_src", s.span.iterations, f"deeploy_s{n}"
        blocks.append((src, s.span.iterations * s.slot, s.block(names.graph), s.level))
        starts = ", ".join(str(a) for _, a, _ in s.first) + f", {s.slot}"
        pieces = ", ".join(str(a) for _, a, _ in s.pieces) + f", {s.slot}"
        k = len(s.first)
        defs.append("\n".join([
            f"/* region '{comment_text(s.span.name)}': iteration j's parameters ({s.slot} B) in slot j % 2 of "
            f"{slot0}, copied from {s.level} in {len(s.pieces)} pieces while iteration j - 1 runs */",
            f"static deeploy_dma_t {p}_pending, {p}_first_copy[{k}];",
            f"static const uint32_t {p}_first_at[] = {{{starts}}};",
            f"static const uint32_t {p}_piece[] = {{{pieces}}};",
            f"static void {p}_fetch(uint32_t j) {{",
            f"    if (j > 0) deeploy_dma_wait({engine}, {p}_pending);",
            "}",
            f"static void {p}_first(uint32_t j, uint32_t a, uint32_t b, uint32_t w) {{   /* the first iteration: "
            f"copies a..b-1, then wait for copy w (none: {k}) */",
            f"    if (j != 0) return;",
            f"    for (uint32_t c = a; c < b; c++)",
            f"        {p}_first_copy[c] = deeploy_dma_copy({engine}, {slot0} + {p}_first_at[c], {src} + {p}_first_at[c],",
            f"                                             {p}_first_at[c + 1] - {p}_first_at[c]);",
            f"    if (w < {k}u) deeploy_dma_wait({engine}, {p}_first_copy[w]);",
            "}",
            f"static void {p}_next(uint32_t j, uint32_t c) {{",
            f"    if (j + 1 >= {count}u) return;",
            f"    {p}_pending = deeploy_dma_copy({engine}, {slot0} + ((j + 1) % 2) * {s.slot} + {p}_piece[c],",
            f"                                  {src} + (j + 1) * {s.slot} + {p}_piece[c], {p}_piece[c + 1] - {p}_piece[c]);",
            "}"]))
        for j in range(count):
            base = s.span.start + j * s.span.body
            if base in rolled.covered:
                continue
            for pos, stmts in stream_statements(n, s, f"{j}u").items():
                at.setdefault(base + pos, []).extend(stmts)
    return defs, {k: "\n    ".join(v) for k, v in at.items()}, blocks
