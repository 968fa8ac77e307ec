"""The NPU engine's timeline in the cycle model. A job's functional model runs on the core that
triggers it between NPU_JOB_BEGIN and NPU_JOB_END (not core work); inside, the driver emits the
job's modelled cycles (``Deeploy/targets/siracusa_w_neureka/params.py`` ``job_cycles``, the spec's
throughput model) as NPU_DIGITS hex-digit markers. The engine runs jobs one after the other in
trigger order; a core's NPU_WAIT blocks it until its oldest unwaited job is done, so cores, DMA
and the NPU overlap exactly as the trigger and wait points allow."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from Deeploy.runtime.abi import NPU_DIGIT_BASE, NPU_DIGITS, NPU_JOB_BEGIN, NPU_JOB_END
from Deeploy.targets.siracusa.records import Records

__all__ = ["NpuJob", "NpuTimeline", "npu_job_cycles"]


@dataclass(frozen=True)
class NpuJob:
    hart: int
    triggered: float     # when the core triggered it
    start: float         # when the engine started it (after the jobs before it)
    cycles: int


def npu_job_cycles(recs: Records) -> dict[tuple[int, int], int]:
    """Each job's modelled cycles by (hart, seq) of its NPU_JOB_END record."""
    jobs: dict[tuple[int, int], int] = {}
    for hart, rs in recs.by_hart.items():
        value, digits = 0, None
        for r in rs:
            if r.marker == NPU_JOB_BEGIN:
                value, digits = 0, 0
            elif r.marker is not None and NPU_DIGIT_BASE <= r.marker < NPU_DIGIT_BASE + 16 and digits is not None:
                value, digits = value * 16 + r.marker - NPU_DIGIT_BASE, digits + 1
            elif r.marker == NPU_JOB_END and digits is not None:
                if digits != NPU_DIGITS:
                    raise ValueError(f"hart {hart} record {r.seq}: an NPU job with {digits} cycle digits "
                                     f"(expected {NPU_DIGITS})")
                jobs[(hart, r.seq)] = value
                digits = None
    return jobs


class NpuTimeline:
    """One NPU: jobs in trigger order, each ``cycles`` long; per core a queue of unwaited jobs."""

    def __init__(self, cycles: dict[tuple[int, int], int]):
        self.cycles = cycles
        self.free = 0.0
        self.jobs: list[NpuJob] = []
        self.pending: dict[int, deque[float]] = {}

    def trigger(self, hart: int, seq: int, t: float) -> float:
        """The job whose NPU_JOB_END is (hart, seq) is triggered at ``t``; the core goes on at ``t``."""
        cycles = self.cycles[(hart, seq)]
        start = max(t, self.free)
        self.free = start + cycles
        self.jobs.append(NpuJob(hart, t, start, cycles))
        self.pending.setdefault(hart, deque()).append(self.free)
        return t

    def wait(self, hart: int, t: float) -> float:
        """The core waits for its oldest unwaited job."""
        queue = self.pending.get(hart)
        return max(t, queue.popleft()) if queue else t

    @property
    def busy(self) -> int:
        return sum(j.cycles for j in self.jobs)
