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
    l2_path_cycles 0.25: GUESS, one word access per cycle on each of the 4 groups' AXI ports.
    fork_cycles 50, barrier_cycles 40: GUESS; a fork is one write to the wake-up register, a
        barrier an atomic counter in L1 (``mempool_barrier``), then a wake-up; not found.
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
                               l2_latency=10.0, fork_cycles=50.0, barrier_cycles=40.0)
