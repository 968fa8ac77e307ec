"""Rewriting a linked cluster ELF so that QEMU runs its CORE-V PULP words as plain RV32IM stubs.

QEMU traps on every ``cv.*`` word and the runtime emulates it (deeploy_xpulp_emu.c), about 6 us of
QEMU time per instruction. :func:`rewrite` derives an image in which each word it can translate is
replaced by ``jal x0, stub`` (a *site*); the stub, in the section ``.deeploy_xpulp_stubs`` the
linker script reserves after ``.text``, does the same thing in RV32IM with the registers of that
word fixed and ends with ``jal x0, site + 4``, or with a jump to the next site's stub when
``site + 4`` is a site too (its *chain entry*: a nop before it, where the timing plugin counts that
site as executed; QEMU switches blocks once per word instead of twice). Stub temporaries are saved
in the hart's scratch area, the thread-local ``deeploy_xpulp_scratch`` reached through ``tp`` (not
a CSR: QEMU 7.2 leaves the translated code at every CSR access, which made such stubs only 3x
faster than the trap); words that use ``tp`` stay with the emulator.

Hardware loops whose start, end and count are set by one run of consecutive setup words
(``setup``/``setupi``, or ``starti`` + ``endi`` + ``count``/``counti``) run without traps: the
count setup stores the count in the scratch area (``starti``/``endi`` become nops), and the body's
last instruction (32 bits, no control flow, not PC-relative: bodies are ``.option norvc``) moves
into a loop-end stub that runs it, decrements the count and jumps to the start while it is not
zero. Any other word stays as it is and traps into the emulator, as do the words of a loop that
cannot be rewritten. The ELF itself keeps the real words; the timing plugin gets the site table
(site -> original word, chain entry) and counts each site as its original instruction.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Callable, NamedTuple

from Deeploy.elf import sections, symbols
from Deeploy.errors import BuildError

__all__ = ["STUB_SECTION", "SCRATCH_WORDS", "Rewritten", "rewrite", "stubs_enabled"]

STUB_SECTION = ".deeploy_xpulp_stubs"
SCRATCH = "deeploy_xpulp_scratch"   # thread-local uint32_t[SCRATCH_WORDS] (deeploy_xpulp_emu.c)
SCRATCH_WORDS = 6
_SAVE, _COUNT = 0, 16                # scratch bytes: saved temporaries (4 words), loop counts 0 and 1
_TP = 4
_SHF_EXECINSTR = 4
_SKIP = (STUB_SECTION, "deeploy_xpulp_text", "deeploy_xpulp_mem")   # no cv.* words: stubs, the emulator
_NOP = 0x00000013


def stubs_enabled() -> bool:
    """The runner's switch: rewriting is on unless the environment sets DEEPLOY_XPULP_STUBS=0."""
    return os.environ.get("DEEPLOY_XPULP_STUBS", "1") != "0"


class Rewritten(NamedTuple):
    image: bytes                       # the derived ELF file
    sites: dict[int, int]              # site address -> original word
    chains: dict[int, int]             # site address -> its stub's chain entry (sites with a stub)
    stubs: tuple[int, int]             # [start, end) of the stub section
    used: int                          # stub bytes written
    fallbacks: list[tuple[int, str]]   # (address, reason) of hardware loops left to the emulator


