/* The PULP DSP extension of the cluster cores as inline assembly: packed SIMD on 8- and 16-bit
 * lanes (dot products, ALU, shuffle, extract/insert), post-increment and register-offset loads and
 * stores, MAC/MSU, clip, bit manipulation and hardware loops.
 *
 * Default: the CORE-V encodings of CV32E40P v2 (`cv.*`, custom opcodes 0x0b/0x2b/0x5b/0x7b;
 * CV32E40P user manual, "CORE-V Instruction Set Custom Extensions"); the QEMU runner rewrites them
 * into RV32IM stubs (Deeploy/targets/pulp/stubs.py), the rest go through the runtime's
 * trap-and-emulate (deeploy_xpulp_emu.c). -DDEEPLOY_XPULPV2=1 emits the
 * XpulpV2 encodings of RI5CY (`p.*`, `pv.*`, `lp.*`: opcodes 0x0b/0x2b/0x03/0x23/0x33/0x5b/0x57/
 * 0x7b; GVSoC isa_pulpv2.py) for Siracusa silicon and its reference simulator instead. GCC and
 * binutils know neither mnemonic set: every word is built with `.insn` (or `.word` where a field
 * holds a label distance or a register number), so any toolchain that assembles RV32 emits them.
 *
 * Operand order follows the manuals: acc is rD (read and written), a is rs1, b is rs2. Lanes: index
 * 0 is the least significant byte / half-word. Immediates must be compile-time constants. */
#ifndef DEEPLOY_XPULP_H
#define DEEPLOY_XPULP_H

#include <stdint.h>

#ifndef DEEPLOY_XPULPV2
#define DEEPLOY_XPULPV2 0
#endif

#define XPULP_STR_(x) #x
#define XPULP_STR(x) XPULP_STR_(x)

/* Register numbers of the ABI names, for fields that `.insn` cannot fill (`.word` expressions):
 * `.Lxpulp_reg_%[r]` is the number of the register that operand r was given. */
__asm__(".ifndef .Lxpulp_reg_zero\n"
        ".set .Lxpulp_reg_zero, 0\n.set .Lxpulp_reg_ra, 1\n.set .Lxpulp_reg_sp, 2\n"
        ".set .Lxpulp_reg_gp, 3\n.set .Lxpulp_reg_tp, 4\n.set .Lxpulp_reg_t0, 5\n"
        ".set .Lxpulp_reg_t1, 6\n.set .Lxpulp_reg_t2, 7\n.set .Lxpulp_reg_s0, 8\n"
        ".set .Lxpulp_reg_s1, 9\n.set .Lxpulp_reg_a0, 10\n.set .Lxpulp_reg_a1, 11\n"
        ".set .Lxpulp_reg_a2, 12\n.set .Lxpulp_reg_a3, 13\n.set .Lxpulp_reg_a4, 14\n"
        ".set .Lxpulp_reg_a5, 15\n.set .Lxpulp_reg_a6, 16\n.set .Lxpulp_reg_a7, 17\n"
        ".set .Lxpulp_reg_s2, 18\n.set .Lxpulp_reg_s3, 19\n.set .Lxpulp_reg_s4, 20\n"
        ".set .Lxpulp_reg_s5, 21\n.set .Lxpulp_reg_s6, 22\n.set .Lxpulp_reg_s7, 23\n"
        ".set .Lxpulp_reg_s8, 24\n.set .Lxpulp_reg_s9, 25\n.set .Lxpulp_reg_s10, 26\n"
        ".set .Lxpulp_reg_s11, 27\n.set .Lxpulp_reg_t3, 28\n.set .Lxpulp_reg_t4, 29\n"
        ".set .Lxpulp_reg_t5, 30\n.set .Lxpulp_reg_t6, 31\n"
        ".endif\n");

/* 12-bit field [31:20] of an I-type word as the signed immediate `.insn i` takes. */
#define XPULP_IMM12(v) ((((v) & 0xfff) ^ 0x800) - 0x800)

/* ---- encoding table: (opcode, funct3, funct7) per operation, CORE-V | XpulpV2 --------------------
 * R-type ops: rd = op(rs1, rs2). SIMD: CORE-V opcode 0x7b, funct7 = funct5 << 2 (F = 0);
 * XpulpV2 opcode 0x57, funct7 = funct6 << 1. funct3 000 = .h, 001 = .b in both. */
#if !DEEPLOY_XPULPV2
#define XPULP_SIMD_OPC 0x7b
#define XPULP_SIMD_F7(cv, pv) ((cv) << 2)
#else
#define XPULP_SIMD_OPC 0x57
#define XPULP_SIMD_F7(cv, pv) ((pv) << 1)
#endif

/* funct5 (CORE-V) and funct6 (XpulpV2) of the SIMD operations */
#define XPULP_SIMD_ADD 0x00, 0x00
#define XPULP_SIMD_SUB 0x01, 0x02
#define XPULP_SIMD_MIN 0x04, 0x08
#define XPULP_SIMD_MINU 0x05, 0x0a
#define XPULP_SIMD_MAX 0x06, 0x0c
#define XPULP_SIMD_MAXU 0x07, 0x0e
#define XPULP_SIMD_SRL 0x08, 0x10
#define XPULP_SIMD_SRA 0x09, 0x12
#define XPULP_SIMD_SLL 0x0a, 0x14
#define XPULP_SIMD_AND 0x0d, 0x1a
#define XPULP_SIMD_OR 0x0b, 0x16
#define XPULP_SIMD_XOR 0x0c, 0x18
#define XPULP_SIMD_DOTUP 0x10, 0x20
#define XPULP_SIMD_DOTUSP 0x11, 0x22
#define XPULP_SIMD_DOTSP 0x12, 0x26
#define XPULP_SIMD_SDOTUP 0x13, 0x28
#define XPULP_SIMD_SDOTUSP 0x14, 0x2a
#define XPULP_SIMD_SDOTSP 0x15, 0x2e
#define XPULP_SIMD_SHUFFLE 0x18, 0x30
#define XPULP_SIMD_SHUFFLE2 0x1c, 0x32

