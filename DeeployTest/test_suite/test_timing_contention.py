"""The cycle model's instruction classes and shared-resource contention (timing.py,
contention.py) on hand-written record files of version 3 (class and TCDM bank columns)."""

from __future__ import annotations

from Deeploy.targets.siracusa.timing import SIRACUSA_TIMING, TIMING_V1, model_cycles, read_records

BANKS = " ".join(f"bank{b}" for b in range(16))
HEADER = f"""\
# deeploy-vp-records 3
# regions L2:0x80000000:0x200000 L1:0x90000000:0x40000
# columns hart seq marker insns L2_ld L2_st L1_ld L1_st other_ld other_st taken jump mulh div loaduse misaligned fpu fdivsqrt {BANKS}
"""


def line(hart, seq, marker, insns, l2=0, l1=0, classes=(0,) * 8, banks=None):
    banks = banks if banks is not None else [0] * 16
    return " ".join(str(x) for x in (hart, seq, marker, insns, l2, 0, l1, 0, 0, 0, *classes, *banks)) + "\n"


def test_class_costs_of_serial_code():
    # 1000 instructions: 100 taken branches, 50 jumps, 10 mulh, 2 div, 30 load-use, 4 misaligned,
    # 20 fpu, 3 fdiv; by hand from the manual's cycles: taken 3, jump 2, mulh 5, div 28 (3 + the
    # leading zeros of a 7-bit divisor), load-use +1, misaligned 2; fdiv 15 (RTL measurement)
    text = HEADER + line(0, 0, "end", 1000, classes=(100, 50, 10, 2, 30, 4, 20, 3))
    extra = 100 * 2 + 50 * 1 + 10 * 4 + 2 * 27 + 30 * 1 + 4 * 1 + 20 * 0 + 3 * 14
    assert model_cycles(text).total == 1000 + extra
    assert model_cycles(text, TIMING_V1).total == 1000
    assert read_records(text).column("mulh") == 1 + 2 * 3 + 2


def test_control_and_fsqrt_classes():
    # the classes the RTL calibration added (benchmarks/fidelity.py): 7 taken branches or jumps to
    # a misaligned 32-bit instruction (+1 each, manual: jump 3 instead of 2), 5 jump register
    # hazards (+1), 2 fsqrt.s among 3 fdiv.s/fsqrt.s (fsqrt 19 cycles, fdiv 15, RTL measurements)
    header = HEADER.replace("fdivsqrt ", "fdivsqrt target32 jrdep fsqrt ")
    text = header + line(0, 0, "end", 1000, classes=(0, 0, 0, 0, 0, 0, 0, 3, 7, 5, 2))
    assert model_cycles(text).total == 1000 + 7 + 5 + 1 * 14 + 2 * 18
    assert model_cycles(text, TIMING_V1).total == 1000


def _fork(banks_of_core, l2_of_core=(0, 0)):
    """Two cores, one fork: each core 100 instructions in its task."""
    text = HEADER + line(0, 0, "0x010", 10)
    text += line(1, 0, "0x016", 0)
    for h in (0, 1):
        base = 10 if h == 0 else 0
        text += line(h, 1, "0x011", base)
        text += line(h, 2, "0x012", base + 100, l2=l2_of_core[h], l1=sum(banks_of_core[h]), banks=banks_of_core[h])
    text += line(0, 3, "0x013", 110, l2=l2_of_core[0], l1=sum(banks_of_core[0]), banks=banks_of_core[0])
    text += line(0, 4, "end", 110, l2=l2_of_core[0], l1=sum(banks_of_core[0]), banks=banks_of_core[0])
    text += line(1, 3, "end", 100, l2=l2_of_core[1], l1=sum(banks_of_core[1]), banks=banks_of_core[1])
    return text


def test_same_bank_conflicts_lengthen_the_phase():
    one_bank = [[90] + [0] * 15, [90] + [0] * 15]          # 180 accesses to bank 0 in one phase
    spread = [[45, 45] + [0] * 14, [0, 0, 45, 45] + [0] * 12]
    m = SIRACUSA_TIMING
    overhead = m.fork_cycles + m.barrier_cycles
    conflict = model_cycles(_fork(one_bank)).forks[0]
    assert conflict.cycles == overhead + 180 and conflict.contention == 80
    free = model_cycles(_fork(spread)).forks[0]
    assert free.cycles == overhead + 100 and free.contention == 0
    assert model_cycles(_fork(one_bank), TIMING_V1).forks[0].cycles == overhead + 100


def test_l2_path_is_shared():
    # each core: 100 instructions, 6 L2 loads (100 + 6 * 14 = 184 cycles alone); the path needs
    # 12 cycles: no contention. With 10 cycles per access it needs 120: still below 184; at 20, 240.
    from dataclasses import replace
    text = _fork([[0] * 16, [0] * 16], l2_of_core=(6, 6))
    m = SIRACUSA_TIMING
    overhead = m.fork_cycles + m.barrier_cycles
    assert model_cycles(text).forks[0].cycles == overhead + 184
    assert model_cycles(text, replace(m, l2_path_cycles=20)).forks[0].cycles == overhead + 240


