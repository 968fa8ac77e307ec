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