#define XPULP_SIMD_F7_(...) XPULP_SIMD_F7(__VA_ARGS__)
/* an R-type word on the operand strings rd, a, b (e.g. "%[acc]") */
#define XPULP_ASM_R__(opc, f3, f7, rd, a, b)                                                       \
  ".insn r " XPULP_STR(opc) ", " XPULP_STR(f3) ", " XPULP_STR(f7) ", " rd ", " a ", " b "\n"
#define XPULP_ASM_R_(...) XPULP_ASM_R__(__VA_ARGS__)
#define XPULP_INSN_R(opc, f3, f7) XPULP_ASM_R__(opc, f3, f7, "%0", "%1", "%2")

/* rd = op(a, b) on lanes; W: 0 = .h, 1 = .b */
#define XPULP_DEF_SIMD(name, op, w)                                                                \
  static inline uint32_t name(uint32_t a, uint32_t b) {                                          \
    uint32_t r;                                                                                    \
    __asm__(XPULP_INSN_R(XPULP_SIMD_OPC, w, XPULP_SIMD_F7_(op)) : "=r"(r) : "r"(a), "r"(b));        \
    return r;                                                                                      \
  }
/* acc = op(acc, a, b): rD is read too (dot products with accumulate, shuffle2, packs) */
#define XPULP_DEF_SIMD_ACC(name, op, w)                                                            \
  static inline uint32_t name(uint32_t acc, uint32_t a, uint32_t b) {                            \
    __asm__(XPULP_INSN_R(XPULP_SIMD_OPC, w, XPULP_SIMD_F7_(op)) : "+r"(acc) : "r"(a), "r"(b));      \
    return acc;                                                                                    \
  }

XPULP_DEF_SIMD(xpulp_add_h, XPULP_SIMD_ADD, 0)
XPULP_DEF_SIMD(xpulp_add_b, XPULP_SIMD_ADD, 1)
XPULP_DEF_SIMD(xpulp_sub_h, XPULP_SIMD_SUB, 0)
XPULP_DEF_SIMD(xpulp_sub_b, XPULP_SIMD_SUB, 1)
XPULP_DEF_SIMD(xpulp_min_h, XPULP_SIMD_MIN, 0)
XPULP_DEF_SIMD(xpulp_min_b, XPULP_SIMD_MIN, 1)
XPULP_DEF_SIMD(xpulp_minu_h, XPULP_SIMD_MINU, 0)
XPULP_DEF_SIMD(xpulp_minu_b, XPULP_SIMD_MINU, 1)
XPULP_DEF_SIMD(xpulp_max_h, XPULP_SIMD_MAX, 0)
XPULP_DEF_SIMD(xpulp_max_b, XPULP_SIMD_MAX, 1)
XPULP_DEF_SIMD(xpulp_maxu_h, XPULP_SIMD_MAXU, 0)
XPULP_DEF_SIMD(xpulp_maxu_b, XPULP_SIMD_MAXU, 1)
XPULP_DEF_SIMD(xpulp_srl_h, XPULP_SIMD_SRL, 0)
XPULP_DEF_SIMD(xpulp_srl_b, XPULP_SIMD_SRL, 1)
XPULP_DEF_SIMD(xpulp_sra_h, XPULP_SIMD_SRA, 0)
XPULP_DEF_SIMD(xpulp_sra_b, XPULP_SIMD_SRA, 1)
XPULP_DEF_SIMD(xpulp_sll_h, XPULP_SIMD_SLL, 0)
XPULP_DEF_SIMD(xpulp_sll_b, XPULP_SIMD_SLL, 1)
XPULP_DEF_SIMD(xpulp_and_b, XPULP_SIMD_AND, 1)
XPULP_DEF_SIMD(xpulp_or_b, XPULP_SIMD_OR, 1)
XPULP_DEF_SIMD(xpulp_xor_b, XPULP_SIMD_XOR, 1)
XPULP_DEF_SIMD(xpulp_dotup_h, XPULP_SIMD_DOTUP, 0)
XPULP_DEF_SIMD(xpulp_dotup_b, XPULP_SIMD_DOTUP, 1)
XPULP_DEF_SIMD(xpulp_dotusp_h, XPULP_SIMD_DOTUSP, 0)
XPULP_DEF_SIMD(xpulp_dotusp_b, XPULP_SIMD_DOTUSP, 1)
XPULP_DEF_SIMD(xpulp_dotsp_h, XPULP_SIMD_DOTSP, 0)
XPULP_DEF_SIMD(xpulp_dotsp_b, XPULP_SIMD_DOTSP, 1)
XPULP_DEF_SIMD(xpulp_shuffle_h, XPULP_SIMD_SHUFFLE, 0)
XPULP_DEF_SIMD(xpulp_shuffle_b, XPULP_SIMD_SHUFFLE, 1)
XPULP_DEF_SIMD_ACC(xpulp_sdotup_h, XPULP_SIMD_SDOTUP, 0)
XPULP_DEF_SIMD_ACC(xpulp_sdotup_b, XPULP_SIMD_SDOTUP, 1)
XPULP_DEF_SIMD_ACC(xpulp_sdotusp_h, XPULP_SIMD_SDOTUSP, 0)
XPULP_DEF_SIMD_ACC(xpulp_sdotusp_b, XPULP_SIMD_SDOTUSP, 1)
XPULP_DEF_SIMD_ACC(xpulp_sdotsp_h, XPULP_SIMD_SDOTSP, 0)
XPULP_DEF_SIMD_ACC(xpulp_sdotsp_b, XPULP_SIMD_SDOTSP, 1)
XPULP_DEF_SIMD_ACC(xpulp_shuffle2_h, XPULP_SIMD_SHUFFLE2, 0)
XPULP_DEF_SIMD_ACC(xpulp_shuffle2_b, XPULP_SIMD_SHUFFLE2, 1)

