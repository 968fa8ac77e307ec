"""The interface shared by the generated code, the Siracusa runtime library
(``TargetLibraries/Siracusa``), the QEMU timing plugin (``toolchain/qemu_plugin``) and the cycle
model (``timing.py``, ``profile.py``): marker ids and the tables of tiled layers.

Every marker id and the layout of every tile-table struct is defined here, once. The C headers
``TargetLibraries/Siracusa/inc/deeploy_abi.h`` and ``toolchain/qemu_plugin/deeploy_markers.h``
are generated from this module (``python -m Deeploy.runtime.abi_headers``) and
committed; a test checks that regenerating them gives the same bytes.

Markers are the instruction ``slti x0, x0, ID`` (a no-op whose 12-bit immediate the plugin
decodes). Ids in the wait-region range: an even id stops the plugin's counting of the hart, an
odd id resumes it; all other ids leave counting as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Mapping, Sequence

__all__ = ["Marker", "MARKERS", "CField", "CStruct", "TILE_STRUCTS", "TILE_AXIS", "TILE_OPERAND", "TILE_ARG",
           "TILED_LAYER", "TILE_GEOMETRY", "TILE_COPY", "TILE_STEP", "TILE_PLAN", "TILE_LIMITS", "TILE_SYNC",
           "TILE_MAX_DIMS", "TILE_MAX_OPERANDS", "TILE_MAX_RANK", "TILE_MAX_GEOMETRIES", "TILE_PLAN_L1_BYTES",
           "TILE_MARKS",
           "LAYER_BASE", "LAYER_END", "LAYER_COUNT", "layer_marker", "check_tile_limits"]


@dataclass(frozen=True)
class Marker:
    """One marker id: its C macro, value and meaning (``plugin``: the plugin header needs it)."""

    c_name: str
    value: int
    doc: str
    plugin: bool = True
    count: bool = False       # a number of things, not an id (written in decimal)


# Ranges of the marker protocol.
WAIT_FIRST, WAIT_LAST = 0x10, 0x3F          # wait-region markers: even stops counting, odd resumes
DMA_INNER_FIRST, DMA_INNER_LAST = 0x40, 0x4F  # inside a DMA window only: no record of their own
DMA_MAX_ENGINES = 8

# Runtime (deeploy_runtime.h): fork, join, barrier, boot.
FORK_ENTER = 0x10
TASK_BEGIN = 0x11
TASK_END = 0x12
FORK_LEAVE = 0x13
BARRIER_ENTER = 0x14
BARRIER_LEAVE = 0x15
BOOT = 0x16
PARK = 0x18
INIT_ENTER = 0x1A
INIT_LEAVE = 0x1B
DM_CALL_ENTER = 0x1C       # data-mover core (Snitch): hart 0 hands it a call ...
DM_CALL_LEAVE = 0x1D       # ... and serves its forks as a compute core until it returns
FORK_JOIN = 0x1E           # a forker that does not compute (the data mover) waits for the cores
FORK_RUN = 0x1F            # ... after working on while they compute (from FORK_RUN)
DM_RUN_BEGIN = 0x27        # the data mover starts the call
DM_RUN_END = 0x28          # ... and has returned from it

# DMA (deeploy_dma.h): issue and wait windows, and the markers inside them.
DMA_ISSUE_BEGIN = 0x20
DMA_ISSUE_END = 0x21
DMA_WAIT_BEGIN = 0x22
DMA_WAIT_END = 0x23
DMA_ENGINE_BASE = 0x40
DMA_CMD = 0x48
DMA_ROW_BEGIN = 0x49
DMA_ROW_END = 0x4A
DMA_RETIRE = 0x4B

# NPU (TargetLibraries/Neureka/inc/neureka.h): the functional model of a triggered job runs on the
# triggering hart between these (a wait region: not core work).
NPU_JOB_BEGIN = 0x24
NPU_JOB_END = 0x25
NPU_WAIT = 0x58                              # a core waits for its oldest NPU job
NPU_DIGIT_BASE = 0x60                        # inside a job bracket: its modelled cycles, hex digits
NPU_DIGITS = 6                               # digits of a job's cycles, most significant first
NPU_MAC_DIGITS = 8                           # then digits of its multiply-accumulates

# Tile loop (deeploy_tiling.h): phases of the L1 tiles and of the L2 staging tiles, on hart 0.
TILE_INPUT = 0x50
TILE_KERNEL = 0x51
TILE_OUTPUT = 0x52
TILE_END = 0x53
STAGE_INPUT = 0x54
STAGE_INNER = 0x55
STAGE_OUTPUT = 0x56
STAGE_END = 0x57
TILE_MARKS = range(TILE_INPUT, STAGE_END + 1)

# Layers (generated RunNetwork): layer k starts at LAYER_BASE + k; LAYER_END closes the last one.
LAYER_END = 0x0FF
LAYER_BASE = 0x100
LAYER_COUNT = 0x800 - LAYER_BASE             # the immediate is a positive 12-bit number


def layer_marker(k: int) -> int:
    """The marker id of layer ``k``."""
    if not 0 <= k < LAYER_COUNT:
        raise ValueError(f"layer {k} has no marker id (layers 0..{LAYER_COUNT - 1})")
    return LAYER_BASE + k


MARKERS: tuple[Marker, ...] = (
    Marker("DEEPLOY_RT_WAIT_FIRST", WAIT_FIRST, "first id of the wait-region range"),
    Marker("DEEPLOY_RT_WAIT_LAST", WAIT_LAST, "last id of the wait-region range"),
    Marker("DEEPLOY_RT_FORK_ENTER", FORK_ENTER, "hart 0 (or the data mover) enters a fork (stop)"),
    Marker("DEEPLOY_RT_TASK_BEGIN", TASK_BEGIN, "a core starts fn(arg) (resume)"),
    Marker("DEEPLOY_RT_TASK_END", TASK_END, "a core has returned from fn(arg) (stop)"),
    Marker("DEEPLOY_RT_FORK_LEAVE", FORK_LEAVE, "the forker: all cores have finished; fork returns (resume)"),
    Marker("DEEPLOY_RT_BARRIER_ENTER", BARRIER_ENTER, "a core enters deeploy_cluster_barrier (stop)"),
    Marker("DEEPLOY_RT_BARRIER_LEAVE", BARRIER_LEAVE, "all cores have arrived (resume)"),
    Marker("DEEPLOY_RT_BOOT", BOOT, "a worker hart (id >= 1) right after reset (stop)"),
    Marker("DEEPLOY_RT_PARK", PARK, "an unused hart, sleeping forever (stop)"),
    Marker("DEEPLOY_RT_INIT_ENTER", INIT_ENTER, "hart 0: runtime start-up before main (stop)"),
    Marker("DEEPLOY_RT_INIT_LEAVE", INIT_LEAVE, "hart 0: workers released, main follows (resume)"),
    Marker("DEEPLOY_RT_DM_CALL_ENTER", DM_CALL_ENTER, "hart 0 hands a call to the data-mover core (stop)"),
    Marker("DEEPLOY_RT_DM_CALL_LEAVE", DM_CALL_LEAVE, "hart 0: the data mover's call has returned (resume)"),
    Marker("DEEPLOY_RT_FORK_RUN", FORK_RUN, "the data mover has started a fork and works on (resume)"),
    Marker("DEEPLOY_RT_FORK_JOIN", FORK_JOIN, "the data mover waits for the fork's cores (stop; FORK_LEAVE follows)"),
    Marker("DEEPLOY_RT_DM_RUN_BEGIN", DM_RUN_BEGIN, "the data mover starts hart 0's call (resume)"),
    Marker("DEEPLOY_RT_DM_RUN_END", DM_RUN_END, "the data mover has returned from the call (stop)"),
    Marker("DEEPLOY_RT_DMA_ISSUE_BEGIN", DMA_ISSUE_BEGIN, "a DMA issue window opens (stop)"),
    Marker("DEEPLOY_RT_DMA_ISSUE_END", DMA_ISSUE_END, "the DMA issue window closes (resume)"),
    Marker("DEEPLOY_RT_DMA_WAIT_BEGIN", DMA_WAIT_BEGIN, "a DMA wait window opens (stop)"),
    Marker("DEEPLOY_RT_DMA_WAIT_END", DMA_WAIT_END, "the DMA wait window closes (resume)"),
    Marker("DEEPLOY_RT_NPU_JOB_BEGIN", NPU_JOB_BEGIN, "an NPU job's functional model starts (stop)"),
    Marker("DEEPLOY_RT_NPU_JOB_END", NPU_JOB_END, "the NPU job's functional model is done (resume)"),
    Marker("DEEPLOY_RT_NPU_WAIT", NPU_WAIT, "a core waits for the oldest NPU job it triggered"),
    Marker("DEEPLOY_RT_NPU_DIGIT_BASE", NPU_DIGIT_BASE, "DIGIT(d) = base + d: a hex digit of the job's modelled cycles"),
    Marker("DEEPLOY_RT_NPU_DIGITS", NPU_DIGITS, "digits of a job's cycles, most significant first", count=True),
    Marker("DEEPLOY_RT_NPU_MAC_DIGITS", NPU_MAC_DIGITS, "then digits of the job's multiply-accumulates", count=True),
    Marker("DEEPLOY_RT_DMA_INNER_FIRST", DMA_INNER_FIRST, "first id of the in-window DMA markers"),
    Marker("DEEPLOY_RT_DMA_INNER_LAST", DMA_INNER_LAST, "last id of the in-window DMA markers"),
    Marker("DEEPLOY_RT_DMA_ENGINE_BASE", DMA_ENGINE_BASE, "ENGINE(e) = base + e names the window's engine"),
    Marker("DEEPLOY_RT_DMA_MAX_ENGINES", DMA_MAX_ENGINES, "engines the ENGINE markers can name", count=True),
    Marker("DEEPLOY_RT_DMA_CMD", DMA_CMD, "a hardware command (1-D or 2-D) of the transfer begins"),
    Marker("DEEPLOY_RT_DMA_ROW_BEGIN", DMA_ROW_BEGIN, "a contiguous row of the transfer follows"),
    Marker("DEEPLOY_RT_DMA_ROW_END", DMA_ROW_END, "the row ends"),
    Marker("DEEPLOY_RT_DMA_RETIRE", DMA_RETIRE, "the oldest unretired transfer of this core and engine is done"),
    Marker("DEEPLOY_MARK_TILE_INPUT", TILE_INPUT, "L1 tile: its inputs are moved", plugin=False),
    Marker("DEEPLOY_MARK_TILE_KERNEL", TILE_KERNEL, "L1 tile: its kernel is forked", plugin=False),
    Marker("DEEPLOY_MARK_TILE_OUTPUT", TILE_OUTPUT, "L1 tile: its outputs are written back", plugin=False),
    Marker("DEEPLOY_MARK_TILE_END", TILE_END, "L1 tile: done", plugin=False),
    Marker("DEEPLOY_MARK_STAGE_INPUT", STAGE_INPUT, "L2 tile: its L3 inputs are staged", plugin=False),
    Marker("DEEPLOY_MARK_STAGE_INNER", STAGE_INNER, "L2 tile: its L1 tile loop runs", plugin=False),
    Marker("DEEPLOY_MARK_STAGE_OUTPUT", STAGE_OUTPUT, "L2 tile: its L3 outputs are written back", plugin=False),
    Marker("DEEPLOY_MARK_STAGE_END", STAGE_END, "L2 tile: done", plugin=False),
    Marker("DEEPLOY_MARKER_LAYER_END", LAYER_END, "closes the last layer", plugin=False),
    Marker("DEEPLOY_MARKER_LAYER_BASE", LAYER_BASE, "layer k starts at base + k", plugin=False),
    Marker("DEEPLOY_MARKER_LAYER_COUNT", LAYER_COUNT, "layers that have a marker id", plugin=False, count=True),
)


# ---- tables of tiled layers (read by deeploy_run_tiled, TargetLibraries/Siracusa/src/deeploy_tiling.c)

TILE_MAX_DIMS = 8
TILE_MAX_OPERANDS = 12
TILE_MAX_RANK = 8
TILE_MAX_GEOMETRIES = 16
TILE_PLAN_L1_BYTES = 4096
TILE_LIMITS = (("DEEPLOY_TILE_MAX_DIMS", TILE_MAX_DIMS, "iteration dims of a tiled layer"),
               ("DEEPLOY_TILE_MAX_OPERANDS", TILE_MAX_OPERANDS, "operands of a tiled layer"),
               ("DEEPLOY_TILE_MAX_RANK", TILE_MAX_RANK, "axes of one operand"),
               ("DEEPLOY_TILE_MAX_GEOMETRIES", TILE_MAX_GEOMETRIES, "copy shapes of a planned tile loop"),
               ("DEEPLOY_TILE_PLAN_L1_BYTES", TILE_PLAN_L1_BYTES,
                "a planned loop's steps and copies up to this size are read from an L1 copy"))
# What the tile loop asks of an engine whose tile kernels may return with work in flight
# (deeploy_tiled_layer_t.engine_sync): wait for all of it, for every tile's but the latest one's,
# or let the following tiles return early.
TILE_SYNC = (("DEEPLOY_TILE_SYNC_ALL", 0, "wait for every tile's work; stop deferring"),
             ("DEEPLOY_TILE_SYNC_PREVIOUS", 1, "wait for the work of every tile but the latest"),
             ("DEEPLOY_TILE_SYNC_DEFER", 2, "the following tile kernels may return with work in flight"))


@dataclass(frozen=True)
class CField:
    """One struct member: ``decl`` is its C declarator with ``{}`` where the name goes."""

    name: str
    decl: str
    doc: str = ""
    count: int = 0            # > 0: an array of that many values (an initializer takes a list)
    count_c: str = ""         # the array length as written in C (a macro), default the number

    def declaration(self) -> str:
        return self.decl.format(self.name + (f"[{self.count_c or self.count}]" if self.count else "")) + ";"

    def scalar_bytes(self) -> int:
        """Bytes (and alignment) of one value on RV32 (ILP32): pointers 4, else its integer type."""
        if "*" in self.decl:
            return 4
        return _INT_BYTES[self.decl.split()[0]]


@dataclass(frozen=True)
class CStruct:
    """A typedef'd C struct, and its positional initializers from values by member name."""

    c_name: str
    doc: str
    fields: tuple[CField, ...]

    @cached_property
    def member_names(self) -> frozenset[str]:
        return frozenset(f.name for f in self.fields)

    def initializer(self, values: Mapping[str, object]) -> str:
        """``{v1, v2, ...}`` in member order; every member must be given, lists for arrays."""
        names = self.member_names
        if values.keys() != names:
            raise ValueError(f"{self.c_name}: members {sorted(names - set(values))} missing, "
                             f"{sorted(set(values) - names)} unknown")
        return "{" + ", ".join([_c_value(values[f.name], f) for f in self.fields]) + "}"


    def size(self) -> int:
        """``sizeof`` the struct on RV32 (ILP32): members at their natural alignment."""
        offset, align = 0, 1
        for f in self.fields:
            b = f.scalar_bytes()
            offset = -(-offset // b) * b + b * max(f.count, 1)
            align = max(align, b)
        return -(-offset // align) * align


_INT_BYTES = {f"{sign}int{bits}_t": bits // 8 for sign in ("", "u") for bits in (8, 16, 32)}


def _c_value(value: object, f: CField) -> str:
    if f.count:
        items = list(value)  # type: ignore[call-overload]
        if len(items) != f.count:
            raise ValueError(f"member {f.name}: {len(items)} values for {f.count} elements")
        return "{" + ", ".join(map(str, items)) + "}"
    if isinstance(value, bool):
        return str(int(value))
    return str(value)


TILE_AXIS = CStruct("deeploy_tile_axis_t", "one axis of an operand, following one iteration dim", (
    CField("size", "int32_t {}", "elements along the axis (the tensor's view shape)"),
    CField("stride", "int32_t {}", "index of the axis = dim index * stride + offset"),
    CField("offset", "int32_t {}"),
    CField("span", "int32_t {}", "extent of one dim step along the axis (windows)"),
    CField("dim", "int16_t {}", "iteration dim, -1: the whole axis"),
    CField("reverse", "uint8_t {}", "1: the axis runs against the dim"),
    CField("group_q", "uint16_t {}", "channel groups: dim index / q * r; 0: no groups"),
    CField("group_r", "uint16_t {}"),
))

TILE_OPERAND = CStruct("deeploy_tile_operand_t", "one operand of a tiled layer and its L1 slots", (
    CField("home", "uint8_t *{}", "the tensor (first element) in L2 or L3"),
    CField("axes", "const deeploy_tile_axis_t *{}"),
    CField("rank", "uint8_t {}"),
    CField("elem", "uint8_t {}", "bytes per element"),
    CField("output", "uint8_t {}", "1: written by the kernel, 0: read"),
    CField("in_l3", "uint8_t {}", "1: staged through `staging` in L2"),
    CField("copies", "uint8_t {}", "L1 slots: 2 when double-buffered"),
    CField("l1", "uint8_t *{}", "the L1 slots", count=2),
    CField("staging", "uint8_t *{}", "L2 buffer of an L3 operand's L2 tile"),
))

TILE_ARG = CStruct("deeploy_tile_t", "what the kernel of one tile sees (its fork argument)", (
    CField("cls", "uint32_t {}", "which call of the layer's kernel (tile class)"),
    CField("fill", "uint32_t {}", "1: the call fills the layer's shared tables (its class's first tile of "
           "the loop); 0: they hold what that call filled"),
    CField("buf", "void *{}", "each operand's L1 tile", count=TILE_MAX_OPERANDS,
           count_c="DEEPLOY_TILE_MAX_OPERANDS"),
))

TILED_LAYER = CStruct("deeploy_tiled_layer_t", "a tiled layer: iteration space, tiles, operands, kernel", (
    CField("ndims", "uint8_t {}"),
    CField("noperands", "uint8_t {}"),
    CField("double_buffer", "uint8_t {}"),
    CField("order", "const uint8_t *{}", "loop order, outermost first"),
    CField("size", "const int32_t *{}", "elements per dim"),
    CField("l2_tile", "const int32_t *{}", "L2 tile extent per dim"),
    CField("l1_tile", "const int32_t *{}", "L1 tile extent per dim"),
    CField("dim_class", "const uint16_t *const *{}", "per dim: class of each L1 tile along it, in order"),
    CField("class_radix", "const uint32_t *{}", "tile class = sum over d of dim_class[d][i] * radix[d]"),
    CField("operands", "const deeploy_tile_operand_t *{}"),
    CField("kernel", "void (*{})(void *)", "forked on every tile with a deeploy_tile_t *"),
    CField("engine_sync", "void (*{})(uint32_t)",
           "NULL, or the hook of an engine whose kernels can return with work in flight (DEEPLOY_TILE_SYNC_*)"),
))

# ---- a planned tile loop (deeploy_run_planned): the compile-time DMA plan of Deeploy/tiling/dma_plan.py

TILE_GEOMETRY = CStruct("deeploy_tile_geometry_t", "the shape of a copy: planes of rows of row bytes", (
    CField("row", "uint32_t {}"),
    CField("rows", "uint32_t {}"),
    CField("dst_stride", "uint32_t {}"),
    CField("src_stride", "uint32_t {}"),
    CField("planes", "uint32_t {}"),
    CField("dst_plane_stride", "uint32_t {}"),
    CField("src_plane_stride", "uint32_t {}"),
))

TILE_COPY = CStruct("deeploy_tile_copy_t", "one cluster DMA copy of a planned tile loop", (
    CField("dst", "uint8_t *{}"),
    CField("src", "const uint8_t *{}"),
    CField("geometry", "uint8_t {}", "its shape: index into the plan's geometries"),
    CField("handle", "uint8_t {}", "0: a load; 1 + 2 * output + slot: an output slot's write-back (output: its index among the outputs)"),
))

TILE_STEP = CStruct("deeploy_tile_step_t", "one L1 tile of a planned tile loop", (
    CField("cls", "uint16_t {}", "which call of the layer's kernel (tile class)"),
    CField("loads", "uint8_t {}", "copies issued in its input phase"),
    CField("prefetch", "uint8_t {}", "copies of the next tile's inputs, issued before its fork"),
    CField("stores", "uint8_t {}", "copies writing its outputs back"),
    CField("wait", "uint8_t {}", "1: wait for the loads in flight before the fork"),
    CField("reuse", "uint32_t {}", "bit 2 * output + slot: wait for that output slot's last write-back"),
    CField("slots", "uint32_t {}", "bit o: operand o's tile is in its second slot"),
))

TILE_PLAN = CStruct("deeploy_tile_plan_t", "a tiled layer's compile-time DMA plan", (
    CField("ntiles", "uint16_t {}"),
    CField("before", "uint16_t {}", "copies issued before the first tile (its loads, double-buffered)"),
    CField("ncopies", "uint32_t {}"),
    CField("noperands", "uint8_t {}"),
    CField("ngeometries", "uint8_t {}"),
    CField("wait_all", "uint8_t {}", "1 (single-buffered): every tile waits for its write-back"),
    CField("geometries", "const deeploy_tile_geometry_t *{}"),
    CField("slots", "uint8_t *const *{}", "operand o's L1 slots at 2 * o and 2 * o + 1"),
    CField("steps", "const deeploy_tile_step_t *{}"),
    CField("copies", "const deeploy_tile_copy_t *{}", "in issue order: before, then per tile loads, prefetch, stores"),
    CField("kernel", "void (*{})(void *)", "forked on every tile with a deeploy_tile_t *"),
))

TILE_STRUCTS: tuple[CStruct, ...] = (TILE_AXIS, TILE_OPERAND, TILE_ARG, TILED_LAYER, TILE_GEOMETRY, TILE_COPY,
                                     TILE_STEP, TILE_PLAN)


def check_tile_limits(ndims: int, ranks: Sequence[int]) -> str | None:
    """Why a tiled layer does not fit the runtime's tables, or None."""
    if ndims > TILE_MAX_DIMS:
        return f"{ndims} iteration dims, the tile loop handles at most {TILE_MAX_DIMS}"
    if len(ranks) > TILE_MAX_OPERANDS:
        return f"{len(ranks)} operands, the tile loop handles at most {TILE_MAX_OPERANDS}"
    if ranks and max(ranks) > TILE_MAX_RANK:
        return f"an operand of rank {max(ranks)}, the tile loop handles at most {TILE_MAX_RANK}"
    return None
