"""The Siracusa cycle model (Deeploy/targets/siracusa/timing.py) on hand-written record files."""

from __future__ import annotations

import dataclasses

import pytest

from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING, TimingModel, model_cycles, read_records

HEADER = """\
# deeploy-vp-records 1
# regions L2:0x80000000:0x200000 L1:0x90000000:0x40000 L3:0xa0000000:0x1000000
# columns hart seq marker insns L2_ld L2_st L1_ld L1_st L3_ld L3_st other_ld other_st
"""

# Two cores, one fork with a barrier; hart 1's lines interleaved as the plugin writes them.
#   hart 0 serial: 100 insns + 2 L2 loads (128), 50 insns + 5 L1 loads (50)
#   fork: phase 1 hart 0 1000 insns + 10 L2 accesses (1140), hart 1 500; phase 2 hart 0 100
#         insns + 3 L1 stores (100), hart 1 1000
#   hart 0 serial: 10 insns + 1 L3 load (110), 40, 10
TWO_CORES = HEADER + """\
0 0 0x100 100 2 0 0 0 0 0 2 0
0 1 0x010 150 2 0 5 0 0 0 2 0
1 0 0x016 8 0 0 0 0 0 0 2 0
0 2 0x011 150 2 0 5 0 0 0 2 0
1 1 0x011 8 0 0 0 0 0 0 2 0
1 2 0x014 508 0 0 0 0 0 0 2 0
0 3 0x014 1150 7 5 5 0 0 0 2 0
0 4 0x015 1150 7 5 5 0 0 0 2 0
1 3 0x015 508 0 0 0 0 0 0 2 0
1 4 0x012 1508 0 0 0 0 0 0 2 0
0 5 0x012 1250 7 5 5 3 0 0 2 0
0 6 0x013 1250 7 5 5 3 0 0 2 0
0 7 0x101 1260 7 5 5 3 1 0 2 0
0 8 0x0ff 1300 7 5 5 3 1 0 2 0
0 9 end 1310 7 5 5 3 1 0 2 0
1 5 end 1508 0 0 0 0 0 0 2 0
"""

FORK = 50 + 1140 + 1000 + 2 * 11          # fork + sum of phase maxima + barrier + join
TOTAL = 128 + 50 + FORK + 110 + 40 + 10


def test_parse():
    recs = read_records(TWO_CORES)
    assert recs.regions == ("L2", "L1", "L3", "other")
    assert sorted(recs.by_hart) == [0, 1]
    assert [r.seq for r in recs.by_hart[1]] == list(range(6))
    assert recs.final(0).marker is None and recs.final(0).insns == 1310
    assert recs.by_hart[0][1].marker == 0x10


def test_two_core_fork_with_barrier():
    res = model_cycles(TWO_CORES)
    assert len(res.forks) == 1
    fork = res.forks[0]
    assert (fork.cores, fork.phases) == (2, 2)
    assert fork.cycles == FORK
    assert fork.start == 128 + 50
    assert fork.core_insns == (1100, 1500)
    assert fork.core_cycles == (1240, 1500)
    # phases synchronise: the sum of per-phase maxima, not the max of the per-core sums
    assert fork.cycles != 50 + max(fork.core_cycles) + 22
    assert res.total == TOTAL
    assert res.serial == TOTAL - FORK
    assert res.per_layer() == {0: 128 + 50 + FORK + 110 - 128, 1: 40}
    assert [lt.start for lt in res.layers] == [128, 128 + 50 + FORK + 110]


def test_file_path(tmp_path):
    path = tmp_path / "records.txt"
    path.write_text(TWO_CORES)
    assert model_cycles(path).total == TOTAL
    assert model_cycles(read_records(path)).total == TOTAL


def test_parameters_change_the_result():
    bare = TimingModel(l2_latency=0, l3_latency=0, fork_cycles=0, barrier_cycles=0)
    # instructions only: hart 0's serial 100 + 50 + 10 + 40 + 10, phases max(1000, 500) + max(100, 1000)
    assert model_cycles(TWO_CORES, bare).total == 210 + 2000
    slow_cpi = dataclasses.replace(bare, base_cpi=2.0)
    assert model_cycles(TWO_CORES, slow_cpi).total == 2 * 2210
    l3 = dataclasses.replace(bare, l3_latency=1000)
    assert model_cycles(TWO_CORES, l3).total == 2210 + 1000