/* Lane abs: rs2 field 0. CORE-V funct5 01110; XpulpV2 funct7 0111000. */
#if !DEEPLOY_XPULPV2
#define XPULP_ABS_LANES(w) ".insn r 0x7b, " #w ", 0x38, %0, %1, x0"
#else
#define XPULP_ABS_LANES(w) ".insn r 0x57, " #w ", 0x38, %0, %1, x0"
#endif
static inline uint32_t xpulp_abs_h(uint32_t a) {
  uint32_t r;
  __asm__(XPULP_ABS_LANES(0) : "=r"(r) : "r"(a));
  return r;
}
static inline uint32_t xpulp_abs_b(uint32_t a) {
  uint32_t r;
  __asm__(XPULP_ABS_LANES(1) : "=r"(r) : "r"(a));
  return r;
}

/* Lane extract / extractu / insert with a lane index: the index sits in bit 25 (bit 0 of Imm6) and
 * bits 24:20 (Imm6[5:1]) in both ISAs. CORE-V: funct5 10111, funct3 000/001 extract.{h,b},
 * 010/011 extractu, 100/101 insert. XpulpV2: funct3 110 (.h) / 111 (.b), funct6 011110 extract,
 * 100100 extractu, 101100 insert. */
#define XPULP_LANE_IMM(i) ((((i) & 1) << 5) | (((i) >> 1) & 0x1f))
#if !DEEPLOY_XPULPV2
#define XPULP_LANE_OP(kind, w) 0x7b, (2 * (kind) + (w)), (0x17 << 7)
#else
/* funct6 011110 / 100100 / 101100 (30, 36, 44) for kind 0 / 1 / 2 as plain arithmetic: kernels
 * spell these fields into their assembly text, and the assembler has no ?: */
#define XPULP_LANE_OP(kind, w) 0x57, (6 + (w)), ((30 + 6 * (kind) + (kind) * ((kind)-1)) << 6)
#endif
#define XPULP_LANE_INSN_(opc, f3, hi) ".insn i " XPULP_STR(opc) ", %c[fn3], %0, %1, %c[imm]"
#define XPULP_LANE_INSN(...) XPULP_LANE_INSN_(__VA_ARGS__)
#define XPULP_LANE_F3_(opc, f3, hi) (f3)
#define XPULP_LANE_HI_(opc, f3, hi) (hi)
#define XPULP_LANE_F3(...) XPULP_LANE_F3_(__VA_ARGS__)
#define XPULP_LANE_HI(...) XPULP_LANE_HI_(__VA_ARGS__)
#define XPULP_LANE_IMM12(kind, w, i) XPULP_IMM12(XPULP_LANE_HI(XPULP_LANE_OP(kind, w)) | XPULP_LANE_IMM(i))
#define XPULP_LANE_OPC_(opc, f3, hi) opc
#define XPULP_LANE_OPC(...) XPULP_LANE_OPC_(__VA_ARGS__)
/* The same as assembly text for a kernel's own asm block: rd = lane i of register rs (kind 0
 * extract, 1 extractu; w 0 half-words, 1 bytes), or rd with lane i replaced by rs (kind 2: insert). */
#define XPULP_ASM_LANE(kind, w, rd, rs, i)                                                         \
  ".insn i " XPULP_STR(XPULP_LANE_OPC(XPULP_LANE_OP(kind, w))) ", "                                 \
  XPULP_STR(XPULP_LANE_F3(XPULP_LANE_OP(kind, w))) ", " rd ", " rs ", "                             \
  XPULP_STR(XPULP_LANE_IMM12(kind, w, i)) "\n"

/* Sign-/zero-extended lane i (constant) of a. */
#define xpulp_extract_h(a, i) XPULP_LANE_GET(0, 0, a, i)
#define xpulp_extract_b(a, i) XPULP_LANE_GET(0, 1, a, i)
#define xpulp_extractu_h(a, i) XPULP_LANE_GET(1, 0, a, i)
#define xpulp_extractu_b(a, i) XPULP_LANE_GET(1, 1, a, i)
/* d with lane i (constant) replaced by the low lane of a. */
#define xpulp_insert_h(d, a, i) XPULP_LANE_SET(0, d, a, i)
#define xpulp_insert_b(d, a, i) XPULP_LANE_SET(1, d, a, i)
#define XPULP_LANE_GET(kind, w, a, i)                                                              \
  ({                                                                                               \
    uint32_t r_;                                                                                   \
    __asm__(XPULP_LANE_INSN(XPULP_LANE_OP(kind, w))                                                \
            : "=r"(r_)                                                                             \
            : "r"((uint32_t)(a)), [fn3] "n"(XPULP_LANE_F3(XPULP_LANE_OP(kind, w))),                 \
              [imm] "n"(XPULP_LANE_IMM12(kind, w, i)));                                            \
    r_;                                                                                            \
  })
#define XPULP_LANE_SET(w, d, a, i)                                                                 \
  ({                                                                                               \
    uint32_t r_ = (d);                                                                             \
    __asm__(XPULP_LANE_INSN(XPULP_LANE_OP(2, w))                                                   \
            : "+r"(r_)                                                                             \
            : "r"((uint32_t)(a)), [fn3] "n"(XPULP_LANE_F3(XPULP_LANE_OP(2, w))),                    \
              [imm] "n"(XPULP_LANE_IMM12(2, w, i)));                                               \
    r_;                                                                                            \
  })

/* ---- scalar ALU, MAC --------------------------------------------------------------------------
 * CORE-V: opcode 0x2b, funct3 011, funct7 per op. XpulpV2: opcode 0x33, (funct3, funct7); addNr,
 * adduNr opcode 0x5b (p.addN, p.adduN). */
