"""Cycle model of the Siracusa virtual platform: modelled cycles from the exact per-hart counts
of the timing plugin (``toolchain/qemu_plugin``).

The plugin writes one record per marker instruction (format in
``toolchain/qemu_plugin/deeploy_timing.c``)::

    # columns hart seq marker insns L2_ld L2_st L1_ld L1_st L3_ld L3_st other_ld other_st
    0 4 0x010 54682 36 9507 10 20 0 0 2 0

with counters cumulative per hart and excluding the runtime's wait regions. The model:

* the cost of a stretch of one hart's execution is
  ``base_cpi * instructions + sum over regions of latency(region) * (loads + stores)``;
* serial code is hart 0's cost;
* a fork (hart 0: FORK_ENTER ... FORK_LEAVE; every core: TASK_BEGIN fn TASK_END) costs
  ``fork_cycles + sum over barrier phases of (max over participating cores of their cost in
  the phase) + barrier_cycles per barrier inside + barrier_cycles for the final join``: the
  cores run in lock-step between barriers, so each phase lasts as long as its slowest core
  (with no barrier inside, this is the max over cores of their cost in the fork);
* layer ``k`` (marker ``0x100 + k`` on hart 0) lasts from its marker to the next layer marker,
  ``DEEPLOY_MARK_LAYER_END`` (0x0ff) or the end of the program. Layer markers belong in serial
  code; one inside a forked function is placed at the fork's start plus hart 0's cost so far.

All results are *modelled* cycles of a plain RV32IMAC core set (no XpulpV2 SIMD, no stalls beyond
memory latency): compare ratios (1 vs 8 cores, tilings, L2 vs L1 placement), not absolute
values with silicon or GVSoC (``specs/siracusa-timing.md``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

__all__ = ["TimingModel", "Record", "Records", "ForkTime", "LayerTime", "TimingResult", "read_records",
           "model_cycles", "SIRACUSA_TIMING"]

# Runtime marker ids (TargetLibraries/PULPOpen/inc/deeploy_runtime.h)
FORK_ENTER, TASK_BEGIN, TASK_END, FORK_LEAVE = 0x10, 0x11, 0x12, 0x13
BARRIER_ENTER, BARRIER_LEAVE = 0x14, 0x15
LAYER_END = 0x0FF
LAYER_BASE = 0x100


@dataclass(frozen=True)
class TimingModel:
    """Parameters of the cycle model, with their sources (``specs/siracusa-timing.md``).

    base_cpi: cycles per instruction. CV32E40P user manual: ALU ops, loads/stores hitting L1 and
        mul take 1 cycle; taken branches 3, jumps 2, mulh 5, div 3-35 and load-use stalls are
        not modelled (the plugin does not classify instructions), so 1.0 is optimistic.
    l1_latency: extra cycles per L1 (TCDM) access: 0, the single-cycle access is in base_cpi
        (GVSoC cluster config; CV32E40P manual). Bank conflicts are not modelled.
    l2_latency: extra cycles per load or store to L2 from a cluster core: about 14 (cluster
        interconnect 2 + SoC router 12, GVSoC cluster/SoC interconnect); no bandwidth cap.
    l3_latency: extra cycles per direct L3 access: GUESS 100. On silicon the cores cannot address
        L3 (HyperRAM behind the uDMA); a word access would cost a HyperBus command/address phase
        (6 bytes), the device latency and 4 data bytes at 1 byte per peripheral cycle (GVSoC uDMA
        hyper model), plus the L2 hop and the uDMA programming: of the order of 100 cycles.
    other_latency: extra cycles per access outside every region (boot ROM, devices): 0.
    fork_cycles: dispatching a fork to the cores: GUESS 50 (not found; "tens of cycles").
    barrier_cycles: one hardware barrier: 11 cycles, independent of the core count (Glaser et
        al., DATE 2019); also charged for the join at the end of every fork.
    """

    base_cpi: float = 1.0
    l1_latency: float = 0.0
    l2_latency: float = 14.0
    l3_latency: float = 100.0
    other_latency: float = 0.0
    fork_cycles: float = 50.0
    barrier_cycles: float = 11.0

    def latency(self, region: str) -> float:
        return {"L1": self.l1_latency, "L2": self.l2_latency, "L3": self.l3_latency}.get(region, self.other_latency)


SIRACUSA_TIMING = TimingModel()


@dataclass(frozen=True)
class Record:
    """One plugin record: a hart's cumulative counters when it reached a marker
    (``marker`` None: the final record written at exit)."""

    hart: int
    seq: int
    marker: int | None
    counters: tuple[int, ...]   # insns, then (loads, stores) per region, then other loads/stores

    @property
    def insns(self) -> int:
        return self.counters[0]


@dataclass(frozen=True)
class Records:
    regions: tuple[str, ...]               # region names in column order, "other" last
    by_hart: dict[int, list[Record]]

    def final(self, hart: int) -> Record:
        return self.by_hart[hart][-1]


def read_records(source: str | Path) -> Records:
    """Parse a plugin record file (a path, or the text itself if it contains a newline)."""
    text = source if isinstance(source, str) and "\n" in source else Path(source).read_text()
    regions: tuple[str, ...] | None = None
    by_hart: dict[int, list[Record]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("#"):
            words = line[1:].split()
            if words and words[0] == "columns":
                cols = words[1:]
                if cols[:4] != ["hart", "seq", "marker", "insns"] or len(cols) % 2 or \
                        any(not c.endswith("_ld") for c in cols[4::2]) or any(not c.endswith("_st") for c in cols[5::2]):
                    raise ValueError(f"line {lineno}: unexpected columns {cols}")
                regions = tuple(c[:-3] for c in cols[4::2])
            continue
        if regions is None:
            raise ValueError(f"line {lineno}: record before the '# columns' header")
        f = line.split()
        if len(f) != 4 + 2 * len(regions):
            raise ValueError(f"line {lineno}: expected {4 + 2 * len(regions)} fields, got {len(f)}")
        marker = None if f[2] == "end" else int(f[2], 0)
        rec = Record(int(f[0]), int(f[1]), marker, tuple(int(x) for x in f[3:]))
        by_hart.setdefault(rec.hart, []).append(rec)
    if regions is None:
        raise ValueError("no '# columns' header: not a deeploy timing record file")
    for hart, recs in by_hart.items():
        recs.sort(key=lambda r: r.seq)
        if [r.seq for r in recs] != list(range(len(recs))):
            raise ValueError(f"hart {hart}: record sequence numbers are not 0..{len(recs) - 1}")
    return Records(regions, dict(sorted(by_hart.items())))


@dataclass(frozen=True)
class ForkTime:
    index: int
    start: float                       # modelled time on hart 0's timeline
    cycles: float                      # fork + phases + barriers + join
    cores: int
    phases: int                        # barriers inside + 1
    core_cycles: tuple[float, ...]     # per participating core: its cost in the fork (no waits)
    core_insns: tuple[int, ...]        # per participating core: instructions in the fork


@dataclass(frozen=True)
class LayerTime:
    layer: int
    start: float
    cycles: float


@dataclass(frozen=True)
class TimingResult:
    total: float                       # whole program, reset to exit (hart 0's timeline)
    forks: tuple[ForkTime, ...]
    layers: tuple[LayerTime, ...]      # in order of occurrence (a network run twice appears twice)
    model: TimingModel = field(default=SIRACUSA_TIMING)

    @property
    def forked(self) -> float:
        return sum(f.cycles for f in self.forks)

    @property
    def serial(self) -> float:
        return self.total - self.forked

    def per_layer(self) -> dict[int, float]:
        """Cycles per layer index, summed over its occurrences."""
        out: dict[int, float] = {}
        for lt in self.layers:
            out[lt.layer] = out.get(lt.layer, 0.0) + lt.cycles
        return out

    def summary(self) -> str:
        lines = [f"modelled cycles: total {self.total:.0f} (serial {self.serial:.0f}, "
                 f"{len(self.forks)} forks {self.forked:.0f})"]
        for k, c in self.per_layer().items():
            lines.append(f"  layer {k}: {c:.0f}")
        return "\n".join(lines)


class _Cost:
    def __init__(self, model: TimingModel, regions: Sequence[str]):
        self.weights = [model.base_cpi]
        for name in regions:
            lat = model.latency(name)
            self.weights += [lat, lat]

    def __call__(self, a: tuple[int, ...], b: tuple[int, ...]) -> float:
        """Cost of going from counters a to counters b."""
        return sum(w * (y - x) for w, x, y in zip(self.weights, a, b))


def _task_spans(recs: list[Record]) -> list[tuple[int, int]]:
    """(index of TASK_BEGIN, index of the matching TASK_END) of each task a hart ran."""
    spans, begin = [], None
    for i, r in enumerate(recs):
        if r.marker == TASK_BEGIN:
            if begin is not None:
                raise ValueError(f"hart {r.hart} record {r.seq}: TASK_BEGIN inside a task")
            begin = i
        elif r.marker == TASK_END:
            if begin is None:
                raise ValueError(f"hart {r.hart} record {r.seq}: TASK_END outside a task")
            spans.append((begin, i))
            begin = None
    return spans


def _phases(recs: list[Record], span: tuple[int, int], cost: _Cost) -> list[float]:
    """Cost of each barrier-separated phase of one task."""
    b, e = span
    out, start = [], recs[b].counters
    for r in recs[b + 1:e + 1]:
        if r.marker in (BARRIER_ENTER, TASK_END):
            out.append(cost(start, r.counters))
        elif r.marker == BARRIER_LEAVE:
            start = r.counters
    return out


def model_cycles(records: Records | str | Path, model: TimingModel = SIRACUSA_TIMING) -> TimingResult:
    """Modelled cycles of a run: total, per fork and per layer."""
    recs = records if isinstance(records, Records) else read_records(records)
    if 0 not in recs.by_hart:
        raise ValueError("no records of hart 0")
    cost = _Cost(model, recs.regions)
    spans = {h: _task_spans(r) for h, r in recs.by_hart.items()}
    zero = (0,) * (1 + 2 * len(recs.regions))

    h0 = recs.by_hart[0]
    t, prev, i, k = 0.0, zero, 0, 0
    forks: list[ForkTime] = []
    events: list[tuple[float, int | None]] = []     # (time, marker) on hart 0's timeline
    while i < len(h0):
        r = h0[i]
        t += cost(prev, r.counters)
        prev = r.counters
        if r.marker == FORK_ENTER:
            if k >= len(spans[0]):
                raise ValueError(f"fork {k}: hart 0 never ran its task")
            b0, e0 = spans[0][k]
            leave = next((j for j in range(e0 + 1, len(h0)) if h0[j].marker == FORK_LEAVE), None)
            if b0 < i or leave is None:
                raise ValueError(f"fork {k}: hart 0's records are not FORK_ENTER, TASK_BEGIN ... TASK_END, FORK_LEAVE")
            cores = [h for h in recs.by_hart if len(spans[h]) > k]
            phases = {h: _phases(recs.by_hart[h], spans[h][k], cost) for h in cores}
            counts = {len(p) for p in phases.values()}
            if len(counts) != 1:
                raise ValueError(f"fork {k}: cores disagree on the number of barriers "
                                 f"({ {h: len(p) - 1 for h, p in phases.items()} })")
            n_phases = counts.pop()
            body = sum(max(phases[h][p] for h in cores) for p in range(n_phases))
            cycles = model.fork_cycles + body + model.barrier_cycles * n_phases   # barriers + join
            for j in range(b0 + 1, e0):          # layer markers inside the task (approximate)
                if h0[j].marker is not None and (h0[j].marker >= LAYER_BASE or h0[j].marker == LAYER_END):
                    events.append((t + model.fork_cycles + cost(h0[b0].counters, h0[j].counters), h0[j].marker))
            forks.append(ForkTime(
                index=k, start=t, cycles=cycles, cores=len(cores), phases=n_phases,
                core_cycles=tuple(sum(phases[h]) for h in cores),
                core_insns=tuple(recs.by_hart[h][spans[h][k][1]].insns - recs.by_hart[h][spans[h][k][0]].insns
                                 for h in cores)))
            t += cycles
            # hart 0 counted nothing between TASK_END and FORK_LEAVE (a wait region)
            prev = h0[leave].counters
            i, k = leave + 1, k + 1
            continue
        if r.marker is None or r.marker >= LAYER_BASE or r.marker == LAYER_END:
            events.append((t, r.marker))
        i += 1
    if k != len(spans[0]):
        raise ValueError(f"hart 0 ran {len(spans[0])} tasks but entered {k} forks")

    layers = []
    for j, (start, marker) in enumerate(events):
        if marker is not None and marker >= LAYER_BASE:
            end = events[j + 1][0] if j + 1 < len(events) else t
            layers.append(LayerTime(marker - LAYER_BASE, start, end - start))
    return TimingResult(total=t, forks=tuple(forks), layers=tuple(layers), model=model)


if __name__ == "__main__":
    import sys
    for path in sys.argv[1:]:
        print(path)
        print(model_cycles(path).summary())
