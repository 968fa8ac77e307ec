"""Encodings of TargetLibraries/Siracusa/inc/deeploy_xpulp.h: every operation is compiled in a
function of its own (operands in a0, a1, a2: rD = a0, rs1 = a1, rs2 = a2 unless said otherwise)
for CORE-V (default) and XpulpV2 (-DDEEPLOY_XPULPV2=1), and the words are compared with the bit
patterns of the ISA documents: the CV32E40P user manual (docs/source/instruction_set_extensions.rst
of the pythondata-cpu-cv32e40p wheel) and GVSoC's isa_pulpv2.py. Patterns are written MSB first;
rd, rs1, rs2 stand for a 5-bit register field."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from DeeployTest.test_suite.conftest import REPO

CC = "riscv64-unknown-elf-gcc"
OBJDUMP = "riscv64-unknown-elf-objdump"
pytestmark = pytest.mark.skipif(shutil.which(CC) is None or shutil.which(OBJDUMP) is None,
                                reason="RISC-V toolchain missing: run `bash toolchain/install.sh`")

A0, A1, A2 = 10, 11, 12

# name: (C body using d, a, b (uint32_t) or p (const int8_t *, in a1) and r (int32_t, in a2),
#        CORE-V pattern, XpulpV2 pattern)
OPS = {
    # SIMD: CORE-V funct5 F 0 rs2 rs1 funct3 rD 1111011; XpulpV2 funct6 0 rs2 rs1 funct3 rD 1010111
    "sdotsp_b": ("return xpulp_sdotsp_b(d, a, b);",
                 "10101 0 0 rs2 rs1 001 rd 1111011", "101110 0 rs2 rs1 001 rd 1010111"),
    "sdotsp_h": ("return xpulp_sdotsp_h(d, a, b);",
                 "10101 0 0 rs2 rs1 000 rd 1111011", "101110 0 rs2 rs1 000 rd 1010111"),
    "sdotup_b": ("return xpulp_sdotup_b(d, a, b);",
                 "10011 0 0 rs2 rs1 001 rd 1111011", "101000 0 rs2 rs1 001 rd 1010111"),
    "sdotusp_b": ("return xpulp_sdotusp_b(d, a, b);",
                  "10100 0 0 rs2 rs1 001 rd 1111011", "101010 0 rs2 rs1 001 rd 1010111"),
    "sdotusp_h": ("return xpulp_sdotusp_h(d, a, b);",
                  "10100 0 0 rs2 rs1 000 rd 1111011", "101010 0 rs2 rs1 000 rd 1010111"),
    "dotsp_b": ("return xpulp_dotsp_b(a, b);",
                "10010 0 0 rs2 rs1 001 rd 1111011", "100110 0 rs2 rs1 001 rd 1010111"),
    "dotup_h": ("return xpulp_dotup_h(a, b);",
                "10000 0 0 rs2 rs1 000 rd 1111011", "100000 0 rs2 rs1 000 rd 1010111"),
    "dotusp_b": ("return xpulp_dotusp_b(a, b);",
                 "10001 0 0 rs2 rs1 001 rd 1111011", "100010 0 rs2 rs1 001 rd 1010111"),
    "add_b": ("return xpulp_add_b(a, b);", "00000 0 0 rs2 rs1 001 rd 1111011", "000000 0 rs2 rs1 001 rd 1010111"),
    "add_h": ("return xpulp_add_h(a, b);", "00000 0 0 rs2 rs1 000 rd 1111011", "000000 0 rs2 rs1 000 rd 1010111"),
    "sub_b": ("return xpulp_sub_b(a, b);", "00001 0 0 rs2 rs1 001 rd 1111011", "000010 0 rs2 rs1 001 rd 1010111"),
    "min_h": ("return xpulp_min_h(a, b);", "00100 0 0 rs2 rs1 000 rd 1111011", "001000 0 rs2 rs1 000 rd 1010111"),
    "minu_b": ("return xpulp_minu_b(a, b);", "00101 0 0 rs2 rs1 001 rd 1111011", "001010 0 rs2 rs1 001 rd 1010111"),
    "max_b": ("return xpulp_max_b(a, b);", "00110 0 0 rs2 rs1 001 rd 1111011", "001100 0 rs2 rs1 001 rd 1010111"),
    "maxu_h": ("return xpulp_maxu_h(a, b);", "00111 0 0 rs2 rs1 000 rd 1111011", "001110 0 rs2 rs1 000 rd 1010111"),
    "sra_h": ("return xpulp_sra_h(a, b);", "01001 0 0 rs2 rs1 000 rd 1111011", "010010 0 rs2 rs1 000 rd 1010111"),
    "srl_b": ("return xpulp_srl_b(a, b);", "01000 0 0 rs2 rs1 001 rd 1111011", "010000 0 rs2 rs1 001 rd 1010111"),
    "sll_h": ("return xpulp_sll_h(a, b);", "01010 0 0 rs2 rs1 000 rd 1111011", "010100 0 rs2 rs1 000 rd 1010111"),
    "and_b": ("return xpulp_and_b(a, b);", "01101 0 0 rs2 rs1 001 rd 1111011", "011010 0 rs2 rs1 001 rd 1010111"),
    "or_b": ("return xpulp_or_b(a, b);", "01011 0 0 rs2 rs1 001 rd 1111011", "010110 0 rs2 rs1 001 rd 1010111"),
    "xor_b": ("return xpulp_xor_b(a, b);", "01100 0 0 rs2 rs1 001 rd 1111011", "011000 0 rs2 rs1 001 rd 1010111"),
    "abs_b": ("return xpulp_abs_b(a);", "01110 0 0 00000 rs1 001 rd 1111011", "0111000 00000 rs1 001 rd 1010111"),
    "shuffle_b": ("return xpulp_shuffle_b(a, b);",
                  "11000 0 0 rs2 rs1 001 rd 1111011", "110000 0 rs2 rs1 001 rd 1010111"),
    "shuffle2_h": ("return xpulp_shuffle2_h(d, a, b);",
                   "11100 0 0 rs2 rs1 000 rd 1111011", "110010 0 rs2 rs1 000 rd 1010111"),
    # lane index 3 of .b: Imm6 = 3, bit 25 = Imm6[0], bits 24:20 = Imm6[5:1]
    "extract_b": ("return xpulp_extract_b(a, 3);",
                  "10111 0 1 00001 rs1 001 rd 1111011", "011110 1 00001 rs1 111 rd 1010111"),
    "extractu_h": ("return xpulp_extractu_h(a, 1);",
                   "10111 0 1 00000 rs1 010 rd 1111011", "100100 1 00000 rs1 110 rd 1010111"),
    "insert_b": ("return xpulp_insert_b(d, a, 2);",
                 "10111 0 0 00001 rs1 101 rd 1111011", "101100 0 00001 rs1 111 rd 1010111"),
    # scalar ALU and MAC: CORE-V funct7 rs2 rs1 011 rD 0101011; XpulpV2 opcode 0110011
    "mac": ("return xpulp_mac(d, a, b);", "1001000 rs2 rs1 011 rd 0101011", "0100001 rs2 rs1 000 rd 0110011"),
    "msu": ("return xpulp_msu(d, a, b);", "1001001 rs2 rs1 011 rd 0101011", "0100001 rs2 rs1 001 rd 0110011"),
    # add with a register normalisation: cv.addNr (opcode 0101011) / p.addN (opcode 1011011)
    "addnr": ("return xpulp_addnr(d, a, b);", "1000000 rs2 rs1 011 rd 0101011", "0100000 rs2 rs1 010 rd 1011011"),
    "addunr": ("return xpulp_addunr(d, a, b);", "1000001 rs2 rs1 011 rd 0101011", "1100000 rs2 rs1 010 rd 1011011"),
    "min": ("return xpulp_min(a, b);", "0101011 rs2 rs1 011 rd 0101011", "0000010 rs2 rs1 100 rd 0110011"),
    "maxu": ("return xpulp_maxu(a, b);", "0101110 rs2 rs1 011 rd 0101011", "0000010 rs2 rs1 111 rd 0110011"),
    "abs": ("return xpulp_abs(a);", "0101000 00000 rs1 011 rd 0101011", "0000010 00000 rs1 000 rd 0110011"),
    "clipr": ("return xpulp_clipr(a, b);", "0111010 rs2 rs1 011 rd 0101011", "0001010 rs2 rs1 101 rd 0110011"),
    "clipur": ("return xpulp_clipur(a, b);", "0111011 rs2 rs1 011 rd 0101011", "0001010 rs2 rs1 110 rd 0110011"),
    "clip": ("return xpulp_clip(a, 8);", "0111000 01000 rs1 011 rd 0101011", "0001010 01000 rs1 001 rd 0110011"),
    "clipu": ("return xpulp_clipu(a, 9);", "0111001 01001 rs1 011 rd 0101011", "0001010 01001 rs1 010 rd 0110011"),
    "ror": ("return xpulp_ror(a, b);", "0100000 rs2 rs1 011 rd 0101011", "0000100 rs2 rs1 101 rd 0110011"),
    "ff1": ("return xpulp_ff1(a);", "0100001 00000 rs1 011 rd 0101011", "0001000 00000 rs1 000 rd 0110011"),
    "fl1": ("return xpulp_fl1(a);", "0100010 00000 rs1 011 rd 0101011", "0001000 00000 rs1 001 rd 0110011"),
    "clb": ("return xpulp_clb(a);", "0100011 00000 rs1 011 rd 0101011", "0001000 00000 rs1 010 rd 0110011"),
    "cnt": ("return xpulp_cnt(a);", "0100100 00000 rs1 011 rd 0101011", "0001000 00000 rs1 011 rd 0110011"),
    # bit fields, width 5 (Is3 = 4), position 9 (Is2)
    "extract": ("return xpulp_extract(a, 5, 9);",
                "00 00100 01001 rs1 000 rd 1011011", "11 00100 01001 rs1 000 rd 0110011"),
    "extractu": ("return xpulp_extractu(a, 5, 9);",
                 "01 00100 01001 rs1 000 rd 1011011", "11 00100 01001 rs1 001 rd 0110011"),
    "insert": ("return xpulp_insert(d, a, 5, 9);",
               "10 00100 01001 rs1 000 rd 1011011", "11 00100 01001 rs1 010 rd 0110011"),
    "bclr": ("return xpulp_bclr(a, 5, 9);", "00 00100 01001 rs1 001 rd 1011011", "11 00100 01001 rs1 011 rd 0110011"),
    "bset": ("return xpulp_bset(a, 5, 9);", "01 00100 01001 rs1 001 rd 1011011", "11 00100 01001 rs1 100 rd 0110011"),
    # loads: post-increment by 4 (imm), by rs2, at rs1 + rs2
    "lw_postinc": ("return xpulp_lw_postinc(p, 4);",
                   "000000000100 rs1 010 rd 0001011", "000000000100 rs1 010 rd 0001011"),
    "lbu_postinc": ("return xpulp_lbu_postinc(p, -1);",
                    "111111111111 rs1 100 rd 0001011", "111111111111 rs1 100 rd 0001011"),
    "lh_postinc_r": ("return xpulp_lh_postinc_r(p, r);",
                     "0000001 rs2 rs1 011 rd 0101011", "0001000 rs2 rs1 111 rd 0001011"),
    "lbu_postinc_r": ("return xpulp_lbu_postinc_r(p, r);",
                      "0001000 rs2 rs1 011 rd 0101011", "0100000 rs2 rs1 111 rd 0001011"),
    "lw_rr": ("return xpulp_lw_rr(p, r);", "0000110 rs2 rs1 011 rd 0101011", "0010000 rs2 rs1 111 rd 0000011"),
    "lhu_rr": ("return xpulp_lhu_rr(p, r);", "0001101 rs2 rs1 011 rd 0101011", "0101000 rs2 rs1 111 rd 0000011"),
    "lb_rr": ("return xpulp_lb_rr(p, r);", "0000100 rs2 rs1 011 rd 0101011", "0000000 rs2 rs1 111 rd 0000011"),
}
# the same words from the text forms for hand-written asm blocks (XPULP_ASM_*)
OPS.update({f"asm_{name}": (body, *OPS[name][1:]) for name, body in {
    "sdotsp_b": '__asm__(XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%0", "%1", "%2") : "+r"(d) : "r"(a), "r"(b)); return d;',
    "sdotusp_h": '__asm__(XPULP_ASM_SIMD(XPULP_SIMD_SDOTUSP, 0, "%0", "%1", "%2") : "+r"(d) : "r"(a), "r"(b)); '
                 'return d;',
    "mac": '__asm__(XPULP_ASM_ALU(XPULP_ALU_MAC, "%0", "%1", "%2") : "+r"(d) : "r"(a), "r"(b)); return d;',
    "cnt": '__asm__(XPULP_ASM_ALU(XPULP_ALU_CNT, "%0", "%1", "x0") : "=r"(d) : "r"(a)); return d;',
    "clipu": '__asm__(XPULP_ASM_CLIP(1, "%0", "%1", 9) : "=r"(d) : "r"(a)); return d;',
    "lbu_postinc": '__asm__ volatile(XPULP_ASM_LD_PI(4, "%0", "%1", -1) : "=&r"(d), "+r"(p) :: "memory"); '
                   'return d;',
    "lbu_postinc_r": '__asm__ volatile(XPULP_ASM_LD_RR(8, 1, "%0", "%1", "%2") : "=&r"(d), "+r"(p) : "r"(r) '
                     ': "memory"); return d;',
    "lw_rr": '__asm__ volatile(XPULP_ASM_LD_RR(2, 0, "%0", "%1", "%2") : "=r"(d) : "r"(p), "r"(r) : "memory"); '
             'return d;',
}.items()})
# stores: value d (a0), base q (a1), increment / offset r (a2): CORE-V rs3 (the register) sits in
# the rd field; the immediate form splits imm[11:5] / imm[4:0] around rs2, rs1, funct3
STORES = {
    "sw_postinc": ("xpulp_sw_postinc(q, d, 8);",
                   "0000000 rs2 rs1 010 01000 0101011", "0000000 rs2 rs1 010 01000 0101011"),
    "sh_postinc": ("xpulp_sh_postinc(q, d, -2);",
                   "1111111 rs2 rs1 001 11110 0101011", "1111111 rs2 rs1 001 11110 0101011"),
    "sb_postinc_r": ("xpulp_sb_postinc_r(q, d, r);",
                     "0010000 rs2 rs1 011 rs3 0101011", "0000000 rs2 rs1 100 rs3 0101011"),
    "sw_postinc_r": ("xpulp_sw_postinc_r(q, d, r);",
                     "0010010 rs2 rs1 011 rs3 0101011", "0000000 rs2 rs1 110 rs3 0101011"),
    "sh_rr": ("xpulp_sh_rr(q, d, r);", "0010101 rs2 rs1 011 rs3 0101011", "0000000 rs2 rs1 101 rs3 0100011"),
    "sw_rr": ("xpulp_sw_rr(q, d, r);", "0010110 rs2 rs1 011 rs3 0101011", "0000000 rs2 rs1 110 rs3 0100011"),
}
STORES["asm_sh_postinc"] = ('__asm__ volatile(XPULP_ASM_ST_PI(1, "%1", "%0", -2) : "+r"(q) : "r"(d) : "memory");',
                            *STORES["sh_postinc"][1:])
# hardware loops, count register a1, loop body of 2 instructions after the setup (end = 3 words
# on from the setup with CORE-V; XpulpV2's end is the last instruction: 2 words = 4 half-words)
LOOPS = {
    "setup0": ('XPULP_LP_SETUP(0, "%[n]", "1f") "nop\\nnop\\n1:\\n"',
               "000000000011 rs1 100 0111 0 0101011", "000000000100 rs1 100 0000 0 1111011"),
    "setup1": ('XPULP_LP_SETUP(1, "%[n]", "1f") "nop\\nnop\\n1:\\n"',
               "000000000011 rs1 100 0111 1 0101011", "000000000100 rs1 100 0000 1 1111011"),
    "setupi": ('XPULP_LP_SETUPI(0, 100, "1f") "nop\\nnop\\n1:\\n"',
               "000001100100 00011 100 0110 0 0101011", "000001100100 00100 101 0000 0 1111011"),
    "count": ('XPULP_LP_COUNT(1, "%[n]")', "000000000000 rs1 100 0101 1 0101011", "000000000000 rs1 010 0000 1 1111011"),
    "counti": ("XPULP_LP_COUNTI(0, 7)", "000000000111 00000 100 0100 0 0101011", "000000000111 00000 011 0000 0 1111011"),
    "starti": ('XPULP_LP_STARTI(0, "1f") "nop\\n1:\\n"',
               "000000000010 00000 100 0000 0 0101011", "000000000100 00000 000 0000 0 1111011"),
    "endi": ('XPULP_LP_ENDI(1, "1f") "nop\\nnop\\n1:\\n"',
             "000000000011 00000 100 0010 1 0101011", "000000000100 00000 001 0000 1 1111011"),
}


def pattern_word(pattern: str, regs: dict[str, int]) -> int:
    bits = ""
    for tok in pattern.split():
        bits += format(regs[tok], "05b") if tok in regs else tok
    assert len(bits) == 32 and set(bits) <= {"0", "1"}, pattern
    return int(bits, 2)


def source() -> str:
    lines = ["#include <stdint.h>", '#include "deeploy_xpulp.h"']
    for name, (body, _, _) in OPS.items():
        lines.append(f"uint32_t op_{name}(uint32_t d, const int8_t *p, int32_t r) {{ uint32_t a = (uint32_t)p, b = r; "
                     f"(void)a; (void)b; (void)d; {body} }}")
    for name, (body, _, _) in STORES.items():
        lines.append(f"int8_t *st_{name}(uint32_t d, int8_t *q, int32_t r) {{ {body} return q; }}")
    for name, (body, _, _) in LOOPS.items():
        lines.append(f"void lp_{name}(uint32_t d, uint32_t n) {{ __asm__ volatile(XPULP_LOOP_BEGIN {body} "
                     f"XPULP_LOOP_FINISH :: [n] \"r\"(n)); }}")
    return "\n".join(lines) + "\n"


def custom_words(obj) -> dict[str, list[int]]:
    """Function name -> the 32-bit words with a PULP opcode, in order."""
    dump = subprocess.run([OBJDUMP, "-d", str(obj)], capture_output=True, text=True, check=True).stdout
    out: dict[str, list[int]] = {}
    fn = None
    for line in dump.splitlines():
        m = re.match(r"^[0-9a-f]+ <(\w+)>:", line)
        if m:
            fn = m.group(1)
            out[fn] = []
            continue
        m = re.match(r"^\s+[0-9a-f]+:\s+([0-9a-f]{8})\s", line)
        if m and fn:
            w = int(m.group(1), 16)
            if w & 0x7F in (0x0B, 0x2B, 0x5B, 0x7B, 0x57, 0x33, 0x03, 0x23) and (w & 0x7F not in (0x33, 0x03, 0x23)
                                                                                 or _pulp_in_base_opcode(w)):
                out[fn].append(w)
    return out


def _pulp_in_base_opcode(w: int) -> bool:
    """XpulpV2 words in RV32 base opcodes: OP with funct7 not 0/0x20/1, loads/stores with funct3 111/1xx."""
    op, f3, f7 = w & 0x7F, (w >> 12) & 7, w >> 25
    if op == 0x33:
        return f7 not in (0x00, 0x20, 0x01)
    if op == 0x03:
        return f3 == 7
    return f3 >= 4   # 0x23 stores: sb/sh/sw are funct3 0..2


@pytest.fixture(scope="module", params=[0, 1], ids=["corev", "xpulpv2"])
def words(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"xpulp{request.param}")
    (tmp / "ops.c").write_text(source())
    obj = tmp / "ops.o"
    subprocess.run([CC, "-march=rv32imafc", "-mabi=ilp32f", "-misa-spec=2.2", "--specs=picolibc.specs", "-O2",
                    f"-DDEEPLOY_XPULPV2={request.param}", "-I", str(REPO / "TargetLibraries/Siracusa/inc"),
                    "-c", str(tmp / "ops.c"), "-o", str(obj)], check=True)
    return request.param, custom_words(obj)


@pytest.mark.parametrize("name", list(OPS))
def test_operation_words(words, name):
    v2, found = words
    _, corev, xpulpv2 = OPS[name]
    want = pattern_word(xpulpv2 if v2 else corev, {"rd": A0, "rs1": A1, "rs2": A2})
    assert found[f"op_{name}"] == [want], (name, [hex(w) for w in found[f"op_{name}"]], hex(want))


@pytest.mark.parametrize("name", list(STORES))
def test_store_words(words, name):
    v2, found = words
    _, corev, xpulpv2 = STORES[name]
    want = pattern_word(xpulpv2 if v2 else corev, {"rs2": A0, "rs1": A1, "rs3": A2})
    assert found[f"st_{name}"] == [want], (name, [hex(w) for w in found[f"st_{name}"]], hex(want))


@pytest.mark.parametrize("name", list(LOOPS))
def test_hardware_loop_words(words, name):
    v2, found = words
    _, corev, xpulpv2 = LOOPS[name]
    want = pattern_word(xpulpv2 if v2 else corev, {"rs1": A1})
    assert found[f"lp_{name}"] == [want], (name, [hex(w) for w in found[f"lp_{name}"]], hex(want))


def test_documented_example_word():
    """GVSoC's ISA file shows pv.sdotsp.b a0, a1, a2 as 0xb8c59557 (pulp-core spec)."""
    assert pattern_word(OPS["sdotsp_b"][2], {"rd": A0, "rs1": A1, "rs2": A2}) == 0xB8C59557