#if !DEEPLOY_XPULPV2
#define XPULP_ALU_MIN 0x2b, 3, 0x2b
#define XPULP_ALU_MINU 0x2b, 3, 0x2c
#define XPULP_ALU_MAX 0x2b, 3, 0x2d
#define XPULP_ALU_MAXU 0x2b, 3, 0x2e
#define XPULP_ALU_CLIPR 0x2b, 3, 0x3a
#define XPULP_ALU_CLIPUR 0x2b, 3, 0x3b
#define XPULP_ALU_ROR 0x2b, 3, 0x20
#define XPULP_ALU_ABS 0x2b, 3, 0x28
#define XPULP_ALU_FF1 0x2b, 3, 0x21
#define XPULP_ALU_FL1 0x2b, 3, 0x22
#define XPULP_ALU_CLB 0x2b, 3, 0x23
#define XPULP_ALU_CNT 0x2b, 3, 0x24
#define XPULP_ALU_MAC 0x2b, 3, 0x48
#define XPULP_ALU_MSU 0x2b, 3, 0x49
#define XPULP_ALU_ADDNR 0x2b, 3, 0x40
#define XPULP_ALU_ADDUNR 0x2b, 3, 0x41
#else
#define XPULP_ALU_MIN 0x33, 4, 0x02
#define XPULP_ALU_MINU 0x33, 5, 0x02
#define XPULP_ALU_MAX 0x33, 6, 0x02
#define XPULP_ALU_MAXU 0x33, 7, 0x02
#define XPULP_ALU_CLIPR 0x33, 5, 0x0a
#define XPULP_ALU_CLIPUR 0x33, 6, 0x0a
#define XPULP_ALU_ROR 0x33, 5, 0x04
#define XPULP_ALU_ABS 0x33, 0, 0x02
#define XPULP_ALU_FF1 0x33, 0, 0x08
#define XPULP_ALU_FL1 0x33, 1, 0x08
#define XPULP_ALU_CLB 0x33, 2, 0x08
#define XPULP_ALU_CNT 0x33, 3, 0x08
#define XPULP_ALU_MAC 0x33, 0, 0x21
#define XPULP_ALU_MSU 0x33, 1, 0x21
#define XPULP_ALU_ADDNR 0x5b, 2, 0x20
#define XPULP_ALU_ADDUNR 0x5b, 2, 0x60
#endif
#define XPULP_INSN_R_(...) XPULP_INSN_R(__VA_ARGS__)
#define XPULP_INSN_R1__(opc, f3, f7) ".insn r " XPULP_STR(opc) ", " XPULP_STR(f3) ", " XPULP_STR(f7) ", %0, %1, x0"
#define XPULP_INSN_R1_(...) XPULP_INSN_R1__(__VA_ARGS__)

#define XPULP_DEF_ALU(name, op, type)                                                              \
  static inline type name(type a, type b) {                                                        \
    type r;                                                                                        \
    __asm__(XPULP_INSN_R_(op) : "=r"(r) : "r"(a), "r"(b));                                         \
    return r;                                                                                      \
  }
#define XPULP_DEF_ALU1(name, op, type)                                                             \
  static inline type name(type a) {                                                                \
    type r;                                                                                        \
    __asm__(XPULP_INSN_R1_(op) : "=r"(r) : "r"(a));                                                \
    return r;                                                                                      \
  }
XPULP_DEF_ALU(xpulp_min, XPULP_ALU_MIN, int32_t)
XPULP_DEF_ALU(xpulp_minu, XPULP_ALU_MINU, uint32_t)
XPULP_DEF_ALU(xpulp_max, XPULP_ALU_MAX, int32_t)
XPULP_DEF_ALU(xpulp_maxu, XPULP_ALU_MAXU, uint32_t)
/* clip a to [-(b+1), b] / [0, b] (b >= 0) */
XPULP_DEF_ALU(xpulp_clipr, XPULP_ALU_CLIPR, int32_t)
XPULP_DEF_ALU(xpulp_clipur, XPULP_ALU_CLIPUR, int32_t)
XPULP_DEF_ALU(xpulp_ror, XPULP_ALU_ROR, uint32_t)
XPULP_DEF_ALU1(xpulp_abs, XPULP_ALU_ABS, int32_t)
/* index of the lowest / highest set bit (32 if none); count of leading sign bits minus one (0 for
 * 0); population count */
XPULP_DEF_ALU1(xpulp_ff1, XPULP_ALU_FF1, uint32_t)
XPULP_DEF_ALU1(xpulp_fl1, XPULP_ALU_FL1, uint32_t)
XPULP_DEF_ALU1(xpulp_clb, XPULP_ALU_CLB, uint32_t)
XPULP_DEF_ALU1(xpulp_cnt, XPULP_ALU_CNT, uint32_t)

/* acc + a * b, acc - a * b (32 bits) */
static inline int32_t xpulp_mac(int32_t acc, int32_t a, int32_t b) {
  __asm__(XPULP_INSN_R_(XPULP_ALU_MAC) : "+r"(acc) : "r"(a), "r"(b));
  return acc;
}
static inline int32_t xpulp_msu(int32_t acc, int32_t a, int32_t b) {
  __asm__(XPULP_INSN_R_(XPULP_ALU_MSU) : "+r"(acc) : "r"(a), "r"(b));
  return acc;
}
/* (acc + a) >> (b & 31), arithmetic (cv.addNr / p.addN with a register shift; 32 bits) */
static inline int32_t xpulp_addnr(int32_t acc, int32_t a, int32_t b) {
  __asm__(XPULP_INSN_R_(XPULP_ALU_ADDNR) : "+r"(acc) : "r"(a), "r"(b));
  return acc;
}
/* (acc + a) >> (b & 31), logical (cv.adduNr / p.adduN with a register shift; 32 bits) */
static inline uint32_t xpulp_addunr(uint32_t acc, uint32_t a, uint32_t b) {
  __asm__(XPULP_INSN_R_(XPULP_ALU_ADDUNR) : "+r"(acc) : "r"(a), "r"(b));
  return acc;
}