# ---- RV32 encoding ---------------------------------------------------------------------------
def _r(f7, rs2, rs1, f3, rd, op=0x33):
    return (f7 << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def _i(imm, rs1, f3, rd, op=0x13):
    assert -2048 <= imm < 2048
    return ((imm & 0xFFF) << 20) | (rs1 << 15) | (f3 << 12) | (rd << 7) | op


def _s(imm, rs2, rs1, f3):
    return (((imm >> 5) & 0x7F) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | ((imm & 31) << 7) | 0x23


def _b(off, rs1, rs2, f3):
    assert -4096 <= off < 4096 and not off & 1
    return (((off >> 12) & 1) << 31) | (((off >> 5) & 0x3F) << 25) | (rs2 << 20) | (rs1 << 15) | (f3 << 12) | \
        (((off >> 1) & 0xF) << 8) | (((off >> 11) & 1) << 7) | 0x63


def _jal(off):
    if not -(1 << 20) <= off < (1 << 20):
        raise OverflowError
    return (((off >> 20) & 1) << 31) | (((off >> 1) & 0x3FF) << 21) | (((off >> 11) & 1) << 20) | \
        (((off >> 12) & 0xFF) << 12) | 0x6F


class _Asm:
    """A stub being assembled at address ``at``: words, local labels, branches to them."""

    def __init__(self, at: int, scratch: int, entries: dict[int, int]):
        self.at, self.scratch, self.entries, self.words, self.labels, self.fixups = at, scratch, entries, [], {}, []

    def __call__(self, word: int) -> None:
        self.words.append(word)

    def pc(self) -> int:
        return self.at + 4 * len(self.words)

    def label(self, name: str) -> None:
        self.labels[name] = len(self.words)

    def branch(self, f3: int, rs1: int, rs2: int, name: str) -> None:   # beq 0, bne 1, blt 4, bge 5, bltu 6
        self.fixups.append((len(self.words), f3, rs1, rs2, name))
        self.words.append(0)

    def jump(self, target: int) -> None:
        self(_jal(target - self.pc()))

    def goto(self, target: int) -> None:
        """Continue at target: straight into its stub if it is a site with one (its chain entry)."""
        self.jump(self.entries.get(target, target))

    def li(self, rd: int, v: int) -> None:
        v &= 0xFFFFFFFF
        lo = ((v & 0xFFF) ^ 0x800) - 0x800
        hi = ((v - lo) >> 12) & 0xFFFFF
        if hi:
            self((hi << 12) | (rd << 7) | 0x37)
        if lo or not hi:
            self(_i(lo, rd if hi else 0, 0, rd))

    def mv(self, rd: int, rs: int) -> None:
        if rd:
            self(_i(0, rs, 0, rd))

    def code(self) -> list[int]:
        for k, f3, rs1, rs2, name in self.fixups:
            self.words[k] = _b(4 * (self.labels[name] - k), rs1, rs2, f3)
        return self.words


def _add(a, d, x, y): a(_r(0, y, x, 0, d))
def _sub(a, d, x, y): a(_r(0x20, y, x, 0, d))
def _mul(a, d, x, y): a(_r(1, y, x, 0, d))
def _and(a, d, x, y): a(_r(0, y, x, 7, d))
def _or(a, d, x, y): a(_r(0, y, x, 6, d))
def _xor(a, d, x, y): a(_r(0, y, x, 4, d))
def _slli(a, d, x, n): a(_i(n, x, 1, d))
def _srli(a, d, x, n): a(_i(n, x, 5, d))
def _srai(a, d, x, n): a(_i(n | 0x400, x, 5, d))


# ---- the PULP words ----------------------------------------------------------------------------
class _Word(NamedTuple):
    uses: tuple[int, ...]              # its registers: the stub must not use them as temporaries
    temps: int                         # temporaries needed
    body: Callable                     # body(asm, temps): the instruction's effect


def _fields(w):
    return w & 0x7F, (w >> 12) & 7, w >> 25, (w >> 7) & 31, (w >> 15) & 31, (w >> 20) & 31


def _lane(a, dst, src, i, bits, signed):
    """dst = lane i of src (bits 8 or 16), sign- or zero-extended."""
    top = (i + 1) * bits
    if top == 32:
        (_srai if signed else _srli)(a, dst, src, 32 - bits)
    elif i == 0 and bits == 8 and not signed:
        a(_i(0xFF, src, 7, dst))
    else:
        _slli(a, dst, src, 32 - top)
        (_srai if signed else _srli)(a, dst, dst, 32 - bits)


def _decode(w: int) -> _Word | None:
    """The stub recipe of a CORE-V word, None if it stays with the emulator (hardware loops too)."""
    op, f3, f7, rd, r1, r2 = _fields(w)
    imm12 = ((w >> 20) ^ 0x800) - 0x800
    ld = {0: 0, 1: 1, 2: 2, 4: 4, 5: 5}     # RV32 load funct3 by kind

    def word(temps, body, regs=(rd, r1, r2)):   # regs: the register fields (others are immediates)
        return None if _TP in regs else _Word(regs, temps, body)

    def result(compute):          # rd = compute(a, T0, temps): the value ends in T0
        def body(a, t):
            compute(a, t)
            a.mv(rd, t[0])
        return body

    if op == 0x0B:                                            # cv.l* rD, (rs1), imm
        if f3 not in ld:
            return None

        def body(a, t):
            a(_i(0, r1, ld[f3], t[0], 0x03))
            if r1:
                a(_i(imm12, r1, 0, r1))
            a.mv(rd, t[0])
        return word(1, body, regs=(rd, r1))
    if op == 0x2B and f3 <= 2:                                # cv.s* rs2, (rs1), imm
        inc = (imm12 & ~31) | rd

        def body(a, t):
            a(_s(0, r2, r1, f3))
            if r1:
                a(_i(inc, r1, 0, r1))
        return word(0, body, regs=(r1, r2))
    if op == 0x2B and f3 == 3:
        if f7 < 0x10:                                         # loads: register post-increment / offset
            kind = {0: 0, 1: 1, 2: 2, 8: 4, 9: 5}.get(f7 & ~4)
            if kind is None:
                return None

            def body(a, t):
                if f7 & 4:
                    _add(a, t[0], r1, r2)
                    a(_i(0, t[0], kind, t[0], 0x03))
                else:
                    a(_i(0, r1, kind, t[0], 0x03))
                    if r1:
                        _add(a, r1, r1, r2)
                a.mv(rd, t[0])
            return word(1, body)
        if f7 < 0x18:                                         # stores: rs3 (rd field) increment / offset
            wd = f7 & 3
            if wd == 3:
                return None

            def body(a, t):
                if f7 & 4:
                    _add(a, t[0], r1, rd)
                    a(_s(0, r2, t[0], wd))
                else:
                    a(_s(0, r2, r1, wd))
                    if r1:
                        _add(a, r1, r1, rd)
            return word(1, body)
        alu = _ALU.get(f7)
        if alu is None:
            return None
        temps, compute = alu
        return word(temps, result(lambda a, t: compute(a, t, r1, r2, rd)),
                    regs=(rd, r1) if f7 in (0x38, 0x39) else (rd, r1, r2))
    if op == 0x2B and f3 == 4:
        return None                                           # hardware loops: see _loops
    if op == 0x5B and f3 <= 1:                                # bit fields with constant width / position
        k, wb, p = f3 * 4 + (w >> 30), ((w >> 25) & 31) + 1, r2
        hi = min(32, wb + p)
        mk = ((1 << hi) - 1) & ~((1 << p) - 1)
        if k not in (0, 1, 2, 4, 5):
            return None

        def compute(a, t):
            if k in (0, 1):
                _slli(a, t[0], r1, 32 - hi)
                (_srai if k == 0 else _srli)(a, t[0], t[0], 32 - hi + p)
            elif k == 2:
                a.li(t[1], mk)
                _slli(a, t[0], r1, p)
                _and(a, t[0], t[0], t[1])
                a(_i(-1, t[1], 4, t[1]))
                _and(a, t[1], rd, t[1])
                _or(a, t[0], t[0], t[1])
            else:
                a.li(t[1], mk if k == 5 else ~mk)
                (_or if k == 5 else _and)(a, t[0], r1, t[1])
        return word(2, result(compute), regs=(rd, r1))
    if op == 0x7B and not (w >> 26) & 1:
        return _simd(w, word, result)
    return None


def _simd(w, word, result):
    op, f3, f7, rd, r1, r2 = _fields(w)
    f5, bits, mode = w >> 27, 8 if f3 & 1 else 16, f3 >> 1
    n = 32 // bits
    if 0x10 <= f5 <= 0x15 and mode in (0, 2):                 # dot products, vector or .sc
        k, acc = (f5 - 0x10) % 3, f5 >= 0x13
        sa, sb = k == 2, k != 0
        direct = rd not in (0, r1, r2)                        # accumulate in rD itself

        def body(a, t):
            s = rd if direct else t[2]
            if acc and not direct:
                a.mv(s, rd)
            for i in range(n):
                _lane(a, t[0], r1, i, bits, sa)
                if i == 0 or mode == 0:
                    _lane(a, t[1], r2, i if mode == 0 else 0, bits, sb)
                if i == 0 and not acc:
                    _mul(a, s, t[0], t[1])
                else:
                    _mul(a, t[0], t[0], t[1])
                    _add(a, s, s, t[0])
            if not direct:
                a.mv(rd, s)
        return word(2 if direct else 3, body)
    if mode != 0 and not (f5 == 0x17 and f3 <= 5):
        return None
    if f5 in (0x0B, 0x0C, 0x0D):                              # or, xor, and: lane-independent
        fn = {0x0B: _or, 0x0C: _xor, 0x0D: _and}[f5]
        return word(1, result(lambda a, t: fn(a, t[0], r1, r2)))
    if f5 in (0x00, 0x01):                                    # add, sub: carries stop at lane borders
        low = (0x7F7F7F7F if bits == 8 else 0x7FFF7FFF)

        def compute(a, t):
            a.li(t[2], low)
            if f5 == 0:                                      # ((a & low) + (b & low)) ^ ((a ^ b) & ~low)
                _and(a, t[0], r1, t[2])
                _and(a, t[1], r2, t[2])
                _add(a, t[0], t[0], t[1])
                _xor(a, t[1], r1, r2)
            else:                                            # ((a | ~low) - (b & low)) ^ (~(a ^ b) & ~low)
                _and(a, t[1], r2, t[2])
                a(_i(-1, t[2], 4, t[2]))
                _or(a, t[0], r1, t[2])
                _sub(a, t[0], t[0], t[1])
                _xor(a, t[1], r1, r2)
                a(_i(-1, t[1], 4, t[1]))
                a(_i(-1, t[2], 4, t[2]))
            a(_i(-1, t[2], 4, t[2]))
            _and(a, t[1], t[1], t[2])
            _xor(a, t[0], t[0], t[1])
        return word(3, result(compute))
    if f5 == 0x17:                                            # extract, extractu, insert with a lane index
        i, kind = (((w >> 25) & 1) | (r2 << 1)) & (n - 1), f3 >> 1
        if kind == 2:
            def compute(a, t):
                a.li(t[1], ~(((1 << bits) - 1) << (i * bits)))
                _slli(a, t[0], r1, 32 - bits)
                _srli(a, t[0], t[0], 32 - bits - i * bits)
                _and(a, t[1], rd, t[1])
                _or(a, t[0], t[0], t[1])
            return word(2, result(compute), regs=(rd, r1))
        return word(1, result(lambda a, t: _lane(a, t[0], r1, i, bits, kind == 0)), regs=(rd, r1))
    return None


def _minmax(branch_f3, take_b_if_a_first):
    """min/max: T0 = a; branch over the move of b when (a, b) already ordered."""
    def compute(a, t, r1, r2, rd):
        a.mv(t[0], r1)
        x, y = (r1, r2) if take_b_if_a_first else (r2, r1)
        a.branch(branch_f3, x, y, "keep")
        a.mv(t[0], r2)
        a.label("keep")
    return 1, compute


def _clip(f7):
    def compute(a, t, r1, r2, rd):                           # T0 = lo, T1 = hi
        if f7 < 0x3A:                                        # clip, clipu: the bound from the rs2 field
            a.li(t[1], (1 << (r2 - 1)) - 1 if r2 else 0)
            a.li(t[0], (-(1 << (r2 - 1)) if r2 else -1) if f7 == 0x38 else 0)
        else:                                                # clipr, clipur: b & 0x7fffffff
            _slli(a, t[1], r2, 1)
            _srli(a, t[1], t[1], 1)
            if f7 == 0x3A:
                a(_i(-1, t[1], 4, t[0]))
            else:
                a.li(t[0], 0)
        a.branch(5, t[0], r1, "done")                        # a <= lo: lo
        a.mv(t[0], t[1])
        a.branch(5, r1, t[1], "done")                        # a >= hi: hi
        a.mv(t[0], r1)
        a.label("done")
    return 2, compute


def _mac(sub):
    def compute(a, t, r1, r2, rd):
        _mul(a, t[0], r1, r2)
        (_sub if sub else _add)(a, t[0], rd, t[0])
    return 1, compute


def _addnr(logical):
    def compute(a, t, r1, r2, rd):
        _add(a, t[0], rd, r1)
        a(_r(0 if logical else 0x20, r2, t[0], 5, t[0]))     # srl / sra by rs2 & 31
    return 1, compute


def _ext(bits, signed):
    def compute(a, t, r1, r2, rd):
        _slli(a, t[0], r1, 32 - bits)
        (_srai if signed else _srli)(a, t[0], t[0], 32 - bits)
    return 1, compute


def _abs(a, t, r1, r2, rd):
    a.mv(t[0], r1)
    a.branch(5, r1, 0, "done")
    _sub(a, t[0], 0, r1)
    a.label("done")


def _ror(a, t, r1, r2, rd):
    a(_i(31, r2, 7, t[1]))
    a(_r(0, t[1], r1, 5, t[0]))                              # srl
    _sub(a, t[1], 0, t[1])
    a(_r(0, t[1], r1, 1, t[1]))                              # sll by (32 - n) & 31
    _or(a, t[0], t[0], t[1])


# cv ALU words (opcode 0x2b, funct3 011) by funct7: (temporaries, compute(asm, temps, rs1, rs2, rd))
_ALU = {
    0x20: (2, _ror), 0x28: (1, _abs),
    0x29: (1, lambda a, t, r1, r2, rd: (a(_r(0, r1, r2, 2, t[0])), a(_i(1, t[0], 4, t[0])))),   # slet
    0x2A: (1, lambda a, t, r1, r2, rd: (a(_r(0, r1, r2, 3, t[0])), a(_i(1, t[0], 4, t[0])))),   # sletu
    0x2B: _minmax(4, True), 0x2C: _minmax(6, True), 0x2D: _minmax(4, False), 0x2E: _minmax(6, False),
    0x30: _ext(16, True), 0x31: _ext(16, False), 0x32: _ext(8, True), 0x33: _ext(8, False),
    0x38: _clip(0x38), 0x39: _clip(0x39), 0x3A: _clip(0x3A), 0x3B: _clip(0x3B),
    0x40: _addnr(False), 0x41: _addnr(True), 0x48: _mac(False), 0x49: _mac(True),
}


# ---- stubs ---------------------------------------------------------------------------------
_POOL = (5, 6, 7, 28, 29, 30, 31, 8, 9, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 10, 11, 12, 13, 14, 15, 16, 17, 1)


def _with_scratch(a: _Asm, uses, n, body) -> None:
    """body(asm, temps) between saving n temporaries (not in uses) to the hart's scratch area and
    restoring them."""
    temps = [r for r in _POOL if r not in uses][:n]
    assert n <= _COUNT // 4
    for k, r in enumerate(temps):
        a(_s(a.scratch + _SAVE + 4 * k, r, _TP, 2))
    body(a, temps)
    for k, r in enumerate(temps):
        a(_i(a.scratch + _SAVE + 4 * k, _TP, 2, r, 0x03))


def _emit_word(a: _Asm, d: _Word) -> None:
    _with_scratch(a, d.uses, d.temps, d.body)


class _Loop(NamedTuple):
    L: int
    start: int
    end: int
    words: tuple[int, ...]             # addresses of its setup words


def _loops(code: dict[int, int], sizes: dict[int, int]) -> tuple[list[_Loop], set[int], list[tuple[int, str]]]:
    """Hardware loops set up by one run of consecutive words: rewritable loops, every hwloop
    word address, and (address, reason) of the loops that stay with the emulator."""
    hw = sorted(p for p, w in code.items() if sizes[p] == 4 and w & 0x707F == 0x402B)
    runs, loops, fallbacks, left_ends = [], [], [], set()
    for p in hw:
        if runs and runs[-1][-1] + 4 == p:
            runs[-1].append(p)
        else:
            runs.append([p])
    for run in runs:
        for L in (0, 1):
            mine = [(p, (code[p] >> 8) & 15) for p in run if (code[p] >> 7) & 1 == L]
            f4s = sorted(f for _, f in mine)
            if not mine:
                continue
            start = end = None
            for p, f4 in mine:
                w = code[p]
                if f4 in (6, 7):
                    start, end = p + 4, p + ((((w >> 15) & 31) if f4 == 6 else w >> 20) << 2)
                elif f4 == 0:
                    start = p + ((w >> 20) << 2)
                elif f4 == 2:
                    end = p + ((w >> 20) << 2)
            if f4s not in ([6], [7], [0, 2, 4], [0, 2, 5]):
                why = "not set up by setup/setupi or starti+endi+count(i)"
            elif sizes.get(end - 4) != 4 or start not in sizes or start >= end:
                why = "its last instruction is not a 32-bit one (compressed body: use .option norvc)"
            elif not _relocatable(code[end - 4]):
                why = f"its last instruction 0x{code[end - 4]:08x} cannot move into a stub"
            else:
                loops.append(_Loop(L, start, end, tuple(p for p, _ in mine)))
                continue
            fallbacks.append((run[0], f"hardware loop {L}: {why}"))
            left_ends.add(end)
    for lp in loops:                                          # the emulator's loop must see its end first
        if lp.end in left_ends:
            fallbacks.append((lp.words[0], f"hardware loop {lp.L}: ends at 0x{lp.end:x} like a loop left to "
                                           f"the emulator"))
    loops = [lp for lp in loops if lp.end not in left_ends]
    ends: dict[int, list[_Loop]] = {}
    for lp in loops:
        ends.setdefault(lp.end, []).append(lp)
    for e, group in ends.items():                             # one loop per (end, L)
        if len({lp.L for lp in group}) != len(group):
            for lp in group:
                fallbacks.append((lp.words[0], f"hardware loop {lp.L}: two loops {lp.L} end at 0x{e:x}"))
            loops = [lp for lp in loops if lp.end != e]
    return loops, set(hw), fallbacks


def _relocatable(w: int) -> bool:
    op = w & 0x7F
    if op in (0x0B, 0x2B, 0x5B, 0x7B):
        return _decode(w) is not None
    if op == 0x13 and w & 0xFFFFF == 0x2013:                 # a marker (slti x0, x0, id) stays in place
        return False
    fields = _X_FIELDS.get(op)
    return fields is not None and all((w >> k) & 31 != _TP for k in fields)   # tp is the stubs'


# relocatable RV32IMF opcodes: bit positions of their integer register fields (rd 7, rs1 15, rs2 20)
_X_FIELDS = {0x03: (7, 15), 0x07: (15,), 0x13: (7, 15), 0x23: (15, 20), 0x27: (15,), 0x33: (7, 15, 20),
             0x37: (7,), 0x43: (), 0x47: (), 0x4B: (), 0x4F: (), 0x53: (7, 15)}


def _loop_end(a: _Asm, group: list[_Loop]) -> None:
    """After the body's last instruction: count down (loop 0 first, as the emulator does), then
    to the start of the first loop not done, else past the end."""
    t, save = _POOL[0], a.scratch + _SAVE
    a(_s(save, t, _TP, 2))
    for lp in sorted(group, key=lambda lp: lp.L):
        c = a.scratch + _COUNT + 4 * lp.L
        a(_i(c, _TP, 2, t, 0x03))
        a.branch(0, t, 0, f"next{lp.L}")                      # inactive
        a(_i(-1, t, 0, t))
        a(_s(c, t, _TP, 2))
        a.branch(1, t, 0, f"back{lp.L}")
        a.label(f"next{lp.L}")
    for lp in [None] + group:
        if lp is not None:
            a.label(f"back{lp.L}")
        a(_i(save, _TP, 2, t, 0x03))
        a.goto(group[0].end if lp is None else lp.start)


def _set_count(a: _Asm, L: int, w: int, f4: int) -> None:
    c = a.scratch + _COUNT + 4 * L
    if f4 in (5, 7):                                          # count from rs1
        a(_s(c, (w >> 15) & 31, _TP, 2))
    else:
        _with_scratch(a, (), 1, lambda a, t: (a.li(t[0], w >> 20), a(_s(c, t[0], _TP, 2))))


def _instructions(data: bytes, addr: int) -> tuple[dict[int, int], dict[int, int]]:
    """Linear sweep of a code section: address -> word (16 or 32 bits), address -> size."""
    code, sizes, k = {}, {}, 0
    while k + 2 <= len(data):
        half = data[k] | data[k + 1] << 8
        size = 4 if half & 3 == 3 and k + 4 <= len(data) else 2
        code[addr + k] = struct.unpack_from("<I", data, k)[0] if size == 4 else half
        sizes[addr + k] = size
        k += size
    return code, sizes


def rewrite(elf: str | Path) -> Rewritten:
    """The derived image of ``elf`` with its translatable PULP words replaced by stubs."""
    elf = Path(elf)
    data = bytearray(elf.read_bytes())
    secs = sections(bytes(data))
    stub = [s for s in secs if s.name == STUB_SECTION]
    if not stub:
        raise BuildError(f"{elf}: no {STUB_SECTION} section: link with the Siracusa linker script "
                         f"(Deeploy.targets.siracusa.linker) or run with DEEPLOY_XPULP_STUBS=0")
    stub, scratch = stub[0], symbols(elf).get(SCRATCH)
    if scratch is None or scratch + 4 * SCRATCH_WORDS > 2048:
        raise BuildError(f"{elf}: no thread-local {SCRATCH} within 2 KiB of tp: link the Siracusa runtime "
                         f"(deeploy_xpulp_emu.c) or run with DEEPLOY_XPULP_STUBS=0")
    code, sizes, where = {}, {}, {}
    for s in secs:
        if s.flags & _SHF_EXECINSTR and s.name not in _SKIP and s.kind != 8:
            c, z = _instructions(bytes(data[s.offset:s.offset + s.size]), s.addr)
            code.update(c)
            sizes.update(z)
            where.update({p: s.offset + p - s.addr for p in c})
    loops, hw, fallbacks = _loops(code, sizes)
    ends: dict[int, list[_Loop]] = {}
    for lp in loops:
        ends.setdefault(lp.end - 4, []).append(lp)
    counts = {p: lp.L for lp in loops for p in lp.words if (code[p] >> 8) & 15 in (4, 5, 6, 7)}
    nops = {p for lp in loops for p in lp.words} - set(counts)
    sites: dict[int, int] = {}
    chains: dict[int, int] = {}          # final: from the first pass (the stubs' sizes do not depend on it)

    def layout(entries: dict[int, int]) -> bytearray:
        """Place every stub; returns the section's bytes and fills sites and chains."""
        out = bytearray()

        def place(p: int, emit, back: bool = True) -> None:
            cursor = stub.addr + len(out)
            a = _Asm(cursor + 4, scratch, entries)
            try:
                emit(a)
                if back:
                    a.goto(p + 4)
                words = [_NOP] + a.code()           # the chain entry: a nop before the stub
                patch = _jal(cursor + 4 - p)
            except OverflowError:
                raise BuildError(f"{elf}: the stub of the word at 0x{p:x} lies beyond jal range (1 MiB) of it: "
                                 f"run with DEEPLOY_XPULP_STUBS=0") from None
            if len(out) + 4 * len(words) > stub.size:
                raise BuildError(f"{elf}: the PULP stubs need more than the {stub.size} bytes {STUB_SECTION} "
                                 f"reserves: raise XPULP_STUB_BYTES (Deeploy.targets.siracusa.linker) or run with "
                                 f"DEEPLOY_XPULP_STUBS=0")
            out.extend(struct.pack(f"<{len(words)}I", *words))
            sites[p], chains[p] = code[p], cursor
            struct.pack_into("<I", data, where[p], patch)

        for p in sorted(code):
            w = code[p]
            if sizes[p] != 4:
                continue
            if p in ends:
                d = _decode(w) if w & 0x7F in (0x0B, 0x2B, 0x5B, 0x7B) else None
                place(p, lambda a, w=w, d=d, g=ends[p]: ((_emit_word(a, d) if d else a(w)), _loop_end(a, g)), False)
            elif p in counts:
                place(p, lambda a, w=w, L=counts[p]: _set_count(a, L, w, (w >> 8) & 15))
            elif p in nops:
                sites[p] = w
                struct.pack_into("<I", data, where[p], _NOP)
            elif p not in hw and w & 0x7F in (0x0B, 0x2B, 0x5B, 0x7B):
                d = _decode(w)
                if d is not None:
                    place(p, lambda a, d=d: _emit_word(a, d))
        return out

    layout({})
    out = layout(dict(chains))
    data[stub.offset:stub.offset + len(out)] = out
    return Rewritten(bytes(data), dict(sorted(sites.items())), chains, (stub.addr, stub.addr + stub.size),
                     len(out), fallbacks)
