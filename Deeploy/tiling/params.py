"""Parameters of the tiling cost model. They hold no target's values: a platform gives its own,
with their sources, as data (``Platform.tiling``; Siracusa's: ``Deeploy/targets/siracusa/platform.py``
from its cycle model, ``Deeploy/targets/siracusa/timing.py``). The DMA terms follow the
platform's DMA timing: per transfer ``setup`` cycles, then ``rows * (ceil(row_bytes / bandwidth) +
row_cycles)``, and the issuing core stores ``dma_words_1d`` words per 1-D and ``dma_words_2d`` per
2-D command, so the tiles the model prefers are the ones the virtual platform will time as fast.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["TilingParams", "PlatformTiling", "l3_to_l2_params", "BUFFERING"]

BUFFERING = ("double", "single", "auto")


@dataclass(frozen=True)
class TilingParams:
    """One memory level's tiling problem: capacity, transfer and compute costs, solver limits.

    capacity:            bytes of the level one layer's tiles may use (``--l1`` etc.).
    alignment:           every buffer starts aligned to this many bytes (the level's alignment).
    dma_bytes_per_cycle: bytes the DMA engine moves per cycle; a beat serves one contiguous row:
                         a row of r bytes takes ceil(r / dma_bytes_per_cycle) cycles.
    dma_setup:           cycles from a command to its first beat, per command.
    dma_row_cycles:      extra cycles per row of a strided transfer.
    dma_issue_word_cycles, dma_words_1d, dma_words_2d: the issuing core stores dma_words_1d
                         command words for a 1-D and dma_words_2d for a 2-D command,
                         dma_issue_word_cycles each. Core time: counted as overhead.
    dma_full_duplex:     False: one DMA engine is one FIFO queue for both directions; True
                         overlaps reads and writes.
    dma_2d:              the DMA has 2-D (length + stride) commands (a 3-D box costs one 2-D
                         command per plane).
    ops_per_cycle:       arithmetic ops per cycle of all the engine's cores together.
    cores:               cores a kernel call runs on.
    fork_cycles:         dispatching one kernel call to the cores.
    barrier_cycles:      the join of every call.
    tile_loop_cycles:    per tile of the table-driven loop (``deeploy_run_tiled``): tile index,
                         boxes and DMA commands worked out at run time, wait bookkeeping.
    loop_cycles:         per tile of a loop from a compile-time DMA plan (``dma_plan.loop_kind``),
                         by the layer's tile count: (from tiles, cycles) pairs, ascending; a layer
                         of T tiles pays the cycles of the last pair with from <= T. Empty: every
                         tile pays ``tile_loop_cycles`` (the layer runs from tables).
    call_cycles:         per tile of a layer priced by ``ops_per_cycle``: the kernel call's own
                         set-up beyond its ops (work split, parameters); a kernel cycle formula
                         (``kernel_cycles``) holds its own.
    op_call_cycles:      (layer op, cycles) pairs: ``call_cycles`` of the ops whose calls cost
                         several times the others' per extra tile.
    op_ops_per_cycle:    (layer op, ops per cycle) pairs: ``ops_per_cycle`` of the ops whose
                         kernels run at a rate of their own.
    buffering:           "double" (a second buffer for every operand whose tile changes, DMA of
                         the next tile overlapping the current tile's compute, or for all but the
                         held inputs: see solver.py), "single" (no overlap) or "auto" (the solver
                         chooses per layer).
    hold:                double buffering may hold inputs in one slot (solver.py); False for an
                         engine whose tile kernels return with work in flight (the next tile's
                         reload of a held input would overwrite what that work reads).
    max_candidates:      tile sizes per dim given to the solver (see spec.candidates).
    max_grid:            combinations of the dims' candidates per layer; beyond, the dim with
                         most candidates is thinned further (largest tiles kept).
    max_deterministic_time, max_time_s, seed: CP-SAT limits. The deterministic limit is the
                         binding one (same input -> same answer); the wall-clock limit only
                         guards against pathological models. One worker, fixed seed.
    level, source:       names of the tiled level and the level the data lives in (messages).
    kernel_cycles:       (layer op, model) pairs: ``model(node, graph, cores)`` gives a layer's
                         ``LayerSpec.tile_cycles`` (its kernel's cycle formula: block sizes,
                         remainders, per-call cost) or None; layers without one use ops_per_cycle.
    """

    capacity: int
    alignment: int
    dma_bytes_per_cycle: int
    dma_setup: int
    dma_row_cycles: int
    dma_issue_word_cycles: int
    dma_words_1d: int
    dma_words_2d: int
    ops_per_cycle: float
    cores: int
    fork_cycles: int
    barrier_cycles: int
    tile_loop_cycles: int
    loop_cycles: tuple = ()
    call_cycles: int = 0
    op_call_cycles: tuple = ()
    op_ops_per_cycle: tuple = ()
    dma_full_duplex: bool = False
    dma_2d: bool = True
    buffering: str = "double"
    hold: bool = True
    max_candidates: int = 48
    max_grid: int = 6000
    max_deterministic_time: float = 5.0
    max_time_s: float = 30.0
    seed: int = 0
    level: str = "L1"
    source: str = "L2"
    kernel_cycles: tuple = ()

    def __post_init__(self):
        if self.buffering not in BUFFERING:
            raise ValueError(f"buffering must be one of {BUFFERING}, got {self.buffering!r}")
        if self.capacity < 0 or self.dma_bytes_per_cycle < 1 or self.ops_per_cycle <= 0:
            raise ValueError("capacity, dma_bytes_per_cycle and ops_per_cycle must be positive")

    def call_price(self, op: str) -> int:
        """The set-up of one call of ``op``'s kernel (without a cycle formula)."""
        return dict(self.op_call_cycles).get(op, self.call_cycles)

    def ops_rate(self, op: str) -> float:
        """Ops per cycle of ``op``'s kernel (without a cycle formula) on all the cores together."""
        return dict(self.op_ops_per_cycle).get(op, self.ops_per_cycle)

    def per_tile_cycles(self, tiles, formula: bool = False, op: str = ""):
        """Fixed cost of one tile of a layer of ``tiles`` tiles (an int or a numpy array): fork +
        join barrier + the tile loop's (``loop_cycles``) + the call's set-up of the layer's ``op``
        unless its kernel has a cycle ``formula`` (``call_price``)."""
        loop = np.full(np.shape(tiles), self.tile_loop_cycles, dtype=np.int64)
        for start, cycles in self.loop_cycles:
            loop = np.where(np.asarray(tiles) >= start, cycles, loop)
        fixed = self.fork_cycles + self.barrier_cycles + (0 if formula else self.call_price(op))
        return fixed + (loop if np.ndim(tiles) else int(loop))

    def command_cycles(self, strided: bool) -> tuple[int, int]:
        """(DMA set-up, core issue) cycles of one command."""
        words = self.dma_words_2d if strided else self.dma_words_1d
        return self.dma_setup, words * self.dma_issue_word_cycles

    def with_capacity(self, capacity: int) -> "TilingParams":
        return replace(self, capacity=capacity)

    @property
    def flag(self) -> str:
        """The command-line option that sets this level's size."""
        return f"--{self.level.lower()}"


@dataclass(frozen=True)
class PlatformTiling:
    """A platform's tiling parameters: ``tiles`` for the tiles the kernels work on (capacity set by
    the compile options) and ``staging`` for the DMA that brings data from the outermost level
    into the tiled level's source (see ``l3_to_l2_params``)."""

    tiles: TilingParams
    staging: TilingParams
    stream_engine: str = ""   # C name of the DMA engine of ``staging`` (weight streaming; "": none)


def l3_to_l2_params(l2_bytes: int, base: TilingParams, staging: TilingParams) -> TilingParams:
    """The same model one level up: tiles of ``staging.level`` (``l2_bytes`` of it) of data that
    live in ``staging.source``, moved by the DMA engine that ``staging`` describes, computed by
    the cores and with the overheads of ``base``."""
    return replace(base, capacity=l2_bytes, dma_bytes_per_cycle=staging.dma_bytes_per_cycle,
                   dma_setup=staging.dma_setup, dma_row_cycles=staging.dma_row_cycles,
                   dma_issue_word_cycles=staging.dma_issue_word_cycles, dma_full_duplex=staging.dma_full_duplex,
                   level=staging.level, source=staging.source)