/* Clip with a constant bit width n (1..31): to [-2^(n-1), 2^(n-1)-1] / [0, 2^(n-1)-1].
 * Word [31:20] = funct7 | n. CORE-V: 0x2b/011, funct7 0111000 / 0111001. XpulpV2: 0x33,
 * funct7 0001010, funct3 001 / 010. */
#if !DEEPLOY_XPULPV2
#define XPULP_CLIP_OP(u) 0x2b, 3, (0x38 + (u))
#else
#define XPULP_CLIP_OP(u) 0x33, (1 + (u)), 0x0a
#endif
#define XPULP_CLIP_(u, a, n, opc, f3, f7)                                                          \
  ({                                                                                               \
    int32_t r_;                                                                                    \
    __asm__(".insn i " XPULP_STR(opc) ", %c[fn3], %0, %1, %c[imm]"                                  \
            : "=r"(r_)                                                                             \
            : "r"((int32_t)(a)), [fn3] "n"(f3), [imm] "n"(XPULP_IMM12(((f7) << 5) | (n))));         \
    r_;                                                                                            \
  })
#define XPULP_CLIP__(...) XPULP_CLIP_(__VA_ARGS__)
#define xpulp_clip(a, n) XPULP_CLIP__(0, a, n, XPULP_CLIP_OP(0))
#define xpulp_clipu(a, n) XPULP_CLIP__(1, a, n, XPULP_CLIP_OP(1))

/* ---- bit fields with constant width w = Is3 + 1 and position p = Is2 ---------------------------
 * CORE-V: opcode 0x5b, word [31:20] = f2 | Is3 | Is2; funct3 000 (f2 00 extract, 01 extractu,
 * 10 insert), 001 (f2 00 bclr, 01 bset). XpulpV2: opcode 0x33, f2 11, funct3 000 extract,
 * 001 extractu, 010 insert, 011 bclr, 100 bset. */
#if !DEEPLOY_XPULPV2
/* plain arithmetic (also read by the assembler: XPULP_ASM_BITS): funct3 kind / 3, f2 kind % 3 */
#define XPULP_BITS_OP(kind) 0x5b, ((kind) / 3), ((kind)-3 * ((kind) / 3))
#else
#define XPULP_BITS_OP(kind) 0x33, (kind), 3
#endif
#define XPULP_BITS_(acc, kind, a, w, p, opc, f3, f2)                                               \
  ({                                                                                               \
    uint32_t r_ = (acc);                                                                           \
    __asm__(".insn i " XPULP_STR(opc) ", %c[fn3], %0, %1, %c[imm]"                                  \
            : "+r"(r_)                                                                             \
            : "r"((uint32_t)(a)), [fn3] "n"(f3),                                                    \
              [imm] "n"(XPULP_IMM12(((f2) << 10) | ((((w)-1) & 31) << 5) | ((p)&31))));            \
    r_;                                                                                            \
  })
#define XPULP_BITS__(...) XPULP_BITS_(__VA_ARGS__)
#define XPULP_BITS_ASM_(kind, rd, rs, w, p, opc, f3, f2)                                          \
  ".insn i " XPULP_STR(opc) ", " XPULP_STR(f3) ", " rd ", " rs ", "                                 \
  XPULP_STR(XPULP_IMM12(((f2) << 10) | ((((w)-1) & 31) << 5) | ((p)&31))) "\n"
#define XPULP_BITS_ASM__(...) XPULP_BITS_ASM_(__VA_ARGS__)
/* The bit-field operation kind (as xpulp_extract .. xpulp_bset below) of register rs into rd, as
 * assembly text for a kernel's own asm block. */
#define XPULP_ASM_BITS(kind, rd, rs, w, p) XPULP_BITS_ASM__(kind, rd, rs, w, p, XPULP_BITS_OP(kind))
/* w bits of a at p, sign- / zero-extended */
#define xpulp_extract(a, w, p) ((int32_t)XPULP_BITS__(0, 0, a, w, p, XPULP_BITS_OP(0)))
#define xpulp_extractu(a, w, p) XPULP_BITS__(0, 1, a, w, p, XPULP_BITS_OP(1))
/* d with w bits at p replaced by the low w bits of a */
#define xpulp_insert(d, a, w, p) XPULP_BITS__(d, 2, a, w, p, XPULP_BITS_OP(2))
/* a with w bits at p cleared / set */
#define xpulp_bclr(a, w, p) XPULP_BITS__(0, 3, a, w, p, XPULP_BITS_OP(3))
#define xpulp_bset(a, w, p) XPULP_BITS__(0, 4, a, w, p, XPULP_BITS_OP(4))

/* ---- loads and stores --------------------------------------------------------------------------
 * Post-increment by an immediate (same words in both ISAs): loads opcode 0x0b, stores 0x2b, funct3
 * = width (lb 000, lh 001, lw 010, lbu 100, lhu 101). The pointer p is advanced by inc bytes.
 * By a register (post-increment) and at p + register offset:
 *   CORE-V: opcode 0x2b, funct3 011, funct7: loads 0000xxx post-inc / 0000 1xx(+4) offset with
 *           lb 0, lh 1, lw 2, lbu 8, lhu 9 (offset: +4); stores 0010 0xx post-inc, 0010 1xx offset
 *           with the increment / offset register in the rd field.
 *   XpulpV2: loads opcode 0x0b (post-inc) / 0x03 (offset), funct3 111, funct7 lb 0x00, lh 0x08,
 *           lw 0x10, lbu 0x20, lhu 0x28; stores opcode 0x2b (post-inc) / 0x23 (offset), funct7 0,
 *           funct3 sb 100, sh 101, sw 110. */
