"""Parameters of the tiling cost model, with their sources.

Sources: ``/work/shared/specs/siracusa-timing.md`` (cited as *spec*, section and row), the
Siracusa platform description (``Deeploy/targets/siracusa/platform.py``: memory sizes, alignment
and the virtual platform's TimingModel) and, where nothing was found, an explicit GUESS.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING

__all__ = ["TilingParams", "SIRACUSA_L1", "VIRTUAL_PLATFORM_L1", "l3_to_l2_params", "BUFFERING"]

BUFFERING = ("double", "single", "auto")


@dataclass(frozen=True)
class TilingParams:
    """One memory level's tiling problem: capacity, transfer and compute costs, solver limits.

    capacity:            bytes of the level available to one layer's tiles (``--l1``; default
                         64000 as the project's tiled flow uses; the level holds 256 KiB,
                         spec "Cluster: L1 TCDM").
    alignment:           every buffer starts aligned: 4 B (platform L1 MemoryLevel.alignment).
    dma_bytes_per_cycle: 8 B/cycle per direction, L2->L1 and L1->L2 (spec "Memories and DMA":
                         cluster DMA (mchan), *derived*: 2 TCDM ports of 4 B per direction). A beat
                         serves one contiguous row: rows shorter than 8 B move one per cycle.
    dma_full_duplex:     reads and writes proceed in parallel (same row: one port pair per
                         direction).
    dma_latency:         ~14 cycles before the first beat of a transfer (spec "DMA setup",
                         *derived*).
    dma_issue_1d/2d:     core stores to program a transfer: 3 words for 1-D, 5 for 2-D (spec
                         "DMA setup"); counted per DMA command with the latency.
    dma_2d:              the DMA has 2-D (length + stride) transfers (mchan, spec "Memories and
                         DMA"); without them every strided row is a command of its own.
    ops_per_cycle:       arithmetic ops per cycle of the whole cluster (8 cores). Default 31:
                         PULP-NN int8 kernels reach 15.5 MAC/cycle on 8 XpulpV2 cores, a MAC is
                         2 ops (spec "Sanity checks"). The virtual platform (plain RV32IMAC, no
                         SIMD) is ~12x slower: see VIRTUAL_PLATFORM_L1.
    cores:               8 cluster cores (spec "Cluster").
    fork_cycles:         dispatching one kernel call to the cores: GUESS 50 (spec: "not found,
                         tens of cycles"; platform TimingModel.fork_cycles).
    barrier_cycles:      11, the join of every call (Glaser et al., DATE 2019; spec "Cluster").
    tile_loop_cycles:    GUESS 20 per tile: tile index and pointer updates, DMA completion wait.
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
    alignment: int = 4
    dma_bytes_per_cycle: int = 8
    dma_full_duplex: bool = True
    dma_latency: int = 14
    dma_issue_1d: int = 3
    dma_issue_2d: int = 5
    dma_2d: bool = True
    ops_per_cycle: float = 31.0
    cores: int = 8
    fork_cycles: int = int(SIRACUSA_TIMING.fork_cycles)
    barrier_cycles: int = int(SIRACUSA_TIMING.barrier_cycles)
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
VIRTUAL_PLATFORM_L1 = replace(SIRACUSA_L1, ops_per_cycle=2.5)


def l3_to_l2_params(l2_bytes: int, base: TilingParams = SIRACUSA_L1) -> TilingParams:
    """The same model one level up: L2 tiles of data that lives in L3 (HyperRAM behind the uDMA).

    Bandwidth 1 B/cycle: "about 1 byte per peripheral cycle" (spec "Memories and DMA": L3,
    GVSoC uDMA hyper model; peripheral and cluster clocks taken equal, GUESS). Half duplex: one
    HyperBus. Latency 100 cycles per transfer: command/address phase (6 bytes) plus device
    latency plus uDMA programming, the platform TimingModel's l3_latency (GUESS). The uDMA has
    1-D transfers only (2-D commands cost as many 1-D ones: issue cost taken equal). Per L2
    tile the cluster runs the layer's L1 tiles; the fixed per-tile cost is the same fork/join.
    """
    return replace(base, capacity=l2_bytes, dma_bytes_per_cycle=1, dma_full_duplex=False,
                   dma_latency=int(SIRACUSA_TIMING.l3_latency), dma_issue_1d=3, dma_issue_2d=3, dma_2d=False,
                   level="L2", source="L3")