def test_network_kernels_assemble_for_xpulpv2(tmp_path, capsys):
    """A generated network's kernels spell some instruction fields into their assembly text
    (``.insn`` lines of the lane loops: softmax, element-wise, RequantShift, iRMSNorm); those
    fields must be expressions the assembler evaluates for XpulpV2 too (it has no ``?:``)."""
    from Deeploy.cli import main
    out = tmp_path / "net"
    assert main(["compile", str(REPO / "DeeployTest/Tests/Models/microLlama/microLlama32/network.onnx"),
                 "--platform", "Siracusa", "-o", str(out)]) == 0
    capsys.readouterr()
    lanes = {"isoftmax_rq_xp", "requant_shift_xp", "irmsnorm_xp", "add_rq", "mul_rq"}
    assert lanes <= set(re.findall(r'#include "kernels/(\w+)\.inc"', (out / "Network.c").read_text()))
    done = subprocess.run([CC, "-march=rv32imfc", "-mabi=ilp32f", "-misa-spec=2.2", "--specs=picolibc.specs", "-O2",
                           "-DDEEPLOY_NUM_CORES=8", "-DDEEPLOY_XPULP=1", "-DDEEPLOY_XPULPV2=1", "-I", str(out),
                           "-I", str(out / "include"), "-c", str(out / "Network.c"), "-o", str(tmp_path / "n.o")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