def test_defaults_are_the_documented_ones():
    m = SIRACUSA_TIMING
    assert (m.base_cpi, m.l1_latency, m.l2_latency, m.barrier_cycles) == (1.0, 0.0, 14.0, 11.0)
    assert m.latency("L2") == 14.0 and m.latency("L1") == 0.0 and m.latency("other") == 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        m.l2_latency = 1  # type: ignore[misc]
    for name in ("base_cpi", "l2_latency", "l3_latency", "fork_cycles", "barrier_cycles"):
        assert name in TimingModel.__doc__


def test_serial_only():
    text = HEADER + "0 0 0x100 10 1 0 0 0 0 0 0 0\n0 1 0x0ff 30 1 0 0 0 0 0 0 0\n0 2 end 35 1 1 0 0 0 0 0 0\n"
    res = model_cycles(text)
    assert res.total == 10 + 14 + 20 + 5 + 14
    assert res.forks == () and res.per_layer() == {0: 20}


def test_single_core_fork_and_network_run_twice():
    # one core: FORK_ENTER, TASK_BEGIN, 300 insns, TASK_END, FORK_LEAVE per layer, network run twice
    lines, seq, insns = [], 0, 0
    for _run in range(2):
        for layer in range(2):
            for marker, step in ((0x100 + layer, 5), (0x10, 1), (0x11, 0), (0x12, 300), (0x13, 0)):
                insns += step
                lines.append(f"0 {seq} 0x{marker:03x} {insns} 0 0 0 0 0 0 0 0")
                seq += 1
        insns += 2
        lines.append(f"0 {seq} 0x0ff {insns} 0 0 0 0 0 0 0 0")
        seq += 1
    lines.append(f"0 {seq} end {insns} 0 0 0 0 0 0 0 0")
    res = model_cycles(HEADER + "\n".join(lines) + "\n")
    assert len(res.forks) == 4 and all(f.cores == 1 and f.phases == 1 for f in res.forks)
    per_fork = 50 + 300 + 11
    assert [lt.layer for lt in res.layers] == [0, 1, 0, 1]
    assert [lt.cycles for lt in res.layers] == [1 + per_fork + 5, 1 + per_fork + 2] * 2
    assert res.per_layer() == {0: 2 * (1 + per_fork + 5), 1: 2 * (1 + per_fork + 2)}
    assert res.total == 5 + 4 * (1 + per_fork) + 3 * 5 + 2 * 2


def test_cores_disagreeing_on_barriers():
    bad = TWO_CORES.replace("1 2 0x014 508", "1 2 0x020 508").replace("1 3 0x015 508", "1 3 0x021 508")
    with pytest.raises(ValueError, match="number of barriers"):
        model_cycles(bad)


def test_malformed_files():
    with pytest.raises(ValueError, match="columns"):
        read_records("0 0 0x100 1 0 0\n1 0 end 1 0 0\n")
    with pytest.raises(ValueError, match="fields"):
        read_records(HEADER + "0 0 0x100 1 2 3\n")
    with pytest.raises(ValueError, match="sequence"):
        read_records(HEADER + "0 1 0x100 1 0 0 0 0 0 0 0 0\n")
    # one field too many on one line, one too few on the next: as many fields in all
    with pytest.raises(ValueError, match="line 4: expected 12 fields, got 13"):
        read_records(HEADER + "0 0 0x100 1 0 0 0 0 0 0 0 0 7\n0 1 0x100 1 0 0 0 0 0 0 0\n")
    with pytest.raises(ValueError, match="invalid literal"):
        read_records(HEADER + "0 0 0x100 1 0 0 0 0 0 0 0 x\n")


def test_record_fields_however_spaced():
    """Counters are read all at once when single spaces part them, else line by line: the same
    values (and beyond int64, exactly)."""
    recs = read_records(HEADER + "0 0 0x100 100  2\t0 0 0 0 0 2 0\n0 1 end 150 2 0 5 0 0 0 2 0 \n"
                        "1 0 end 99999999999999999999 0 0 0 0 0 0 0 1\n")
    assert recs.by_hart[0][0].counters == (100, 2, 0, 0, 0, 0, 0, 2, 0)
    assert recs.by_hart[0][1].counters == (150, 2, 0, 5, 0, 0, 0, 2, 0) and recs.by_hart[0][1].marker is None
    assert recs.by_hart[1][0].counters == (99999999999999999999, 0, 0, 0, 0, 0, 0, 0, 1)
    assert read_records(HEADER + "0 0 0x100 100 2 0 0 0 0 0 2 0\n").by_hart[0][0].counters == \
        (100, 2, 0, 0, 0, 0, 0, 2, 0)


