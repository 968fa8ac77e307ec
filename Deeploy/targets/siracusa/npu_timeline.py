"""The NPU engine's timeline in the cycle model. A job's functional model runs on the core that
triggers it between NPU_JOB_BEGIN and NPU_JOB_END (not core work); inside, the driver emits the
job's modelled cycles (its engine's job model: ``siracusa_w_neureka/params.py`` or
``gap9_w_ne16/params.py`` ``job_cycles``) as NPU_DIGITS hex-digit markers, then its multiply-accumulates (NPU_MAC_DIGITS). The engine runs jobs one after the other in
trigger order; a core's NPU_WAIT blocks it until its oldest unwaited job is done, so cores, DMA
and the NPU overlap exactly as the trigger and wait points allow."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from Deeploy.runtime.abi import NPU_DIGIT_BASE, NPU_DIGITS, NPU_JOB_BEGIN, NPU_JOB_END, NPU_MAC_DIGITS
from Deeploy.targets.siracusa.records import Records

__all__ = ["NpuJob", "NpuTimeline", "npu_job_cycles", "NPU_PEAK_MACS", "npu_summary"]

# Peak multiply-accumulates per cycle of the NPU: 6x6 PEs x 32 channels in 1x1 mode
# (specs/neureka.md "Throughput"; 3x3 dense 1134, depthwise about 40).
NPU_PEAK_MACS = 1152


@dataclass(frozen=True)
class NpuJob:
    hart: int
    triggered: float     # when the core triggered it
    start: float         # when the engine started it (after the jobs before it)
    cycles: int
    macs: int = 0


def npu_job_cycles(recs: Records) -> dict[tuple[int, int], tuple[int, int]]:
    """Each job's (modelled cycles, multiply-accumulates) by (hart, seq) of its NPU_JOB_END record."""
    jobs: dict[tuple[int, int], tuple[int, int]] = {}
    for hart, rs in recs.by_hart.items():
        value, digits = 0, None
        for r in rs:
            if r.marker == NPU_JOB_BEGIN:
                value, digits = 0, 0
            elif r.marker is not None and NPU_DIGIT_BASE <= r.marker < NPU_DIGIT_BASE + 16 and digits is not None:
                value, digits = value * 16 + r.marker - NPU_DIGIT_BASE, digits + 1
            elif r.marker == NPU_JOB_END and digits is not None:
                if digits != NPU_DIGITS + NPU_MAC_DIGITS:
                    raise ValueError(f"hart {hart} record {r.seq}: an NPU job with {digits} digits "
                                     f"(expected {NPU_DIGITS + NPU_MAC_DIGITS})")
                jobs[(hart, r.seq)] = (value >> (4 * NPU_MAC_DIGITS), value & ((1 << (4 * NPU_MAC_DIGITS)) - 1))
                digits = None
    return jobs


class NpuTimeline:
    """One NPU: jobs in trigger order, each ``cycles`` long; per core a queue of unwaited jobs."""

    def __init__(self, cycles: dict[tuple[int, int], tuple[int, int]]):
        self.cycles = cycles
        self.free = 0.0
        self.jobs: list[NpuJob] = []
        self.pending: dict[int, deque[float]] = {}

    def trigger(self, hart: int, seq: int, t: float) -> float:
        """The job whose NPU_JOB_END is (hart, seq) is triggered at ``t``; the core goes on at ``t``."""
        cycles, macs = self.cycles[(hart, seq)]
        start = max(t, self.free)
        self.free = start + cycles
        self.jobs.append(NpuJob(hart, t, start, cycles, macs))
        self.pending.setdefault(hart, deque()).append(self.free)
        return t

    def wait(self, hart: int, t: float) -> float:
        """The core waits for its oldest unwaited job."""
        queue = self.pending.get(hart)
        return max(t, queue.popleft()) if queue else t

    @property
    def busy(self) -> int:
        return sum(j.cycles for j in self.jobs)


def npu_summary(jobs, lo: float, hi: float, peak_macs: float = NPU_PEAK_MACS) -> str:
    """The NPU's part of a layer running from ``lo`` to ``hi``: its jobs' busy cycles and the
    utilisation (MACs done / ``peak_macs`` per cycle in that time); '' when the layer triggered no job."""
    mine = [j for j in jobs if lo <= j.triggered < hi]
    if not mine:
        return ""
    busy = sum(j.cycles for j in mine)
    macs = sum(j.macs for j in mine)
    return (f"; NPU busy {busy} cycles ({len(mine)} job{'s' if len(mine) != 1 else ''}), "
            f"utilisation {100 * macs / (busy * peak_macs):.1f}%")