#define xpulp_lb_postinc(p, inc) XPULP_LD_PI(int8_t, 0, p, inc)
#define xpulp_lh_postinc(p, inc) XPULP_LD_PI(int16_t, 1, p, inc)
#define xpulp_lw_postinc(p, inc) XPULP_LD_PI(int32_t, 2, p, inc)
#define xpulp_lbu_postinc(p, inc) XPULP_LD_PI(uint8_t, 4, p, inc)
#define xpulp_lhu_postinc(p, inc) XPULP_LD_PI(uint16_t, 5, p, inc)
#define xpulp_sb_postinc(p, v, inc) XPULP_ST_PI(uint8_t, 0, p, v, inc)
#define xpulp_sh_postinc(p, v, inc) XPULP_ST_PI(uint16_t, 1, p, v, inc)
#define xpulp_sw_postinc(p, v, inc) XPULP_ST_PI(uint32_t, 2, p, v, inc)
/* p: an lvalue pointer, advanced by inc (a constant, -2048..2047) bytes. Loads give an int32_t
 * (sign- or zero-extended as the instruction does). */
#define XPULP_LD_PI(type, f3, p, inc)                                                              \
  ({                                                                                               \
    int32_t v_;                                                                                    \
    __asm__ volatile(".insn i 0x0b, " #f3 ", %0, %1, %c3"                                          \
                     : "=r"(v_), "+r"(p)                                                           \
                     : "m"(*(const type *)(p)), "n"(inc));                                         \
    v_;                                                                                            \
  })
#define XPULP_ST_PI(type, f3, p, v, inc)                                                           \
  __asm__ volatile(".insn s 0x2b, " #f3 ", %2, %c3(%1)"                                            \
                   : "=m"(*(type *)(p)), "+r"(p)                                                   \
                   : "r"((uint32_t)(v)), "n"(inc))

/* (plain arithmetic, no parenthesis first: the assembler evaluates them too, XPULP_ASM_LD_RR) */
#if !DEEPLOY_XPULPV2
#define XPULP_LD_RR_OP(w, postinc) 0x2b, 3, ((w) + 4 - 4 * (postinc))
#define XPULP_ST_RR_OP(w, postinc) 0x2b, 3, (0x10 + (w) + 4 - 4 * (postinc))
#else
#define XPULP_LD_RR_OP(w, postinc) 0x03 + 8 * (postinc), 7, ((((w) & 3) << 3) | (((w) >> 3) << 5))
#define XPULP_ST_RR_OP(w, postinc) 0x23 + 8 * (postinc), (4 + (w)), 0
#endif
/* width codes: lb 0, lh 1, lw 2, lbu 8, lhu 9; sb 0, sh 1, sw 2 */
#define XPULP_LD_RR_(type, p, r, postinc, opc, f3, f7)                                             \
  ({                                                                                               \
    int32_t v_;                                                                                    \
    if (postinc)                                                                                   \
      __asm__ volatile(".insn r %c4, %c5, %c6, %0, %1, %3"                                         \
                       : "=r"(v_), "+r"(p)                                                         \
                       : "m"(*(const type *)(p)), "r"(r), "n"(opc), "n"(f3), "n"(f7));             \
    else                                                                                           \
      __asm__ volatile(".insn r %c4, %c5, %c6, %0, %1, %3"                                         \
                       : "=r"(v_)                                                                  \
                       : "r"(p), "m"(*(const type *)((const char *)(p) + (r))), "r"(r), "n"(opc),  \
                         "n"(f3), "n"(f7));                                                        \
    v_;                                                                                            \
  })
#define XPULP_LD_RR__(...) XPULP_LD_RR_(__VA_ARGS__)
/* Post-increment by a register: value at p, then p += r. Register offset: value at p + r. */
#define xpulp_lb_postinc_r(p, r) XPULP_LD_RR__(int8_t, p, r, 1, XPULP_LD_RR_OP(0, 1))
#define xpulp_lh_postinc_r(p, r) XPULP_LD_RR__(int16_t, p, r, 1, XPULP_LD_RR_OP(1, 1))
#define xpulp_lw_postinc_r(p, r) XPULP_LD_RR__(int32_t, p, r, 1, XPULP_LD_RR_OP(2, 1))
#define xpulp_lbu_postinc_r(p, r) XPULP_LD_RR__(uint8_t, p, r, 1, XPULP_LD_RR_OP(8, 1))
#define xpulp_lhu_postinc_r(p, r) XPULP_LD_RR__(uint16_t, p, r, 1, XPULP_LD_RR_OP(9, 1))
#define xpulp_lb_rr(p, r) XPULP_LD_RR__(int8_t, p, r, 0, XPULP_LD_RR_OP(0, 0))
#define xpulp_lh_rr(p, r) XPULP_LD_RR__(int16_t, p, r, 0, XPULP_LD_RR_OP(1, 0))
#define xpulp_lw_rr(p, r) XPULP_LD_RR__(int32_t, p, r, 0, XPULP_LD_RR_OP(2, 0))
#define xpulp_lbu_rr(p, r) XPULP_LD_RR__(uint8_t, p, r, 0, XPULP_LD_RR_OP(8, 0))
#define xpulp_lhu_rr(p, r) XPULP_LD_RR__(uint16_t, p, r, 0, XPULP_LD_RR_OP(9, 0))

/* Stores: the word holds rs2 = value, rs1 = base, rd field = increment / offset register. */
#define XPULP_ST_RR_(type, p, v, r, postinc, opc, f3, f7)                                          \
  do {                                                                                             \
    if (postinc)                                                                                   \
      __asm__ volatile(".insn r %c4, %c5, %c6, %3, %1, %2"                                         \
                       : "=m"(*(type *)(p)), "+r"(p)                                               \
                       : "r"((uint32_t)(v)), "r"(r), "n"(opc), "n"(f3), "n"(f7));                  \
    else                                                                                           \
      __asm__ volatile(".insn r %c4, %c5, %c6, %3, %1, %2"                                         \
                       : "=m"(*(type *)((char *)(p) + (r)))                                        \
                       : "r"(p), "r"((uint32_t)(v)), "r"(r), "n"(opc), "n"(f3), "n"(f7));          \
  } while (0)
