"""Parameters of the tiling cost model. A platform's description carries its own
(``Platform.tiling``); Siracusa's, with their sources, are documented here.

Sources: ``/work/shared/specs/siracusa-timing.md`` (cited as *spec*, section and row) and the
Siracusa platform description (``Deeploy/targets/siracusa/platform.py``: memory alignment and the
virtual platform's TimingModel, whose DMA engine parameters cite the spec and GVSoC). The DMA
terms follow the platform's DMA timing (``Deeploy/targets/siracusa/timing.py``): per transfer
``setup`` cycles, then ``rows * (ceil(row_bytes / bandwidth) + row_cycles)``, and the issuing
core stores 3 words per 1-D and 5 per 2-D command, so the tiles the model prefers are the ones the
virtual platform will time as fast. GUESSes are marked.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

__all__ = ["TilingParams", "PlatformTiling", "l3_to_l2_params", "BUFFERING"]

BUFFERING = ("double", "single", "auto")


@dataclass(frozen=True)
class TilingParams:
    """One memory level's tiling problem: capacity, transfer and compute costs, solver limits.

    capacity:            bytes of the level one layer's tiles may use (``--l1``, default 64000;
                         the level holds 256 KiB, spec "Cluster: L1 TCDM").
    alignment:           every buffer starts aligned: 4 B (platform L1 MemoryLevel.alignment).
    dma_bytes_per_cycle: 8 B/cycle (spec "Memories and DMA", cluster DMA (mchan), *derived*: 2 TCDM
                         ports of 4 B per direction; TimingModel.dma_bandwidth). A beat serves one
                         contiguous row: a row of r bytes takes ceil(r / 8) cycles.
    dma_setup:           14 cycles from the command to the first beat, per command (spec "DMA
                         setup", *derived*; TimingModel.dma_setup_cycles).
    dma_row_cycles:      extra cycles per row of a strided transfer: 0 (TimingModel.dma_row_cycles:
                         the bursts of a 2-D transfer pipeline).
    dma_issue_word_cycles, dma_words_1d, dma_words_2d: the issuing core stores 3 command words for
                         a 1-D and 5 for a 2-D command, 1 cycle each (spec "DMA setup", GVSoC mchan;
                         TimingModel.dma_issue_word_cycles). Core time: counted as overhead.
    dma_full_duplex:     False: one DMA engine is one FIFO queue for both directions, as the
                         platform's DMA timing models it. The hardware has ports per direction
                         (spec "Memories and DMA"); True overlaps reads and writes.
    dma_2d:              the DMA has 2-D (length + stride) commands (spec: mchan 1-D and 2-D; a
                         3-D box costs one 2-D command per plane, as ``deeploy_dma_copy3d``).
    ops_per_cycle:       arithmetic ops per cycle of the whole cluster (8 cores). Default 31:
                         PULP-NN int8 kernels reach 15.5 MAC/cycle on 8 XpulpV2 cores, a MAC is
                         2 ops (spec "Sanity checks"). The virtual platform (plain RV32IMAC, no
                         SIMD) is ~12x slower: see VIRTUAL_PLATFORM_L1.
    cores:               8 cluster cores (spec "Cluster").
    fork_cycles:         dispatching one kernel call to the cores: GUESS 50 (spec: "not found,
                         tens of cycles"; platform TimingModel.fork_cycles).
    barrier_cycles:      11, the join of every call (Glaser et al., DATE 2019; spec "Cluster").
    tile_loop_cycles:    GUESS 20 per tile: tile index and pointer updates, DMA wait bookkeeping.
    buffering:           "double" (a second buffer for every operand whose tile changes, DMA of
                         the next tile overlapping the current tile's compute), "single" (no
                         overlap) or "auto" (the solver chooses per layer).
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
    dma_words_1d: int = 3
    dma_words_2d: int = 5
    dma_full_duplex: bool = False
    dma_2d: bool = True
    ops_per_cycle: float = 31.0
    cores: int = 8
    fork_cycles: int = 50
    barrier_cycles: int = 11
    tile_loop_cycles: int = 20
    buffering: str = "double"
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

    @property
    def per_tile_cycles(self) -> int:
        """Fixed cost of one tile: fork + join barrier + tile loop bookkeeping."""
        return self.fork_cycles + self.barrier_cycles + self.tile_loop_cycles

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