# ---- DMA engines ----------------------------------------------------------------------------------
# Record files as the plugin writes them for deeploy_dma.h: an issue window (0x020, 0x021) followed
# by a "dma" line, a wait window (0x022, 0x023) followed by a "wait" line.

HEADER_DMA = HEADER.replace("records 1", "records 2") + """\
# dma-columns dma hart seq engine index commands rows L2_rd L2_wr L1_rd L1_wr L3_rd L3_wr other_rd other_wr
# wait-columns wait hart seq engine transfer retired
"""
LEVELS = ("L2", "L1", "L3", "other")
CLUSTER, L3 = 0, 1


class Trace:
    """Builds a record file: per hart a running instruction count (1 cycle each, no memory
    accesses); markers append records; DMA calls append their windows and lines."""

    def __init__(self):
        self.lines: list[str] = []
        self.seq: dict[int, int] = {}
        self.insns: dict[int, int] = {}
        self.issued: dict[tuple[int, int], int] = {}
        self.retired: dict[tuple[int, int], int] = {}

    def run(self, hart: int, n: int) -> "Trace":
        self.insns[hart] = self.insns.get(hart, 0) + n
        return self

    def mark(self, hart: int, marker: int | None) -> int:
        seq = self.seq.get(hart, 0)
        self.seq[hart] = seq + 1
        m = "end" if marker is None else f"0x{marker:03x}"
        self.lines.append(f"{hart} {seq} {m} {self.insns.get(hart, 0)} 0 0 0 0 0 0 0 0")
        return seq

    def dma(self, hart: int, engine: int, nbytes: int, rows: int = 1, commands: int = 1, src: str = "L2",
            dst: str = "L1") -> int:
        self.mark(hart, 0x20)
        seq = self.mark(hart, 0x21)
        index = self.issued.get((hart, engine), 0)
        self.issued[(hart, engine)] = index + 1
        cols = []
        for level in LEVELS:
            cols += [nbytes if level == src else 0, nbytes if level == dst else 0]
        self.lines.append(f"dma {hart} {seq} {engine} {index} {commands} {rows} " + " ".join(map(str, cols)))
        return index + 1                                                      # the runtime's handle

    def wait(self, hart: int, engine: int, handle: int) -> None:
        self.mark(hart, 0x22)
        seq = self.mark(hart, 0x23)
        done = self.retired.get((hart, engine), 0)
        retired = max(0, handle - done)
        self.retired[(hart, engine)] = max(done, handle)
        self.lines.append(f"wait {hart} {seq} {engine} {handle - 1 if retired else -1} {retired}")

    def text(self) -> str:
        for hart in sorted(self.seq):
            self.mark(hart, None)
        return HEADER_DMA + "\n".join(self.lines) + "\n"


# default parameters: cluster setup 14, 8 B/cycle, issue 3 (1-D) or 5 (2-D) cycles;
# L3 setup 14, 1 B/cycle, 8 + 12 cycles per row, issue 3 x 14 (1-D) or 5 x 14 (2-D)


def _serial(compute: int, nbytes: int = 800, engine: int = CLUSTER, src: str = "L2", dst: str = "L1") -> str:
    tr = Trace()
    tr.run(0, 100).mark(0, 0x100)
    tr.run(0, 10)
    h = tr.dma(0, engine, nbytes, src=src, dst=dst)
    tr.run(0, compute)
    tr.wait(0, engine, h)
    tr.run(0, 10)
    tr.mark(0, 0x0FF)
    return tr.text()


def test_dma_records_parse():
    recs = read_records(_serial(1000))
    (d,) = recs.dma.values()
    assert (d.hart, d.seq, d.engine, d.index, d.commands, d.rows, d.bytes) == (0, 2, CLUSTER, 0, 1, 1, 800)
    assert d.read == (800, 0, 0, 0) and d.written == (0, 800, 0, 0)
    (w,) = recs.waits.values()
    assert (w.hart, w.seq, w.engine, w.transfer, w.retired) == (0, 4, CLUSTER, 0, 1)


