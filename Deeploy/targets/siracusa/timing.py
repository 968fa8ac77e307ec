"""Cycle model of the Siracusa virtual platform: modelled cycles from the exact per-hart counts
of the timing plugin (``toolchain/qemu_plugin``).

The plugin's records (``records.py``) carry cumulative per-hart counts between marker
instructions, plus the DMA transfers and waits. The model:

* the cost of a stretch of one hart's execution is
  ``base_cpi * instructions + sum over classes of class cycles * count + sum over regions of
  latency(region) * (loads + stores)``; the classes (taken branches, jumps, mulh, div/rem,
  load-use stalls, misaligned accesses, FPU operations, fdiv/fsqrt, branch targets, jump
  register hazards; costs measured on the core's RTL, ``benchmarks/fidelity.py``) are counted exactly by the
  plugin (record files of version 3; older files have none and cost as before);
* serial code is hart 0's cost;
* a fork (hart 0: FORK_ENTER ... FORK_LEAVE; every core: TASK_BEGIN fn TASK_END) costs
  ``fork_cycles + sum over barrier phases of (max over participating cores of their time in
  the phase) + barrier_cycles per barrier inside + barrier_cycles for the final join``: the
  cores run in lock-step between barriers, so each phase lasts as long as its slowest core
  (with no barrier inside and no DMA, this is the max over cores of their cost in the fork);
  with ``contention`` a phase lasts at least as long as its busiest shared resource needs to
  serve the cores' accesses of the phase (``contention.py``: the 16 TCDM banks, the cluster's
  path to L2, the 4 shared FPUs and the div/sqrt unit);
* a data-mover core (Snitch; hart 0: DM_CALL_ENTER ... DM_CALL_LEAVE, the data mover: DM_RUN_BEGIN
  ... DM_RUN_END) runs the call from hart 0's time plus ``barrier_cycles`` as hart 0 runs serial
  code, returning after another ``barrier_cycles``; it forks without taking part (FORK_ENTER,
  FORK_RUN, its own work, FORK_JOIN, FORK_LEAVE): its own work runs from the fork's start beside
  the cores' phases and the fork ends when both are done;
* DMA: every engine is one FIFO queue. A core reaching a copy at time ``t`` spends
  ``issue = commands * words * issue_word_cycles`` programming it (words: 3 per 1-D command,
  5 per 2-D command); the transfer starts (first beat) at
  ``start = max(t + issue, engine free) + setup`` and ends at
  ``end = start + rows * (ceil(row_bytes / bandwidth) + row_cycles)`` (``row_bytes = bytes /
  rows``), which is when the engine becomes free. A core reaching a wait at ``t`` continues at
  ``max(t, end)`` of the transfer waited for (earlier transfers of the engine end before it).
  Cores of a phase are simulated together in time order (ties: lower hart first), so transfers
  of several cores queue in the order the model issues them, and compute overlaps DMA exactly
  as far as the issue and wait points allow;
* layer ``k`` (marker ``LAYER_BASE + k`` on hart 0) lasts from its marker to the next layer marker,
  ``DEEPLOY_MARK_LAYER_END`` or the end of the program. Layer markers belong in serial
  code; one inside a forked function is placed at hart 0's time when it reaches it.

All results are *modelled* cycles of CV32E40P cores with the PULP DSP extension, per-instruction
costs measured on the core's RTL (``benchmarks/fidelity.py``), no instruction cache misses: compare ratios (1 vs 8 cores, tilings, L2 vs L1 placement, single vs double
buffering), not absolute values with silicon or GVSoC (``specs/siracusa-timing.md``).
"""

from __future__ import annotations

import heapq
import math
from operator import mul, sub
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

# marker ids of the runtime, the DMA windows, the tile phases and the layers
from Deeploy.runtime.abi import (BARRIER_ENTER, BARRIER_LEAVE, DM_CALL_ENTER, DM_CALL_LEAVE, DM_RUN_BEGIN,
                                          DM_RUN_END, DMA_ISSUE_END, DMA_WAIT_END, FORK_ENTER, FORK_JOIN, FORK_LEAVE,
                                          FORK_RUN, LAYER_BASE, LAYER_END, TASK_BEGIN, TASK_END, TILE_MARKS)
from Deeploy.runtime.abi import NPU_JOB_END, NPU_WAIT
from Deeploy.targets.siracusa.contention import phase_floor
from Deeploy.targets.siracusa.npu_timeline import NpuJob, NpuTimeline, npu_job_cycles
from Deeploy.targets.siracusa.records import DmaRecord, Record, Records, WaitRecord, read_records

__all__ = ["TimingModel", "Record", "DmaRecord", "WaitRecord", "Records", "ForkTime", "LayerTime", "DmaTransfer",
           "DmaWait", "TimingResult", "read_records", "model_cycles", "SIRACUSA_TIMING", "TIMING_V1", "TIMING_MODELS",
           "DMA_CLUSTER", "DMA_L3", "DMA_ENGINE_NAMES"]


