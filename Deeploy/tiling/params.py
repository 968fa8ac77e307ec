"""Parameters of the tiling cost model, with their sources.

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

from Deeploy.targets.siracusa.platform import SIRACUSA

__all__ = ["TilingParams", "SIRACUSA_L1", "VIRTUAL_PLATFORM_L1", "l3_to_l2_params", "BUFFERING"]

BUFFERING = ("double", "single", "auto")
_T = SIRACUSA.timing


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
    """

    capacity: int = 64000
    alignment: int = SIRACUSA.level("L1").alignment
    dma_bytes_per_cycle: int = int(_T.dma_bandwidth)
    dma_setup: int = int(_T.dma_setup_cycles)
    dma_row_cycles: int = int(_T.dma_row_cycles)
    dma_issue_word_cycles: int = int(_T.dma_issue_word_cycles)
    dma_words_1d: int = 3
    dma_words_2d: int = 5
    dma_full_duplex: bool = False
    dma_2d: bool = True
    ops_per_cycle: float = 31.0
    cores: int = SIRACUSA.max_cores
    fork_cycles: int = int(_T.fork_cycles)
    barrier_cycles: int = int(_T.barrier_cycles)
    tile_loop_cycles: int = 20
    buffering: str = "double"
    max_candidates: int = 48
    max_grid: int = 6000
    max_deterministic_time: float = 5.0
    max_time_s: float = 30.0
    seed: int = 0
    level: str = "L1"
    source: str = "L2"

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


SIRACUSA_L1 = TilingParams()

# The virtual platform (QEMU, plain RV32IMAC cores): measured ops per cycle of 8 cores with the
# data in L1, from the timing plugin's records of the Siracusa network tests (cores8) evaluated
# with the platform's TimingModel and l2_latency=0: RequantizedConv 2.25, RequantizedGemm 2.69,
# RequantizedMatMul 2.64, RequantShift 4.99 ops/cycle; 2.5 is representative of the heavy layers.
# Per tile, the generated tile loop (TargetLibraries/PULPOpen/src/deeploy_tiling.c) costs core 0
# about 2000 modelled cycles on the virtual platform beyond the kernel: operand boxes, DMA command
# set-up, waits and the fork, measured with --profileTiling on microLlama64_parallel's GEMMs
# ((layer cycles - kernel cycles) / tiles: 2261 at --l1 8000).
VIRTUAL_PLATFORM_L1 = replace(SIRACUSA_L1, ops_per_cycle=2.5, tile_loop_cycles=2000)


def l3_to_l2_params(l2_bytes: int, base: TilingParams = SIRACUSA_L1) -> TilingParams:
    """The same model one level up: L2 tiles of data that live in L3 (HyperRAM behind the uDMA),
    with the platform's L3 DMA engine (TimingModel l3_dma_*; spec "Memories and DMA": L3):
    1 B/cycle, 14 cycles set-up per transfer, every row its own HyperBus transaction (command
    phase 8 + latency 12 cycles), 14 cycles per command word stored by the core (GUESS in the
    TimingModel: a store crossing to the SoC peripherals), one queue for both directions."""
    return replace(base, capacity=l2_bytes, dma_bytes_per_cycle=int(_T.l3_dma_bandwidth),
                   dma_setup=int(_T.l3_dma_setup_cycles),
                   dma_row_cycles=int(_T.l3_dma_command_cycles + _T.l3_dma_latency_cycles),
                   dma_issue_word_cycles=int(_T.l3_dma_issue_word_cycles), dma_full_duplex=False,
                   level="L2", source="L3")