#define XPULP_ST_RR__(...) XPULP_ST_RR_(__VA_ARGS__)
#define xpulp_sb_postinc_r(p, v, r) XPULP_ST_RR__(uint8_t, p, v, r, 1, XPULP_ST_RR_OP(0, 1))
#define xpulp_sh_postinc_r(p, v, r) XPULP_ST_RR__(uint16_t, p, v, r, 1, XPULP_ST_RR_OP(1, 1))
#define xpulp_sw_postinc_r(p, v, r) XPULP_ST_RR__(uint32_t, p, v, r, 1, XPULP_ST_RR_OP(2, 1))
#define xpulp_sb_rr(p, v, r) XPULP_ST_RR__(uint8_t, p, v, r, 0, XPULP_ST_RR_OP(0, 0))
#define xpulp_sh_rr(p, v, r) XPULP_ST_RR__(uint16_t, p, v, r, 0, XPULP_ST_RR_OP(1, 0))
#define xpulp_sw_rr(p, v, r) XPULP_ST_RR__(uint32_t, p, v, r, 0, XPULP_ST_RR_OP(2, 0))

/* ---- the operations as text for a hand-written asm block (hardware-loop bodies) ------------------
 * rd, a, b, p, r: operand strings such as "%[acc]"; op: an XPULP_SIMD_* / XPULP_ALU_* name;
 * w: 0 = .h, 1 = .b (SIMD), width codes as above (loads); inc, n: constants. Each ends in "\n". */
#define XPULP_ASM_SIMD(op, w, rd, a, b) XPULP_ASM_R_(XPULP_SIMD_OPC, w, XPULP_SIMD_F7_(op), rd, a, b)
#define XPULP_ASM_ALU(op, rd, a, b) XPULP_ASM_R_(op, rd, a, b)
/* rd = load at p, p += inc (f3: lb 0, lh 1, lw 2, lbu 4, lhu 5) */
#define XPULP_ASM_LD_PI(f3, rd, p, inc) ".insn i 0x0b, " #f3 ", " rd ", " p ", " #inc "\n"
/* store v at p, p += inc (f3: sb 0, sh 1, sw 2) */
#define XPULP_ASM_ST_PI(f3, v, p, inc) ".insn s 0x2b, " #f3 ", " v ", " #inc "(" p ")\n"
/* rd = load at p (postinc 1: then p += r) / at p + r (postinc 0) */
#define XPULP_ASM_LD_RR(w, postinc, rd, p, r) XPULP_ASM_R_(XPULP_LD_RR_OP(w, postinc), rd, p, r)
/* store v at p (postinc 1: then p += r) / at p + r (postinc 0); w: sb 0, sh 1, sw 2 */
#define XPULP_ASM_ST_RR(w, postinc, v, p, r) XPULP_ASM_R_(XPULP_ST_RR_OP(w, postinc), r, p, v)
/* rd = a clipped to n bits, signed (u 0) / unsigned (u 1) */
#define XPULP_ASM_CLIP_(opc, f3, f7, rd, a, n)                                                     \
  ".insn i " XPULP_STR(opc) ", " XPULP_STR(f3) ", " rd ", " a ", " XPULP_STR(XPULP_IMM12(((f7) << 5) | (n))) "\n"
#define XPULP_ASM_CLIP__(...) XPULP_ASM_CLIP_(__VA_ARGS__)
#define XPULP_ASM_CLIP(u, rd, a, n) XPULP_ASM_CLIP__(XPULP_CLIP_OP(u), rd, a, n)

/* ---- hardware loops: strings for a hand-written asm block ---------------------------------------
 * L: loop 0 (inner) or 1 (outer); end: a label right after the loop's last instruction (e.g. "1f");
 * count: an asm operand ("%[n]") holding the trip count (>= 1). Open the block with
 * XPULP_LOOP_BEGIN (aligns, no compressed instructions, as the hardware loop rules require) and
 * close it with XPULP_LOOP_FINISH. The body must be straight-line code (no calls, no `la`) of at
 * least 2 instructions (the manual asks for 3; the RTL runs a body of 1 only once, QEMU loops it); keep
 * `.option norvc` for all of it: on QEMU a loop runs without traps only if its last instruction is
 * a 32-bit one that is no branch, jump, auipc or marker (else it falls back to the trap path).
 *   CORE-V (opcode 0x2b, funct3 100, word[11:8] = funct4, bit 7 = L, end = PC + (uimm << 2)):
 *     starti 0000, endi 0010, counti 0100, count 0101, setupi 0110 (count in [31:20],
 *     end offset in [19:15]), setup 0111 (count register in rs1, end offset in [31:20]).
 *   XpulpV2 (opcode 0x7b, bit 7 = L, end = PC + (uimm << 1) = the loop's last instruction):
 *     funct3 starti 000, endi 001, count 010, counti 011, setup 100, setupi 101. */
#define XPULP_LOOP_BEGIN ".balign 4\n.option push\n.option norvc\n"
#define XPULP_LOOP_FINISH ".option pop\n"
#if !DEEPLOY_XPULPV2
#define XPULP_LP_WORD(f4, L, rs1, imm) \
  ".word ((" imm ") << 20) | ((" rs1 ") << 15) | (4 << 12) | (" #f4 " << 8) | (" #L " << 7) | 0x2b\n"
#define XPULP_LP_DIST(end) "((" end " - .) >> 2)"
#define XPULP_LP_SETUP(L, count, end) XPULP_LP_WORD(7, L, ".Lxpulp_reg_" count, XPULP_LP_DIST(end))
#define XPULP_LP_SETUPI(L, n, end) XPULP_LP_WORD(6, L, XPULP_LP_DIST(end), #n)
#define XPULP_LP_STARTI(L, start) XPULP_LP_WORD(0, L, "0", XPULP_LP_DIST(start))
#define XPULP_LP_ENDI(L, end) XPULP_LP_WORD(2, L, "0", XPULP_LP_DIST(end))
#define XPULP_LP_COUNTI(L, n) XPULP_LP_WORD(4, L, "0", #n)
#define XPULP_LP_COUNT(L, count) XPULP_LP_WORD(5, L, ".Lxpulp_reg_" count, "0")
#else
#define XPULP_LP_WORD(f3, L, rs1, imm) \
  ".word ((" imm ") << 20) | ((" rs1 ") << 15) | (" #f3 " << 12) | (" #L " << 7) | 0x7b\n"