# DMA engines (deeploy_dma_engine_t)
DMA_CLUSTER, DMA_L3 = 0, 1
DMA_ENGINE_NAMES = ("cluster", "L3")


@dataclass(frozen=True)
class TimingModel:
    """Parameters of the cycle model, with their sources (``specs/siracusa-timing.md``).

    base_cpi: cycles per instruction: 1 (CV32E40P user manual: ALU ops, mul, loads/stores hitting
        L1 and not-taken branches take 1 cycle). The classes below add to it.
    taken_cycles: extra cycles of a taken conditional branch: 2 (manual: taken 3, not taken 1).
    jump_cycles: extra cycles of jal/jalr: 1 (manual: jump 2).
    mulh_cycles: extra cycles of mulh/mulhsu/mulhu: 4 (manual: 5).
    div_cycles: extra cycles of div/divu/rem/remu: 27. The core takes 3 + (leading zero bits of
        the divisor) cycles (manual; RTL: div_mix.c, rmsnorm_i8.c); the plugin cannot read
        registers (QEMU 7.2 plugin API), so this is the RTL measurement for a 7-bit divisor (a
        count or a norm, as kernels divide by): 1 cycle less per extra divisor bit, more per bit fewer.
    load_use_cycles: extra cycles when an instruction reads the result of the load just before
        it: 1 (manual: load-use stall). The plugin sees pairs within a translated block (a block
        that ends with a load hides a stall: rare, blocks end at branches and jumps).
    misaligned_cycles: extra cycles of a misaligned load/store: 1 (manual: 2 cycles, split into
        two aligned accesses).
    fpu_cycles: extra cycles of an RV32F arithmetic/fused multiply-add/conversion/compare/move
        instruction: 0 (latency 1, one operation per cycle: GVSoC ``pulp_iss_wrapper.cpp``,
        ``resource.cpp``; CV32E40P with FPU_ADDMUL_LAT = FPU_OTHERS_LAT = 0). flw/fsw cost as
        loads/stores (load-use included).
    fdivsqrt_cycles: extra cycles of fdiv.s/fsqrt.s when the next instruction waits for the
        result or the unit (as in every kernel): 14 for fdiv.s (RTL measurement with FPU_*_LAT 0,
        fpu_fdiv.c; the iterative unit finishes early on exact quotients such as x / 1.0).
        The cluster has one such unit for all cores (``fpus``).
    fpus: FPUs shared by the cluster cores: 4 for 8 cores, core i uses FPU ``i % fpus``
        (``fpu_of_core``), one operation per cycle each, a busy FPU stalls the core; one div/sqrt
        unit for the whole cluster, busy ``1 + fdivsqrt_cycles`` per fdiv/fsqrt (GVSoC
        ``pulp/cpu/iss/pulp_iss_wrapper.cpp``, commit "share fpu at cluster level"; pulp_cluster
        RTL tags v1.3-v2.0). A phase lasts at least as many cycles as its busiest FPU has
        operations (fdiv/fsqrt included) and as the divider is busy (``contention.py``). 0: a
        private FPU with its own div/sqrt unit per core, no such bound (the pulp_cluster RTL's
        current default; which variant Siracusa's silicon has is not published).
    simd_cycles: extra cycles of a CORE-V PULP instruction (deeploy_xpulp.h; run on QEMU by
        trap-and-emulate and counted once each by the plugin) of packed SIMD (dot products, lane
        ALU): 0, i.e. 1 cycle (CV32E40P user manual; the core's RTL, specs/pulp-core.md: a
        hardware loop of cv.lw + cv.sdotsp.b takes 4 cycles per trip = 2 instructions + 1
        load-use stall + 0 for the loop-back, which the plugin therefore does not count).
        RTL measurement: benchmarks/fidelity/programs/dsp/ (dot products .b/.h, signed and u8 x
        i8, dependent on one accumulator or not, SIMD add/max; bodies of 2 instructions and more)
        within 0.1%.
    postinc_cycles: extra cycles of a post-increment load/store: 0 (same sources); it costs as a
        load/store (level latency, load-use, misaligned). RTL: postinc_load_use.c, load_rr_i32.c
        (a use right after cv.lw stalls 1 cycle as after lw; a load of the base just advanced
        does not stall).
    hwloop_cycles: extra cycles of a hardware-loop setup instruction: 0 (CV32E40P user manual;
        RTL: nested_hwloop_i8.c, hwloop_short.c).
    mac_cycles: extra cycles of cv.mac/msu and the 16-bit multiply(-accumulate)s: 0 (manual:
        1 cycle, as mul; RTL: mac_chain.c, a chain on one accumulator, requant_mac_clip.c).
    target32_cycles: extra cycles of a taken branch or a jump whose target is a 32-bit
        instruction at an address of 2 mod 4 (it spans two fetch words): 1 (RTL measurement,
        benchmarks/fidelity/programs/branch_misaligned.c against branch_aligned32.c).
    jrdep_cycles: extra cycles of a jalr (c.jr, c.jalr) right after the instruction writing its
        address register: 1 (RTL measurement, the core's jump register hazard, jalr_hazard.c);
        the plugin counts the far call ``auipc ra; jalr ra`` twice (2 stall cycles, call_ret.c).
    fsqrt_cycles: extra cycles of fsqrt.s (counted apart in the ``fsqrt`` column as well as in
        ``fdivsqrt``; the model charges it this instead of fdivsqrt_cycles): 18 (RTL measurement,
        fpu_fsqrt.c: sqrt(2); also early on exact roots such as sqrt(4), 5).
    contention: model shared resources within a fork's phases (``contention.py``); False gives
        the model of record files without contention (with the class costs at 0: ``TIMING_V1``).
    l1_banks: TCDM banks, word-interleaved: 16 (spec "Memories": GVSoC cluster config). Each bank
        serves one access per cycle, so a phase lasts at least as many cycles as the most
        accessed bank receives accesses from all cores together.
    l2_path_cycles: cycles one core access occupies the cluster's shared path to L2: GUESS 1 (one
        beat of the cluster's 64-bit AXI port for a word access; GVSoC's routers charge size /
        bandwidth per request). A phase lasts at least this times all cores' L2 accesses.
    l1_latency: extra cycles per L1 (TCDM) access: 0, the single-cycle access is in base_cpi
        (GVSoC cluster config; CV32E40P manual). Bank conflicts: l1_banks.
    l2_latency: extra cycles per load or store to L2 from a cluster core: about 14 (cluster
        interconnect 2 + SoC router 12, GVSoC cluster/SoC interconnect); the shared path's
        bandwidth: l2_path_cycles.
    l3_latency: extra cycles per direct L3 access: GUESS 100. On silicon the cores cannot address
        L3 (HyperRAM behind the uDMA); a word access would cost a HyperBus command/address phase
        (6 bytes), the device latency and 4 data bytes at 1 byte per peripheral cycle (GVSoC uDMA
        hyper model), plus the L2 hop and the uDMA programming: of the order of 100 cycles.
    other_latency: extra cycles per access outside every region (boot ROM, devices): 0.
    fork_cycles: dispatching a fork to the cores: GUESS 50 (not found; "tens of cycles").
    barrier_cycles: one hardware barrier: 11 cycles, independent of the core count (Glaser et
        al., DATE 2019); also charged for the join at the end of every fork.

    Cluster DMA (mchan, L2 <-> L1; GVSoC ``pulp/mchan/mchan_v7_impl.cpp``):

    dma_setup_cycles: from the command to the first data beat: about 14 cycles (*derived*: the
        first burst's round trip through the cluster interconnect and SoC router, as
        l2_latency). Charged for every transfer, also one queued behind another: conservative,
        the mchan pipelines the bursts of back-to-back commands.
    dma_bandwidth: 8 bytes per cycle in each direction (*derived*: 2 TCDM ports of 4 bytes per
        direction). The model keeps one queue per engine; the mchan has separate read and write
        queues, so on silicon an L2->L1 and an L1->L2 transfer can overlap (conservative).
    dma_row_cycles: extra cycles per row of a 2-D/3-D transfer: 0. A row is at least one burst,
        rows' bursts pipeline back to back (up to 8 outstanding), and each row is rounded up to
        whole beats (``ceil(row_bytes / bandwidth)``: a row cannot share a beat with the next).
    dma_issue_word_cycles: core cycles per command word the issuing core stores into the DMA's
        command queue: 1 (single-cycle store to a cluster peripheral).
    dma_words_1d: command words of a 1-D transfer: 3 (GVSoC mchan model; the same for the uDMA).
    dma_words_2d: command words of a 2-D transfer: 5 (idem); a 3-D copy is one 2-D command per plane.

    L3 DMA (uDMA HyperBus channel, L3 <-> L2; GVSoC ``pulp/udma/hyper/udma_hyper_v3.cpp``,
    HyperRAM datasheets). The peripheral clock is taken equal to the cluster clock (GUESS):

    l3_dma_setup_cycles: from the programmed channel to the first HyperBus transaction: GUESS 14
        (the uDMA's first L2 access over the SoC interconnect, as l2_latency).
    l3_dma_bandwidth: 1 byte per cycle (GVSoC hyper model: one byte per peripheral cycle; a
        HyperRAM at 200 MHz DDR reaches 400 MB/s, i.e. 2 bytes per bus clock, on silicon).
    l3_dma_command_cycles: per HyperBus transaction: 8 = chip select on (1) + the 6-byte
        command/address phase at 1 byte per cycle (6) + chip select off (1) (GVSoC hyper model).
    l3_dma_latency_cycles: per HyperBus transaction: 12 = a HyperRAM's initial access latency of
        6 clocks, doubled by the default fixed-latency mode (GVSoC: ``latency <<
        en_add_latency``; *derived*, the latency is configurable).
        Every row of a 2-D/3-D L3 transfer is its own transaction (GVSoC splits 2-D transfers),
        so the L3 engine's per-row overhead is ``l3_dma_command_cycles + l3_dma_latency_cycles``.
    l3_dma_issue_word_cycles: core cycles per register word programmed into the uDMA: GUESS 14
        (each store crosses from the cluster to the SoC peripherals, as l2_latency); 3 words for
        a 1-D transfer, 5 for a 2-D one, as for the cluster DMA.
    npu_peak_macs: the NPU's peak multiply-accumulates per cycle, for the profiles' utilisation
        (``npu_timeline.npu_summary``): Neureka's 1152 (``NPU_PEAK_MACS``); an NPU platform sets its own.
    """

    base_cpi: float = 1.0
    taken_cycles: float = 2.0
    jump_cycles: float = 1.0
    mulh_cycles: float = 4.0
    div_cycles: float = 27.0
    load_use_cycles: float = 1.0
    misaligned_cycles: float = 1.0
    fpu_cycles: float = 0.0
    fdivsqrt_cycles: float = 14.0
    fpus: int = 4
    simd_cycles: float = 0.0
    postinc_cycles: float = 0.0
    hwloop_cycles: float = 0.0
    mac_cycles: float = 0.0
    target32_cycles: float = 1.0
    jrdep_cycles: float = 1.0
    fsqrt_cycles: float = 18.0
    contention: bool = True
    l1_banks: int = 16
    l2_path_cycles: float = 1.0
    l1_latency: float = 0.0
    l2_latency: float = 14.0
    l3_latency: float = 100.0
    other_latency: float = 0.0
    fork_cycles: float = 50.0
    barrier_cycles: float = 11.0
    dma_setup_cycles: float = 14.0
    dma_bandwidth: float = 8.0
    dma_row_cycles: float = 0.0
    dma_issue_word_cycles: float = 1.0
    dma_words_1d: int = 3
    dma_words_2d: int = 5
    l3_dma_setup_cycles: float = 14.0
    l3_dma_bandwidth: float = 1.0
    l3_dma_command_cycles: float = 8.0
    l3_dma_latency_cycles: float = 12.0
    l3_dma_issue_word_cycles: float = 14.0
    npu_peak_macs: float = 1152.0

    def class_cycles(self, column: str) -> float:
        """Extra cycles per count of a record column after the regions' (0: a bank counter)."""
        return {"taken": self.taken_cycles, "jump": self.jump_cycles, "mulh": self.mulh_cycles,
                "div": self.div_cycles, "loaduse": self.load_use_cycles, "misaligned": self.misaligned_cycles,
                "fpu": self.fpu_cycles, "fdivsqrt": self.fdivsqrt_cycles, "simd": self.simd_cycles,
                "postinc": self.postinc_cycles, "hwloop": self.hwloop_cycles, "mac": self.mac_cycles,
                "target32": self.target32_cycles, "jrdep": self.jrdep_cycles,
                "fsqrt": self.fsqrt_cycles - self.fdivsqrt_cycles}.get(column, 0.0)

    def fpu_of_core(self, core: int) -> int:
        """The shared FPU a core's floating-point operations go to (``fpus`` > 0)."""
        return core % self.fpus

    def latency(self, region: str) -> float:
        return {"L1": self.l1_latency, "L2": self.l2_latency, "L3": self.l3_latency}.get(region, self.other_latency)

    def dma_engine(self, engine: int) -> tuple[float, float, float, float]:
        """(setup cycles, bytes per cycle, extra cycles per row, issue cycles per command word)."""
        if engine == DMA_CLUSTER:
            return self.dma_setup_cycles, self.dma_bandwidth, self.dma_row_cycles, self.dma_issue_word_cycles
        if engine == DMA_L3:
            return (self.l3_dma_setup_cycles, self.l3_dma_bandwidth,
                    self.l3_dma_command_cycles + self.l3_dma_latency_cycles, self.l3_dma_issue_word_cycles)
        raise ValueError(f"unknown DMA engine {engine} (engines: {', '.join(DMA_ENGINE_NAMES)})")

    def dma_issue_cycles(self, engine: int, commands: int, rows: int) -> float:
        """Cycles the issuing core spends programming a transfer: ``dma_words_1d`` words per 1-D
        command, ``dma_words_2d`` per 2-D."""
        words = self.dma_words_1d if rows <= commands else self.dma_words_2d
        return commands * words * self.dma_engine(engine)[3]

    def dma_cycles(self, engine: int, bytes_: int, rows: int) -> float:
        """Cycles from the first beat to the end of a transfer of ``rows`` equal rows."""
        _setup, bandwidth, row_cycles, _word = self.dma_engine(engine)
        rows = max(rows, 1)
        row_bytes = -(-bytes_ // rows)
        return rows * (math.ceil(row_bytes / bandwidth) + row_cycles)


SIRACUSA_TIMING = TimingModel()
# the model before instruction classes and contention: 1 cycle per instruction + memory latency
TIMING_V1 = TimingModel(taken_cycles=0, jump_cycles=0, mulh_cycles=0, div_cycles=0, load_use_cycles=0,
                        misaligned_cycles=0, fpu_cycles=0, fdivsqrt_cycles=0, target32_cycles=0, jrdep_cycles=0, fsqrt_cycles=0, contention=False)
TIMING_MODELS = {"v1": TIMING_V1, "v2": SIRACUSA_TIMING}


@dataclass(frozen=True)
class ForkTime:
    index: int
    start: float                       # modelled time on hart 0's timeline
    cycles: float                      # fork + phases + barriers + join
    cores: int
    phases: int                        # barriers inside + 1
    core_cycles: tuple[float, ...]     # per participating core: its cost in the fork (no waits)
    core_insns: tuple[int, ...]        # per participating core: instructions in the fork
    core_dma_cycles: tuple[float, ...] = ()   # per participating core: DMA issue + wait stalls
    contention: float = 0.0            # cycles added by shared-resource contention (all phases)


@dataclass(frozen=True)
class LayerTime:
    layer: int
    start: float
    cycles: float


@dataclass(frozen=True)
class DmaTransfer:
    """A modelled DMA transfer. Times are on the common modelled timeline (hart 0's, which the
    cores of a fork share)."""

    engine: int                        # DMA_CLUSTER or DMA_L3
    hart: int                          # issuing core
    index: int                         # among that core's transfers on the engine
    issue: float                       # the core reached the copy call
    start: float                       # first beat: max(issue + issue cycles, engine free) + setup
    end: float                         # last beat; the engine is free again
    bytes: int
    rows: int
    commands: int
    src: str                           # level read (most bytes), e.g. "L2"
    dst: str                           # level written
    issue_cycles: float = 0.0          # the issuing core spent programming it (from ``issue``)
    setup: float = 0.0                 # the engine's setup before the first beat (ends at ``start``)

    @property
    def engine_name(self) -> str:
        return DMA_ENGINE_NAMES[self.engine] if 0 <= self.engine < len(DMA_ENGINE_NAMES) else str(self.engine)

    @property
    def cycles(self) -> float:
        """From the call to the last beat: what the transfer took as seen by the program."""
        return self.end - self.issue

    @property
    def duration(self) -> float:
        """From the first to the last beat."""
        return self.end - self.start

    @property
    def busy(self) -> float:
        """Cycles the engine spent on it: setup and data."""
        return self.setup + self.end - self.start


@dataclass(frozen=True)
class DmaWait:
    engine: int
    hart: int
    transfer: int | None               # index of the transfer waited for (None: nothing left)
    time: float                        # the core reached the wait
    stall: float                       # cycles it waited: max(0, end of the transfer - time)


@dataclass(frozen=True)
class TimingResult:
    total: float                       # whole program, reset to exit (hart 0's timeline)
    forks: tuple[ForkTime, ...]
    layers: tuple[LayerTime, ...]      # in order of occurrence (a network run twice appears twice)
    model: TimingModel = field(default=SIRACUSA_TIMING)
    dma: tuple[DmaTransfer, ...] = ()  # in issue order (modelled)
    waits: tuple[DmaWait, ...] = ()    # in modelled order
    marks: tuple[tuple[float, int], ...] = ()   # (time, marker) of the tile phase markers
    npu: tuple[NpuJob, ...] = ()       # NPU jobs in trigger order (npu_timeline.py)
    controls: tuple[int, ...] = (0,)   # harts running on the common timeline: hart 0, the data mover

    @property
    def forked(self) -> float:
        return sum(f.cycles for f in self.forks)

    @property
    def serial(self) -> float:
        return self.total - self.forked

    @property
    def dma_stall(self) -> float:
        """Cycles cores spent waiting for DMA transfers (summed over cores)."""
        return sum(w.stall for w in self.waits)

    def per_layer(self) -> dict[int, float]:
        """Cycles per layer index, summed over its occurrences."""
        out: dict[int, float] = {}
        for lt in self.layers:
            out[lt.layer] = out.get(lt.layer, 0.0) + lt.cycles
        return out

    def dma_between(self, start: float, end: float) -> tuple[tuple[DmaTransfer, ...], tuple[DmaWait, ...]]:
        """Transfers issued and waits begun in [start, end) of the modelled timeline."""
        return (tuple(d for d in self.dma if start <= d.issue < end),
                tuple(w for w in self.waits if start <= w.time < end))

    def summary(self) -> str:
        lines = [f"modelled cycles: total {self.total:.0f} (serial {self.serial:.0f}, "
                 f"{len(self.forks)} forks {self.forked:.0f})"]
        for k, c in self.per_layer().items():
            lines.append(f"  layer {k}: {c:.0f}")
        for e, name in enumerate(DMA_ENGINE_NAMES):
            ts = [d for d in self.dma if d.engine == e]
            if ts:
                busy = sum(d.busy for d in ts)
                stall = sum(w.stall for w in self.waits if w.engine == e)
                lines.append(f"  DMA {name}: {len(ts)} transfers, {sum(d.bytes for d in ts)} bytes, "
                             f"engine busy {busy:.0f} cycles, cores stalled {stall:.0f} cycles waiting")
        return "\n".join(lines)


class _Cost:
    def __init__(self, model: TimingModel, regions: Sequence[str], extra: Sequence[str] = ()):
        self.weights = [model.base_cpi]
        for name in regions:
            lat = model.latency(name)
            self.weights += [lat, lat]
        self.weights += [model.class_cycles(name) for name in extra]

    def __call__(self, a: tuple[int, ...], b: tuple[int, ...]) -> float:
        """Cost of going from counters a to counters b."""
        return sum(map(mul, self.weights, map(sub, b, a)))


class _Dma:
    """The DMA engines' queues on the modelled timeline."""

    def __init__(self, model: TimingModel, regions: Sequence[str]):
        self.model = model
        self.regions = tuple(regions)
        self.free: dict[int, float] = {}
        self.transfers: dict[tuple[int, int, int], DmaTransfer] = {}
        self.order: list[DmaTransfer] = []
        self.waits: list[DmaWait] = []
        self.retired: dict[tuple[int, int], int] = {}

    def _level(self, per_region: tuple[int, ...]) -> str:
        best = max(range(len(per_region)), key=lambda r: (per_region[r], -r))
        return self.regions[best]

    def issue(self, d: DmaRecord, t: float) -> float:
        """The core reaches the copy at t; returns its time when it has programmed it."""
        m = self.model
        setup = m.dma_engine(d.engine)[0]
        issue_cycles = m.dma_issue_cycles(d.engine, d.commands, d.rows)
        programmed = t + issue_cycles
        start = max(programmed, self.free.get(d.engine, 0.0)) + setup
        end = start + m.dma_cycles(d.engine, d.bytes, d.rows)
        self.free[d.engine] = end
        tr = DmaTransfer(d.engine, d.hart, d.index, t, start, end, d.bytes, d.rows, d.commands,
                         self._level(d.read), self._level(d.written), issue_cycles, setup)
        self.transfers[(d.hart, d.engine, d.index)] = tr
        self.order.append(tr)
        return programmed

    def wait(self, w: WaitRecord, t: float) -> float:
        """The core reaches the wait at t; returns its time when the wait returns."""
        key = (w.hart, w.engine)
        done = self.retired.get(key, 0)
        if w.transfer is None:
            self.waits.append(DmaWait(w.engine, w.hart, None, t, 0.0))
            return t
        if w.transfer - w.retired + 1 != done:
            raise ValueError(f"hart {w.hart} record {w.seq}: the wait retires transfers "
                             f"{w.transfer - w.retired + 1}..{w.transfer} of engine {w.engine}, expected from {done}")
        tr = self.transfers.get((w.hart, w.engine, w.transfer))
        if tr is None:
            raise ValueError(f"hart {w.hart} record {w.seq}: waits for transfer {w.transfer} of engine {w.engine}, "
                             f"which it has not issued")
        self.retired[key] = w.transfer + 1
        resume = max(t, tr.end)
        self.waits.append(DmaWait(w.engine, w.hart, w.transfer, t, resume - t))
        return resume


# One event of a core's stretch of execution: (cost since the previous event, kind, payload);
# kinds: "issue" (DmaRecord), "wait" (WaitRecord), "mark" (layer marker id), "end" (None).
_Event = tuple[float, str, object]


def _events(recs: Records, hart: int, lo: int, hi: int, start: tuple[int, ...], cost: _Cost,
            layers: bool, npu_jobs: dict[tuple[int, int], tuple[int, int]] | None = None) -> tuple[list[_Event], float]:
    """Events of hart's records lo..hi (inclusive) from counters ``start``, closed by an "end" at
    record hi; and the stretch's total cost."""
    events: list[_Event] = []
    rs = recs.by_hart[hart]
    prev, total, pending = start, 0.0, 0.0
    for r in rs[lo:hi + 1]:
        c = cost(prev, r.counters)
        prev = r.counters
        total += c
        pending += c
        ev = None
        if r.marker == DMA_ISSUE_END and (hart, r.seq) in recs.dma:
            ev = ("issue", recs.dma[(hart, r.seq)])
        elif r.marker == DMA_WAIT_END and (hart, r.seq) in recs.waits:
            ev = ("wait", recs.waits[(hart, r.seq)])
        elif r.marker == NPU_JOB_END and npu_jobs and (hart, r.seq) in npu_jobs:
            ev = ("npu", r.seq)
        elif r.marker == NPU_WAIT:
            ev = ("npu_wait", None)
        elif layers and r.marker is not None and (r.marker >= LAYER_BASE or r.marker == LAYER_END):
            ev = ("mark", r.marker)
        if ev is not None:
            events.append((pending, *ev))
            pending = 0.0
    events.append((pending, "end", None))
    return events, total


def _simulate(start: float, streams: dict[int, list[_Event]], dma: _Dma,
              marks: list[tuple[float, int | None]], npu: NpuTimeline | None = None) -> dict[int, float]:
    """Run the cores' event streams from ``start`` together, in time order (ties: lower hart);
    returns each core's end time. Layer marks (hart 0's) are appended to ``marks``."""
    ends: dict[int, float] = {}
    heap = [(start + ev[0][0], h, 0) for h, ev in streams.items()]
    heapq.heapify(heap)
    while heap:
        t, h, i = heapq.heappop(heap)
        _delta, kind, payload = streams[h][i]
        if kind == "end":
            ends[h] = t
            continue
        if kind == "issue":
            t = dma.issue(payload, t)          # type: ignore[arg-type]
        elif kind == "wait":
            t = dma.wait(payload, t)           # type: ignore[arg-type]
        elif kind == "npu":
            t = npu.trigger(h, payload, t)     # type: ignore[union-attr,arg-type]
        elif kind == "npu_wait":
            t = npu.wait(h, t)                 # type: ignore[union-attr]
        elif kind == "mark":
            marks.append((t, payload))         # type: ignore[arg-type]
        heapq.heappush(heap, (t + streams[h][i + 1][0], h, i + 1))
    return ends


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


def _phase_bounds(recs: list[Record], span: tuple[int, int]) -> list[tuple[int, int]]:
    """(first record index, closing record index) of each barrier-separated phase of one task:
    the phase's cost runs from the counters of the record before ``first`` to the closing one
    (BARRIER_ENTER or TASK_END)."""
    b, e = span
    out, first = [], b + 1
    for j in range(b + 1, e + 1):
        m = recs[j].marker
        if m in (BARRIER_ENTER, TASK_END):
            out.append((first, j))
        elif m == BARRIER_LEAVE:
            first = j + 1
    return out


def _next(recs: list[Record], i: int, marker: int) -> int | None:
    """Index of the first record after i with ``marker``."""
    return next((j for j in range(i + 1, len(recs)) if recs[j].marker == marker), None)


def model_cycles(records: Records | str | Path, model: TimingModel = SIRACUSA_TIMING) -> TimingResult:
    """Modelled cycles of a run: total, per fork, per layer, and every DMA transfer and wait."""
    recs = records if isinstance(records, Records) else read_records(records)
    if 0 not in recs.by_hart:
        raise ValueError("no records of hart 0")
    cost = _Cost(model, recs.regions, recs.extra)
    dma = _Dma(model, recs.regions)
    npu = NpuTimeline(npu_job_cycles(recs))
    spans = {h: _task_spans(r) for h, r in recs.by_hart.items()}
    # the data mover's runs of hart 0's calls (DM_RUN_BEGIN .. DM_RUN_END), in order
    calls = [(h, b, e) for h, r in recs.by_hart.items() for b, e in
             ((b, _next(r, b, DM_RUN_END)) for b, x in enumerate(r) if x.marker == DM_RUN_BEGIN)]
    zero = (0,) * (1 + 2 * len(recs.regions) + len(recs.extra))

    forks: list[ForkTime] = []
    events: list[tuple[float, int | None]] = []     # (time, marker) on the common timeline
    count = {"call": 0}

    def fork(h: int, i: int, t: float) -> tuple[float, int]:
        """Fork k entered by hart h at its record i and time t: its time and FORK_LEAVE's index.
        Hart 0 takes part in its forks; the data mover does not: its own work from FORK_RUN to
        FORK_JOIN runs meanwhile and the fork ends when both are done."""
        rs, k = recs.by_hart[h], len(forks)
        leave = _next(rs, i, FORK_LEAVE)
        cores = [c for c in recs.by_hart if len(spans[c]) > k]
        computes = h in cores and spans[h][k][0] > i
        if leave is None or (computes and spans[h][k][1] > leave) or (h == 0 and not computes):
            raise ValueError(f"fork {k}: hart {h}'s records are not FORK_ENTER, TASK_BEGIN ... TASK_END, FORK_LEAVE")
        bounds = {c: _phase_bounds(recs.by_hart[c], spans[c][k]) for c in cores}
        counts = {len(p) for p in bounds.values()}
        if len(counts) != 1:
            raise ValueError(f"fork {k}: cores disagree on the number of barriers "
                             f"({ {c: len(p) - 1 for c, p in bounds.items()} })")
        n_phases = counts.pop()
        compute = {c: 0.0 for c in cores}
        busy = {c: 0.0 for c in cores}
        phase_start = t + model.fork_cycles
        own_end = phase_start
        if not computes:
            run, join = _next(rs, i, FORK_RUN), _next(rs, i, FORK_JOIN)
            if run is None or join is None or not i < run < join < leave:
                raise ValueError(f"fork {k}: hart {h}'s records are not FORK_ENTER, FORK_RUN, FORK_JOIN, FORK_LEAVE")
            stream, _c = _events(recs, h, run + 1, join, rs[run].counters, cost, layers=False)
            own_end = _simulate(phase_start, {h: stream}, dma, events, npu)[h]
        body = contended = 0.0
        for p in range(n_phases):
            streams = {}
            floor = phase_floor(model, recs, {c: bounds[c][p] for c in cores}) if model.contention else 0.0
            for c in cores:
                first, close = bounds[c][p]
                hr = recs.by_hart[c]
                streams[c], cc = _events(recs, c, first, close, hr[first - 1].counters, cost, layers=c == 0,
                                         npu_jobs=npu.cycles)
                compute[c] += cc
            ends = _simulate(phase_start, streams, dma, events, npu)
            for c in cores:
                busy[c] += ends[c] - phase_start
            duration = max(ends.values()) - phase_start
            contended += max(0.0, floor - duration)
            duration = max(duration, floor)
            body += duration
            phase_start += duration + model.barrier_cycles
        cycles = max(model.fork_cycles + body + model.barrier_cycles * n_phases, own_end - t)   # barriers + join
        forks.append(ForkTime(
            index=k, start=t, cycles=cycles, cores=len(cores), phases=n_phases,
            core_cycles=tuple(compute[c] for c in cores),
            core_insns=tuple(recs.by_hart[c][spans[c][k][1]].insns - recs.by_hart[c][spans[c][k][0]].insns
                             for c in cores),
            core_dma_cycles=tuple(busy[c] - compute[c] for c in cores), contention=contended))
        return t + cycles, leave

    def walk(h: int, i: int, stop: int, t: float, prev: tuple[int, ...]) -> float:
        """Hart h's records i..stop-1 from time t and counters prev (hart 0's program, or a call the
        data mover runs): the time at record stop - 1."""
        rs = recs.by_hart[h]
        while i < stop:
            r = rs[i]
            t += cost(prev, r.counters)
            prev = r.counters
            if r.marker == FORK_ENTER:
                # the forker counted nothing between FORK_ENTER and FORK_LEAVE but its own work
                t, i = fork(h, i, t)
                prev = rs[i].counters
            elif r.marker == DM_CALL_ENTER:
                # hart 0 hands the call over and back, as the cluster's barrier; meanwhile it
                # counts only the tasks of the data mover's forks
                back = _next(rs, i, DM_CALL_LEAVE)
                if back is None or count["call"] >= len(calls):
                    raise ValueError(f"hart {h} record {r.seq}: a call to the data mover that it never ran or returned")
                dm, b, e = calls[count["call"]]
                count["call"] += 1
                if e is None:
                    raise ValueError(f"hart {dm}: DM_RUN_BEGIN (record {b}) without DM_RUN_END")
                t = walk(dm, b + 1, e + 1, t + model.barrier_cycles, recs.by_hart[dm][b].counters)
                t += model.barrier_cycles
                i, prev = back, rs[back].counters
            elif r.marker == DMA_ISSUE_END and (h, r.seq) in recs.dma:
                t = dma.issue(recs.dma[(h, r.seq)], t)
            elif r.marker == DMA_WAIT_END and (h, r.seq) in recs.waits:
                t = dma.wait(recs.waits[(h, r.seq)], t)
            elif r.marker == NPU_JOB_END and (h, r.seq) in npu.cycles:
                t = npu.trigger(h, r.seq, t)
            elif r.marker == NPU_WAIT:
                t = npu.wait(h, t)
            elif r.marker is None or r.marker >= LAYER_BASE or r.marker == LAYER_END or r.marker in TILE_MARKS:
                events.append((t, r.marker))
            i += 1
        return t

    t = walk(0, 0, len(recs.by_hart[0]), 0.0, zero)
    if len(forks) != len(spans[0]):
        raise ValueError(f"hart 0 ran {len(spans[0])} tasks but {len(forks)} forks were entered")

    marks = tuple(e for e in events if e[1] in TILE_MARKS)
    bounds = [e for e in events if e[1] not in TILE_MARKS]
    layers = []
    for j, (start, marker) in enumerate(bounds):
        if marker is not None and marker >= LAYER_BASE:
            end = bounds[j + 1][0] if j + 1 < len(bounds) else t
            layers.append(LayerTime(marker - LAYER_BASE, start, end - start))
    return TimingResult(total=t, forks=tuple(forks), layers=tuple(layers), model=model,
                        dma=tuple(dma.order), waits=tuple(dma.waits), marks=marks, npu=tuple(npu.jobs),
                        controls=tuple(sorted({0} | {h for h, _b, _e in calls})))


if __name__ == "__main__":
    import sys
    for path in sys.argv[1:]:
        print(path)
        print(model_cycles(path).summary())