def test_dma_hidden_behind_longer_compute():
    res = model_cycles(_serial(1000))
    (d,) = res.dma
    # issued at 110, programmed (3 cycles) at 113, first beat after 14 cycles of setup, 800 B at 8 B/cycle
    assert (d.issue, d.start, d.end) == (110, 127, 227)
    assert (d.engine_name, d.bytes, d.src, d.dst, d.issue_cycles, d.setup) == ("cluster", 800, "L2", "L1", 3, 14)
    assert (d.cycles, d.duration, d.busy) == (117, 100, 114)
    (w,) = res.waits
    assert (w.transfer, w.time, w.stall) == (0, 1113, 0)
    assert res.total == 110 + 3 + 1000 + 10
    assert res.dma_stall == 0
    assert res.per_layer() == {0: 3 + 1000 + 10 + 10}


def test_dma_longer_than_compute_stalls():
    res = model_cycles(_serial(50))
    (d,), (w,) = res.dma, res.waits
    assert d.end == 227
    assert (w.time, w.stall) == (163, 227 - 163)
    assert res.total == 227 + 10 and res.dma_stall == 64
    short = model_cycles(_serial(50, nbytes=8))             # ends at 128, before the wait at 163
    assert (short.dma[0].end, short.dma_stall, short.total) == (128, 0, 163 + 10)


def test_two_transfers_queue_on_one_engine():
    tr = Trace()
    tr.run(0, 110)
    a = tr.dma(0, CLUSTER, 800)                  # at 110: programmed 113, start 127, end 227
    b = tr.dma(0, CLUSTER, 400, src="L1", dst="L2")  # at 113: programmed 116, waits for the engine
    tr.wait(0, CLUSTER, b)                       # retires a and b; b ends last
    tr.wait(0, CLUSTER, a)                       # nothing left: returns at once
    tr.run(0, 10)
    res = model_cycles(tr.text())
    first, second = res.dma
    assert (first.start, first.end) == (127, 227)
    assert (second.issue, second.start, second.end) == (113, 227 + 14, 227 + 14 + 50)
    assert (second.src, second.dst) == ("L1", "L2")
    wb, wa = res.waits
    assert (wb.transfer, wb.time, wb.stall) == (1, 116, 291 - 116)
    assert (wa.transfer, wa.stall) == (None, 0)
    assert res.total == 291 + 10
    # on two engines the second transfer would not wait for the first
    tr = Trace()
    tr.run(0, 110)
    tr.dma(0, CLUSTER, 800)
    h = tr.dma(0, L3, 400, src="L3", dst="L2")
    tr.wait(0, L3, h)
    assert model_cycles(tr.text()).dma[1].start == 113 + 42 + 14


def test_l3_is_slower_than_l2():
    l2 = model_cycles(_serial(0, 800)).dma[0]
    l3 = model_cycles(_serial(0, 800, engine=L3, src="L3", dst="L2")).dma[0]
    assert l2.duration == 100                                   # 8 bytes per cycle
    assert l3.issue_cycles == 3 * 14 and l3.setup == 14
    assert l3.duration == 800 + 8 + 12                          # 1 byte per cycle + command + latency
    assert (l3.src, l3.dst, l3.engine_name) == ("L3", "L2", "L3")
    assert l3.cycles > 7 * l2.cycles
    # 2-D: 8 rows of 100 bytes; the cluster DMA rounds each row up to whole 8-byte beats, the L3
    # DMA pays a HyperBus command and latency per row; both program 5 command words
    tr = Trace()
    h1 = tr.dma(0, CLUSTER, 800, rows=8)
    h2 = tr.dma(0, L3, 800, rows=8, src="L3", dst="L2")
    tr.wait(0, CLUSTER, h1)
    tr.wait(0, L3, h2)
    c2d, l2d = model_cycles(tr.text()).dma
    assert (c2d.issue_cycles, c2d.duration) == (5, 8 * 13)
    assert (l2d.issue_cycles, l2d.duration) == (5 * 14, 8 * (100 + 20))
    # a 3-D copy: one 2-D command per plane
    tr = Trace()
    tr.wait(0, CLUSTER, tr.dma(0, CLUSTER, 4 * 8 * 16, rows=4 * 8, commands=4))
    (d3,) = model_cycles(tr.text()).dma
    assert (d3.issue_cycles, d3.duration, d3.commands, d3.rows) == (4 * 5, 32 * 2, 4, 32)