#define XPULP_LP_DIST(end) "((" end " - 4 - .) >> 1)"
#define XPULP_LP_SETUP(L, count, end) XPULP_LP_WORD(4, L, ".Lxpulp_reg_" count, XPULP_LP_DIST(end))
#define XPULP_LP_SETUPI(L, n, end) XPULP_LP_WORD(5, L, XPULP_LP_DIST(end), #n)
#define XPULP_LP_STARTI(L, start) XPULP_LP_WORD(0, L, "0", "((" start " - .) >> 1)")
#define XPULP_LP_ENDI(L, end) XPULP_LP_WORD(1, L, "0", XPULP_LP_DIST(end))
#define XPULP_LP_COUNTI(L, n) XPULP_LP_WORD(3, L, "0", #n)
#define XPULP_LP_COUNT(L, count) XPULP_LP_WORD(2, L, ".Lxpulp_reg_" count, "0")
#endif

/* ---- the 4 x 2 dot-product block of the int8 GEMM and convolutions --------------------------------
 * XPULP_DOT4X2(D, count): a hardware loop of count (>= 1) iterations, each loading one word of the rows p0..p3
 * and of the columns q0, q1 (post-increment by 4) and adding their 8 dot products D(s, row word,
 * column word) to s0..s7 (s[2 i + j]: row i, column j): 14 instructions for 32 multiply-accumulates.
 * XPULP_DOT4X1(D, count): one column q0, sums s0, s2, s4, s6. p*, q*, s*: the caller's pointer and int32
 * locals (the pointers end past the words read). The loads run ahead of their first use (no load-use
 * stall); the words are in t0..t5 (asm takes at most 30 operands). XPULP_DOT_BYTES(L, TR, TC, count) runs
 * loop L with the byte dot product for rows of type TR and columns of type TC (int8_t or uint8_t). */
#define XPULP_DOT_LW(r, p) ".insn i 0x0b, 2, " r ", %[" p "], 4\n\t"
#define XPULP_DOT_(F7, s, x, y) ".insn r " XPULP_STR(XPULP_SIMD_OPC) ", 1, " XPULP_STR(F7) ", %[" s "], " x ", " y "\n\t"
#define XPULP_DOT_SS(s, x, y) XPULP_DOT_(XPULP_SIMD_F7_(XPULP_SIMD_SDOTSP), s, x, y)
#define XPULP_DOT_UU(s, x, y) XPULP_DOT_(XPULP_SIMD_F7_(XPULP_SIMD_SDOTUP), s, x, y)
#define XPULP_DOT_US(s, x, y) XPULP_DOT_(XPULP_SIMD_F7_(XPULP_SIMD_SDOTUSP), s, x, y)
#define XPULP_DOT_SU(s, x, y) XPULP_DOT_(XPULP_SIMD_F7_(XPULP_SIMD_SDOTUSP), s, y, x) /* unsigned first */
#define XPULP_DOT4X2(D, count)                                                                         \
    __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[cnt]"    , "1f")                          \
                     XPULP_DOT_LW("t4", "q0") XPULP_DOT_LW("t5", "q1") XPULP_DOT_LW("t0", "p0")    \
                     XPULP_DOT_LW("t1", "p1") XPULP_DOT_LW("t2", "p2") XPULP_DOT_LW("t3", "p3")    \
                     D("s0", "t0", "t4") D("s1", "t0", "t5") D("s2", "t1", "t4") D("s3", "t1", "t5") \
                     D("s4", "t2", "t4") D("s5", "t2", "t5") D("s6", "t3", "t4") D("s7", "t3", "t5") \
                     "1:\n" XPULP_LOOP_FINISH                                                     \
                     : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [s4] "+r"(s4),    \
                       [s5] "+r"(s5), [s6] "+r"(s6), [s7] "+r"(s7),                                \
                       [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [q0] "+r"(q0),  \
                       [q1] "+r"(q1)                                                               \
                     : [cnt] "r"(count)                                                            \
                     : "t0", "t1", "t2", "t3", "t4", "t5", "memory")
#define XPULP_DOT4X1(D, count)                                                                         \
    __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[cnt]"    , "1f")                          \
                     XPULP_DOT_LW("t4", "q0") XPULP_DOT_LW("t0", "p0") XPULP_DOT_LW("t1", "p1")    \
                     XPULP_DOT_LW("t2", "p2") XPULP_DOT_LW("t3", "p3")                             \
                     D("s0", "t0", "t4") D("s2", "t1", "t4") D("s4", "t2", "t4") D("s6", "t3", "t4") \
                     "1:\n" XPULP_LOOP_FINISH                                                     \
                     : [s0] "+r"(s0), [s2] "+r"(s2), [s4] "+r"(s4), [s6] "+r"(s6), [p0] "+r"(p0),    \
                       [p1] "+r"(p1), [p2] "+r"(p2), [p3] "+r"(p3), [q0] "+r"(q0)                  \
                     : [cnt] "r"(count)                                                            \
                     : "t0", "t1", "t2", "t3", "t4", "memory")
#define XPULP_DOT_BYTES(L, TR, TC, count)                                                              \
    do {                                                                                           \
        if ((TR)-1 < (TR)0) {                                                                      \
            if ((TC)-1 < (TC)0)                                                                    \
                L(XPULP_DOT_SS, count);                                                                \
            else                                                                                   \
                L(XPULP_DOT_SU, count);                                                                \
        } else {                                                                                   \
            if ((TC)-1 < (TC)0)                                                                    \
                L(XPULP_DOT_US, count);                                                                \
            else                                                                                   \
                L(XPULP_DOT_UU, count);                                                                \
        }                                                                                          \
    } while (0)

#endif
