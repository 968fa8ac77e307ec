"""MemPool's cycle model: the Siracusa family's model (``Deeploy.targets.siracusa.timing``: the
timing plugin's exact per-core counts, forks as barrier-separated phases lasting as long as their
slowest core or their busiest L1 bank) with MemPool's parameters and its hierarchical L1.

The plugin runs with ``l1map`` (the ``__deeploy_l1_banks`` ... symbols of cmake/MemPool.cmake): it counts each
core's L1 loads from a bank in another tile of its group (``l1_group_ld``) and in another group
(``l1_remote_ld``), and per fork phase the accesses of the busiest of the 1024 banks over all
cores (the phase's floor, ``siracusa/contention.py``). The core stacks are tile-local (the
hardware's sequential region). Sources: ``specs/mempool.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from Deeploy.targets.siracusa.timing import TimingModel

__all__ = ["MemPoolTiming", "MEMPOOL_TIMING"]


@dataclass(frozen=True)
class MemPoolTiming(TimingModel):
    """``TimingModel`` with MemPool's values; what differs from Siracusa's and why:

    base_cpi 1: Snitch, a single-issue in-order core (Snitch paper). taken_cycles 1, jump_cycles 1:
        GUESS (Snitch fetches from its L0 cache with no branch prediction; not found).
    mulh_cycles 2, div_cycles 2: the peer's Banshee model charges 3 cycles for mul/mulh*/div/rem
        (``mempool.yaml``); mul is one instruction here (not counted apart: 1 cycle).
    load_use_cycles 1: a tile-local load returns after 1 cycle [P1].
    group_cycles 2, remote_cycles 4: extra cycles of a load from another tile of the group (3-cycle
        latency, paper) or another group (5 cycles, README: at most 5); an upper bound, Snitch's
        scoreboard lets independent instructions run meanwhile. Stores are posted.
    l1_banks 1024: 1 KiB banks, word-interleaved (``config.mk``); a bank serves one access per cycle.
    l2_latency 10: the peer's Banshee DRAM latency (the L2 is behind the AXI tree).
    l2_path_cycles 0.25: the L2's 4 banks (``mempool.cmake``), each serving one word access per
        cycle (*derived*).
    fork_cycles 50, barrier_cycles 40: GUESS; a fork is one write to the wake-up register, a
        barrier an atomic counter in L1 (``mempool_barrier``), then a wake-up; not found.
    Inherited from Siracusa's core (the CV32E40P) and not found for MemPool's Snitch, so GUESS
    here: misaligned 1, target32 1, jrdep 1 (RV32IMA: no compressed instructions, target32 never
    applies).

    The DMA (iDMA behind MemPool's frontend, L2 <-> L1; used by the tiled flow, ``--l1``; core 0
    programs it, as the peer's kernels do):
    dma_bandwidth 64: one beat of the 512-bit AXI per cycle (``mempool.cmake``: AXI width 512;
        *derived*, as the spec: bandwidth = AXI width per cycle of a backend).
    dma_words_1d 5, dma_issue_word_cycles 5: the frontend's src, dst, num_bytes and conf registers
        written and next_id read to launch (``dma.h``), each a peripheral access of Banshee's
        latency 5 (``mempool.yaml``). The frontend has 1-D transfers only: the runtime issues a
        row as a command of its own (``DEEPLOY_DMA_1D``), so every row costs the core 5 words
        (dma_words_2d 5 as well: no 2-D command is issued) and the engine dma_row_cycles 10 before
        its first beat, the peer's Banshee L2 latency (``mempool.yaml``); dma_setup_cycles 0 (that
        access is the row's).
    """

    group_cycles: float = 2.0
    remote_cycles: float = 4.0

    def class_cycles(self, column: str) -> float:
        if column == "l1_group_ld":
            return self.group_cycles
        if column == "l1_remote_ld":
            return self.remote_cycles
        return super().class_cycles(column)


MEMPOOL_TIMING = MemPoolTiming(taken_cycles=1.0, jump_cycles=1.0, mulh_cycles=2.0, div_cycles=2.0,
                               load_use_cycles=1.0, fdivsqrt_cycles=0.0, l1_banks=1024, l2_path_cycles=0.25,
                               l2_latency=10.0, fork_cycles=50.0, barrier_cycles=40.0, dma_bandwidth=64.0,
                               dma_setup_cycles=0.0, dma_row_cycles=10.0, dma_issue_word_cycles=5.0, dma_words_1d=5,
                               dma_words_2d=5)