def test_dma_parameters():
    bare = TimingModel(dma_setup_cycles=0, dma_issue_word_cycles=0, dma_bandwidth=4)
    res = model_cycles(_serial(50), bare)
    assert (res.dma[0].start, res.dma[0].end) == (110, 310)
    assert res.total == 310 + 10
    slow_l3 = dataclasses.replace(SIRACUSA_TIMING, l3_dma_latency_cycles=100, l3_dma_command_cycles=0)
    assert model_cycles(_serial(0, engine=L3, src="L3", dst="L2"), slow_l3).dma[0].duration == 900
    m = SIRACUSA_TIMING
    assert (m.dma_setup_cycles, m.dma_bandwidth, m.dma_row_cycles, m.dma_issue_word_cycles) == (14, 8, 0, 1)
    assert (m.l3_dma_setup_cycles, m.l3_dma_bandwidth, m.l3_dma_command_cycles, m.l3_dma_latency_cycles,
            m.l3_dma_issue_word_cycles) == (14, 1, 8, 12, 14)
    for f in dataclasses.fields(TimingModel):
        assert f"{f.name}:" in TimingModel.__doc__, f.name
    with pytest.raises(ValueError, match="unknown DMA engine"):
        m.dma_engine(5)


def _fork(*phases) -> str:
    """Hart 0: 100 serial, then a two-core fork whose phases (separated by barriers) are given as
    (core 0 body, core 1 body) pairs of functions of (trace, hart), then 10 serial."""
    tr = Trace()
    tr.mark(1, 0x16)
    tr.run(0, 100).mark(0, 0x10)
    for h in (0, 1):
        tr.mark(h, 0x11)
        for p, bodies in enumerate(phases):
            if p:
                tr.mark(h, 0x14)
                tr.mark(h, 0x15)
            bodies[h](tr, h)
        tr.mark(h, 0x12)
    tr.mark(0, 0x13)
    tr.run(0, 10)
    return tr.text()


def _compute(n):
    return lambda tr, h: tr.run(h, n)


def test_transfers_of_two_cores_queue_in_modelled_order():
    def core0(tr, h):
        tr.run(h, 100)
        tr.wait(h, CLUSTER, tr.dma(h, CLUSTER, 800))   # issues at 250, after core 1's transfer
        tr.run(h, 5)

    def core1(tr, h):
        tr.run(h, 50)
        tr.wait(h, CLUSTER, tr.dma(h, CLUSTER, 800))   # issues at 200 (written later in the file)
        tr.run(h, 5)

    text = _fork((core0, core1))
    assert text.index("dma 0 ") < text.index("dma 1 ")
    res = model_cycles(text)
    one, zero = res.dma                                # modelled issue order: core 1 first
    assert (one.hart, one.issue, one.start, one.end) == (1, 200, 217, 317)
    assert (zero.hart, zero.issue, zero.start, zero.end) == (0, 250, 317 + 14, 431)
    assert {(w.hart, w.time, w.stall) for w in res.waits} == {(0, 253, 431 - 253), (1, 203, 317 - 203)}
    (fork,) = res.forks
    assert fork.core_cycles == (105, 55)
    assert fork.core_dma_cycles == (3 + 431 - 253, 3 + 317 - 203)
    assert fork.cycles == 50 + (431 + 5 - 150) + 11
    assert res.total == 100 + fork.cycles + 10


def test_dma_across_a_barrier():
    def issue(tr, h):                                  # at 150: programmed 153, first beat 167
        tr.dma(h, CLUSTER, 8000)                       # 1000 cycles of data: ends at 1167
        tr.run(h, 10)

    def wait(tr, h):
        tr.wait(h, CLUSTER, 1)
        tr.run(h, 100)

    # core 1's first phase (1200) outlasts the transfer: the wait after the barrier is free
    res = model_cycles(_fork((issue, _compute(1200)), (wait, _compute(100))))
    (fork,) = res.forks
    assert fork.phases == 2 and res.dma[0].end == 1167
    assert res.dma_stall == 0
    assert fork.cycles == 50 + 1200 + 100 + 2 * 11
    # a short first phase: core 0 stalls after the barrier until the transfer ends
    res = model_cycles(_fork((issue, _compute(10)), (wait, _compute(100))))
    (fork,) = res.forks
    phase2 = 150 + 13 + 11                             # core 0's phase 1: issue 3 + 10
    assert res.waits[0].time == phase2 and res.dma_stall == 1167 - phase2
    assert fork.cycles == 50 + 13 + 11 + (1167 - phase2) + 100 + 11
    # issued and never waited for: no stall, the transfer is still listed
    res = model_cycles(_fork((issue, _compute(10)), (_compute(100), _compute(100))))
    assert res.waits == () and len(res.dma) == 1 and res.dma_stall == 0


