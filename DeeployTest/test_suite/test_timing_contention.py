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