def _fpu_fork(fp_of_core, insns=100):
    """One fork on len(fp_of_core) cores: core h runs ``insns`` instructions of which
    fp_of_core[h] = (fpu operations, fdiv/fsqrt) are floating-point; no memory accesses."""
    n = len(fp_of_core)
    classes = [(0, 0, 0, 0, 0, 0, f, d) for f, d in fp_of_core]
    text = HEADER + line(0, 0, "0x010", 10)
    for h in range(1, n):
        text += line(h, 0, "0x016", 0)
    for h in range(n):
        base = 10 if h == 0 else 0
        text += line(h, 1, "0x011", base)
        text += line(h, 2, "0x012", base + insns, classes=classes[h])
    text += line(0, 3, "0x013", 10 + insns, classes=classes[0])
    text += line(0, 4, "end", 10 + insns, classes=classes[0])
    for h in range(1, n):
        text += line(h, 3, "end", insns, classes=classes[h])
    return text


def test_cores_sharing_an_fpu_wait_for_it():
    from dataclasses import replace
    m = SIRACUSA_TIMING
    overhead = m.fork_cycles + m.barrier_cycles
    # 8 cores, 100 instructions each, all fpu operations: cores i and i + 4 share FPU i % 4, which
    # needs 200 cycles for their 200 operations
    fork = model_cycles(_fpu_fork([(100, 0)] * 8)).forks[0]
    assert fork.cycles == overhead + 200 and fork.contention == 100
    # private FPUs (fpus=0), or 4 cores on 4 FPUs: each core alone, 100 cycles
    assert model_cycles(_fpu_fork([(100, 0)] * 8), replace(m, fpus=0)).forks[0].cycles == overhead + 100
    assert model_cycles(_fpu_fork([(100, 0)] * 4)).forks[0].cycles == overhead + 100
    # only cores 1 and 5 (FPU 1) compute in float, 70 operations each: FPU 1 needs 140 cycles
    fp = [(0, 0)] * 8
    fp[1] = fp[5] = (70, 0)
    assert model_cycles(_fpu_fork(fp)).forks[0].cycles == overhead + 140
    # cores 1 and 2 are on different FPUs: no bound beyond the cores' own 100 cycles
    fp = [(0, 0)] * 8
    fp[1] = fp[2] = (70, 0)
    assert model_cycles(_fpu_fork(fp)).forks[0].cycles == overhead + 100
    assert model_cycles(_fpu_fork([(100, 0)] * 8), TIMING_V1).forks[0].cycles == overhead + 100


def test_one_divider_for_the_cluster():
    m = SIRACUSA_TIMING
    overhead = m.fork_cycles + m.barrier_cycles
    # each of 8 cores: 100 instructions, 4 of them fdiv: 100 + 4 * 14 = 156 cycles alone (fdiv 15
    # cycles, measured on the core's RTL); the shared unit needs 8 * 4 * 15 = 480 cycles
    fork = model_cycles(_fpu_fork([(0, 4)] * 8)).forks[0]
    assert fork.cycles == overhead + 480 and fork.contention == 480 - 156
    # two cores, one fdiv each: 2 * 15 = 30 cycles of the unit, below each core's 114
    assert model_cycles(_fpu_fork([(0, 1)] * 2)).forks[0].cycles == overhead + 114


def test_phase_lines_give_the_bank_floor():
    """A hierarchical L1 (MemPool, Snitch: the plugin's l1map) has its phases' busiest bank in
    ``phase`` lines keyed by core 0's record closing the phase; they replace the bank columns, and
    the extra columns l1_group_ld / l1_remote_ld cost what the target's model says."""
    from dataclasses import replace
    from Deeploy.targets.mempool.timing import MEMPOOL_TIMING
    spread = [[45, 45] + [0] * 14, [0, 0, 45, 45] + [0] * 12]     # no conflict in the bank columns
    text = _fork(spread) + "phase 2 300 360\n"                     # core 0's TASK_END is its record 2
    recs = read_records(text)
    assert recs.phases == {2: (300, 360)}
    m = SIRACUSA_TIMING
    fork = model_cycles(recs).forks[0]
    assert fork.cycles == m.fork_cycles + m.barrier_cycles + 300 and fork.contention == 200
    header = HEADER.rstrip("\n") + " l1_group_ld l1_remote_ld\n"
    costed = read_records(header + line(0, 0, "end", 1000).rstrip("\n") + " 10 5\n")
    plain = replace(MEMPOOL_TIMING, group_cycles=0.0, remote_cycles=0.0)
    assert model_cycles(costed, MEMPOOL_TIMING).total - model_cycles(costed, plain).total == \
        10 * MEMPOOL_TIMING.group_cycles + 5 * MEMPOOL_TIMING.remote_cycles