def test_wait_in_a_fork_for_a_serial_transfer():
    tr = Trace()
    tr.run(0, 100)
    h = tr.dma(0, CLUSTER, 8000)                       # serial: start 117, end 1117
    tr.mark(1, 0x16)
    tr.mark(0, 0x10)
    for hart in (0, 1):
        tr.mark(hart, 0x11)
        if hart == 0:
            tr.wait(0, CLUSTER, h)                     # at 103 + 50: stalls until 1117
        tr.run(hart, 20)
        tr.mark(hart, 0x12)
    tr.mark(0, 0x13)
    res = model_cycles(tr.text())
    assert res.waits[0].stall == 1117 - 153
    assert res.forks[0].cycles == 50 + (1117 + 20 - 153) + 11


def _data_mover(compute: tuple[int, int]) -> str:
    """Hart 0: 100 serial, then hands a call to the data mover (hart 2) and computes its fork with
    hart 1 (``compute`` instructions each), then 10 serial. The data mover: 10, a transfer it waits
    for, then a fork during which it prefetches the next transfer (and runs 20), then 5."""
    tr = Trace()
    tr.mark(1, 0x16)
    tr.mark(2, 0x16)
    tr.run(0, 100).mark(0, 0x1C)                      # DM_CALL_ENTER at 100; the call starts at 111
    tr.mark(2, 0x27)
    tr.run(2, 10)
    tr.wait(2, CLUSTER, tr.dma(2, CLUSTER, 800))      # at 121: programmed 124, start 138, end 238
    tr.mark(2, 0x10)                                  # FORK_ENTER at 238; the cores start at 288
    tr.mark(2, 0x1F)
    h = tr.dma(2, CLUSTER, 800)                       # at 288: programmed 291, start 305, end 405
    tr.run(2, 20)
    tr.wait(2, CLUSTER, h)                            # at 311: stalls until 405
    tr.mark(2, 0x1E)
    for hart in (0, 1):
        tr.mark(hart, 0x11)
        tr.run(hart, compute[hart])
        tr.mark(hart, 0x12)
    tr.mark(2, 0x13)
    tr.run(2, 5)
    tr.mark(2, 0x28)
    tr.mark(0, 0x1D)
    tr.run(0, 10)
    return tr.text()


def test_data_mover_works_while_the_cores_compute():
    """A data-mover core (Snitch) runs hart 0's call: its transfers and its own work inside the
    fork it starts overlap the cores' compute; the call costs a barrier each way."""
    res = model_cycles(_data_mover((1000, 500)))
    (fork,) = res.forks
    assert (fork.cores, fork.start, fork.core_insns) == (2, 238, (1000, 500))
    assert fork.cycles == 50 + 1000 + 11                            # the prefetch (ends 405) is hidden
    assert [(d.hart, d.issue, d.end) for d in res.dma] == [(2, 121, 238), (2, 288, 405)]
    assert [(w.hart, w.stall) for w in res.waits] == [(2, 238 - 124), (2, 405 - 311)]
    assert res.total == 100 + 11 + (238 - 111) + fork.cycles + 5 + 11 + 10
    # the data mover's own work outlasts the cores': the fork ends when it joins
    res = model_cycles(_data_mover((20, 10)))
    assert res.forks[0].cycles == 405 - 238
    assert res.total == 405 + 5 + 11 + 10


def test_dma_protocol_errors():
    good = _serial(10)
    with pytest.raises(ValueError, match="DMA protocol error"):
        read_records(good + "# plugin error: hart 0 record 3: RETIRE outside a wait window\n")
    with pytest.raises(ValueError, match="not a 0x021 marker record"):
        read_records(good.replace("dma 0 2 ", "dma 0 1 "))
    with pytest.raises(ValueError, match="fields in a dma line"):
        read_records(good.replace("dma 0 2 0 0 1 1 800", "dma 0 2 0 0 1 1"))
    with pytest.raises(ValueError, match="inconsistent transfer"):
        read_records(good.replace("dma 0 2 0 0 1 1 800 0", "dma 0 2 0 0 1 1 700 0"))
    with pytest.raises(ValueError, match="out of order"):
        read_records(good.replace("dma 0 2 0 0 ", "dma 0 2 0 1 "))
    with pytest.raises(ValueError, match="inconsistent wait"):
        read_records(good.replace("wait 0 4 0 0 1", "wait 0 4 0 0 0"))
    with pytest.raises(ValueError, match="has not issued|expected from"):
        model_cycles(good.replace("wait 0 4 0 0 1", "wait 0 4 0 1 1"))
