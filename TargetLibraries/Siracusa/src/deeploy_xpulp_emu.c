/* Trap-and-emulate of the CORE-V PULP extension (deeploy_xpulp.h) on QEMU's plain RV32 harts.
 *
 * QEMU 7.2 raises an illegal-instruction exception (mcause 2) on every cv.* word. The machine
 * trap handler (mtvec on every hart) saves the integer registers, decodes the word at mepc,
 * executes it bit-exactly as the CV32E40P user manual describes it, writes rD (and the
 * post-incremented base), sets mepc += 4 and returns with mret. Other causes go on to picolibc's
 * trap report (_trap).
 *
 * Hardware loops: a setup records (start, end, count) per hart and loop and arms a debug trigger
 * (Sdtrig type-2 mcontrol, execute match in M-mode, which QEMU 7.2 implements) at the loop's end
 * address. Reaching the end raises a breakpoint exception (mcause 3) before the instruction there
 * executes; the handler decrements the count and either returns to the loop start or, on the last
 * iteration, disarms the trigger and continues at the end. Loop 0 is checked before loop 1
 * (nested loops), bodies of one instruction work, state is per hart.
 *
 * The timing plugin does not count the handler's instructions (section deeploy_xpulp_text); the
 * memory accesses of emulated loads and stores are made by the helpers in section
 * deeploy_xpulp_mem, which the plugin counts as the core's own accesses (the runner passes both
 * address ranges from the ELF's __start_/__stop_ symbols).
 *
 * The QEMU runner normally runs an image in which most cv.* words are rewritten into RV32IM stubs
 * (Deeploy/targets/pulp/stubs.py); this emulator then handles only the words left in place. The
 * stubs keep their temporaries and hardware-loop counts in the hart's scratch area below, a
 * thread-local block they reach through tp (a CSR such as mscratch would do too, but QEMU 7.2 leaves
 * its translated code at every CSR access, which costs more than the trap it replaces). */
#include <stdint.h>

#include "deeploy_runtime.h"

#define EMU __attribute__((section("deeploy_xpulp_text"), noinline))
#define MAX_HARTS 64

/* ---- bit counts in this section: libgcc's __clzsi2, __ctzsi2, __popcountsi2 lie outside it, so
 * the timing plugin would count their instructions as the core's -------------------------------- */
EMU static uint32_t emu_clz(uint32_t a) { /* 32 for 0 */
  uint32_t n = 0;
  if (!(a >> 16)) { n += 16; a <<= 16; }
  if (!(a >> 24)) { n += 8; a <<= 8; }
  if (!(a >> 28)) { n += 4; a <<= 4; }
  if (!(a >> 30)) { n += 2; a <<= 2; }
  if (!(a >> 31)) { n += 1; a <<= 1; }
  return n + !(a >> 31);
}
EMU static uint32_t emu_popcount(uint32_t a) {
  a -= (a >> 1) & 0x55555555u;
  a = (a & 0x33333333u) + ((a >> 2) & 0x33333333u);
  a = (a + (a >> 4)) & 0x0f0f0f0fu;
  return (a * 0x01010101u) >> 24;
}

/* ---- the core's memory accesses (counted by the timing plugin) ---------------------------------
 * load(addr, kind): kind = funct3 of RV32 loads (0 lb, 1 lh, 2 lw, 4 lbu, 5 lhu); store(addr, v, w):
 * w = 0 sb, 1 sh, 2 sw. */
__asm__(".pushsection deeploy_xpulp_mem, \"ax\", @progbits\n"
        ".option push\n.option norvc\n"
        ".p2align 2\n"
        "deeploy_xpulp_load:\n"
        "  beqz a1, 1f\n  addi a1, a1, -1\n  beqz a1, 2f\n  addi a1, a1, -1\n  beqz a1, 3f\n"
        "  addi a1, a1, -2\n  beqz a1, 4f\n"
        "  lhu a0, 0(a0)\n  ret\n"
        "1: lb a0, 0(a0)\n  ret\n"
        "2: lh a0, 0(a0)\n  ret\n"
        "3: lw a0, 0(a0)\n  ret\n"
        "4: lbu a0, 0(a0)\n  ret\n"
        "deeploy_xpulp_store:\n"
        "  beqz a2, 1f\n  addi a2, a2, -1\n  beqz a2, 2f\n"
        "  sw a1, 0(a0)\n  ret\n"
        "1: sb a1, 0(a0)\n  ret\n"
        "2: sh a1, 0(a0)\n  ret\n"
        ".option pop\n"
        ".popsection\n");
uint32_t deeploy_xpulp_load(uint32_t addr, uint32_t kind);
void deeploy_xpulp_store(uint32_t addr, uint32_t value, uint32_t width);

/* ---- trap entry ---------------------------------------------------------------------------- */
__asm__(".pushsection deeploy_xpulp_text, \"ax\", @progbits\n"
        ".globl deeploy_xpulp_trap\n"
        ".p2align 2\n"
        "deeploy_xpulp_trap:\n"
        "  addi sp, sp, -128\n"
        "  sw x1, 4(sp)\n  sw x3, 12(sp)\n  sw x4, 16(sp)\n  sw x5, 20(sp)\n"
        "  sw x6, 24(sp)\n  sw x7, 28(sp)\n  sw x8, 32(sp)\n  sw x9, 36(sp)\n  sw x10, 40(sp)\n"
        "  sw x11, 44(sp)\n  sw x12, 48(sp)\n  sw x13, 52(sp)\n  sw x14, 56(sp)\n  sw x15, 60(sp)\n"
        "  sw x16, 64(sp)\n  sw x17, 68(sp)\n  sw x18, 72(sp)\n  sw x19, 76(sp)\n  sw x20, 80(sp)\n"
        "  sw x21, 84(sp)\n  sw x22, 88(sp)\n  sw x23, 92(sp)\n  sw x24, 96(sp)\n  sw x25, 100(sp)\n"
        "  sw x26, 104(sp)\n  sw x27, 108(sp)\n  sw x28, 112(sp)\n  sw x29, 116(sp)\n"
        "  sw x30, 120(sp)\n  sw x31, 124(sp)\n"
        "  addi t0, sp, 128\n  sw t0, 8(sp)\n  sw zero, 0(sp)\n"
        "  mv a0, sp\n"
        "  call deeploy_xpulp_emulate\n"
        "  lw x1, 4(sp)\n  lw x3, 12(sp)\n  lw x4, 16(sp)\n  lw x5, 20(sp)\n"
        "  lw x6, 24(sp)\n  lw x7, 28(sp)\n  lw x8, 32(sp)\n  lw x9, 36(sp)\n"
        "  lw x11, 44(sp)\n  lw x12, 48(sp)\n  lw x13, 52(sp)\n  lw x14, 56(sp)\n  lw x15, 60(sp)\n"
        "  lw x16, 64(sp)\n  lw x17, 68(sp)\n  lw x18, 72(sp)\n  lw x19, 76(sp)\n  lw x20, 80(sp)\n"
        "  lw x21, 84(sp)\n  lw x22, 88(sp)\n  lw x23, 92(sp)\n  lw x24, 96(sp)\n  lw x25, 100(sp)\n"
        "  lw x26, 104(sp)\n  lw x27, 108(sp)\n  lw x28, 112(sp)\n  lw x29, 116(sp)\n"
        "  lw x30, 120(sp)\n  lw x31, 124(sp)\n"
        "  beqz a0, 1f\n"
        "  lw x10, 40(sp)\n  addi sp, sp, 128\n  mret\n"
        "1:\n" /* not ours: picolibc's trap report, registers as at the trap */
        "  lw x10, 40(sp)\n  addi sp, sp, 128\n  j _trap\n"
        ".popsection\n");

/* keeps the section bounds in the symbol table for the runner */
extern char __start_deeploy_xpulp_text[], __stop_deeploy_xpulp_text[];
extern char __start_deeploy_xpulp_mem[], __stop_deeploy_xpulp_mem[];
__attribute__((used)) static const void *const xpulp_ranges[] = {
    __start_deeploy_xpulp_text, __stop_deeploy_xpulp_text, __start_deeploy_xpulp_mem, __stop_deeploy_xpulp_mem};

/* ---- the stubs' per-hart scratch area: 4 saved temporaries, the counts of loops 0 and 1 --------
 * (layout: SCRATCH_WORDS, _SAVE, _COUNT in Deeploy/targets/pulp/stubs.py, which finds it by this
 * name; zero at start-up like all thread-local data) */
__attribute__((used, retain)) __thread uint32_t deeploy_xpulp_scratch[6];

/* ---- hardware loops ------------------------------------------------------------------------ */
typedef struct {
  uint32_t start[2], end[2], count[2];
} hwloop_t;
static hwloop_t loops[MAX_HARTS];

#define MCONTROL_OFF (2u << 28)                           /* type 2, matching nothing */
#define MCONTROL_EXEC_M (MCONTROL_OFF | (1u << 6) | (1u << 2)) /* m, execute, action 0: breakpoint */

EMU static void arm(hwloop_t *l, uint32_t L) {
  __asm__ volatile("csrw tselect, %0\n csrw tdata1, %1" ::"r"(L), "r"(MCONTROL_OFF));
  if (l->count[L]) __asm__ volatile("csrw tdata2, %0\n csrw tdata1, %1" ::"r"(l->end[L]), "r"(MCONTROL_EXEC_M));
}

/* ---- lanes --------------------------------------------------------------------------------- */
static inline int32_t lane(uint32_t x, int i, int b, int sgn) {
  uint32_t v = (x >> (i * b)) & ((1u << b) - 1);
  return sgn && (v >> (b - 1)) ? (int32_t)v - (1 << b) : (int32_t)v;
}

static inline uint32_t bitmask(uint32_t w, uint32_t p) { /* w bits (1..32) at p, clipped at bit 31 */
  uint32_t hi = w + p > 32 ? 32 : w + p;
  return (hi >= 32 ? 0xffffffffu : (1u << hi) - 1) & ~((1u << p) - 1);
}

EMU static uint32_t simd(uint32_t f5, uint32_t f3, uint32_t a, uint32_t bval, uint32_t imm6, uint32_t d, int *ok) {
  int h = !(f3 & 1), b = h ? 16 : 8, n = 32 / b;
  uint32_t m = (1u << b) - 1, r = 0;
  /* second operand: vector, scalar (.sc: low lane of rs2) or immediate (.sci) */
  uint32_t mode = f3 >> 1; /* 0: vector, 2: .sc, 3: .sci (funct3 000/001, 100/101, 110/111) */
  int32_t sci = (int32_t)(imm6 << 26) >> 26; /* sign-extended Imm6 */
  int uimm = f5 == 0x03 || f5 == 0x05 || f5 == 0x07 || (f5 >= 0x08 && f5 <= 0x0a) || f5 == 0x10 || f5 == 0x13 ||
             f5 == 0x17 || (f5 >= 0x18 && f5 <= 0x1b);
  uint32_t o2 = 0;
  if (mode == 0) o2 = bval;
  else {
    uint32_t s = mode == 2 ? (bval & m) : (uimm ? imm6 : (uint32_t)sci) & m;
    for (int i = 0; i < n; i++) o2 |= s << (i * b);
  }
  if (f5 <= 0x0e || f5 == 0x17 || f5 >= 0x18) {
    if (f5 == 0x17) { /* extract / extractu / insert with lane index */
      int i = imm6 & (n - 1), k = f3 >> 1;
      if (k == 0) return (uint32_t)lane(a, i, b, 1);
      if (k == 1) return (uint32_t)lane(a, i, b, 0);
      if (k == 2) return (d & ~(m << (i * b))) | ((a & m) << (i * b));
      *ok = 0;
      return 0;
    }
    if (f5 == 0x18 || f5 == 0x1c) { /* shuffle, shuffle2 (register form) */
      if (mode != 0) { *ok = 0; return 0; }
      for (int i = 0; i < n; i++) {
        uint32_t sel = (bval >> (i * b)) & (n - 1);
        uint32_t src = f5 == 0x1c && !((bval >> (i * b + (h ? 1 : 2))) & 1) ? d : a;
        r |= ((src >> (sel * b)) & m) << (i * b);
      }
      return r;
    }
    for (int i = 0; i < n; i++) {
      int32_t x = lane(a, i, b, 1), y = lane(o2, i, b, 1);
      uint32_t ux = (uint32_t)lane(a, i, b, 0), uy = (uint32_t)lane(o2, i, b, 0);
      uint32_t sh = uy & (b - 1), v;
      switch (f5) {
      case 0x00: v = ux + uy; break;
      case 0x01: v = ux - uy; break;
      case 0x02: v = (uint32_t)(lane((ux + uy) & m, 0, b, 1) >> 1); break;
      case 0x03: v = ((ux + uy) & m) >> 1; break;
      case 0x04: v = (uint32_t)(x < y ? x : y); break;
      case 0x05: v = ux < uy ? ux : uy; break;
      case 0x06: v = (uint32_t)(x > y ? x : y); break;
      case 0x07: v = ux > uy ? ux : uy; break;
      case 0x08: v = ux >> sh; break;
      case 0x09: v = (uint32_t)(x >> sh); break;
      case 0x0a: v = ux << sh; break;
      case 0x0b: v = ux | uy; break;
      case 0x0c: v = ux ^ uy; break;
      case 0x0d: v = ux & uy; break;
      case 0x0e: v = (uint32_t)(x < 0 ? -x : x); break;
      default: *ok = 0; return 0;
      }
      r |= (v & m) << (i * b);
    }
    return r;
  }
  if (f5 >= 0x10 && f5 <= 0x15) { /* dot products: a signed unless (s)dotup, (s)dotusp */
    int k = (f5 - 0x10) % 3, acc = f5 >= 0x13;
    int sa = k == 2, sb = k != 0;
    uint32_t s = acc ? d : 0;
    for (int i = 0; i < n; i++) s += (uint32_t)(lane(a, i, b, sa) * lane(o2, i, b, sb));
    return s;
  }
  *ok = 0;
  return 0;
}

/* dot product of the byte lanes, k: 0 both unsigned, 1 a unsigned and b signed, 2 both signed */
#define SB(v, i) ((int32_t)(int8_t)((v) >> (i)))
#define UB(v, i) ((int32_t)(((v) >> (i)) & 0xff))
static inline uint32_t dot_b(uint32_t a, uint32_t b, uint32_t k) {
  if (k == 2) return (uint32_t)(SB(a, 0) * SB(b, 0) + SB(a, 8) * SB(b, 8) + SB(a, 16) * SB(b, 16) + SB(a, 24) * SB(b, 24));
  if (k == 1) return (uint32_t)(UB(a, 0) * SB(b, 0) + UB(a, 8) * SB(b, 8) + UB(a, 16) * SB(b, 16) + UB(a, 24) * SB(b, 24));
  return (uint32_t)(UB(a, 0) * UB(b, 0) + UB(a, 8) * UB(b, 8) + UB(a, 16) * UB(b, 16) + UB(a, 24) * UB(b, 24));
}

/* ---- the emulator -------------------------------------------------------------------------- */
EMU static hwloop_t *my_loops(void) {
  uint32_t hart;
  __asm__ volatile("csrr %0, mhartid" : "=r"(hart));
  return &loops[hart % MAX_HARTS];
}

/* breakpoint at pc: the end of an active hardware loop (loop 0 first)? */
EMU static int loop_end(uint32_t pc) {
  hwloop_t *l = my_loops();
  int hit = 0;
  for (uint32_t L = 0; L < 2; L++) {
    if (!l->count[L] || l->end[L] != pc) continue;
    hit = 1;
    if (--l->count[L]) {
      __asm__ volatile("csrw mepc, %0" ::"r"(l->start[L]));
      return 1;
    }
    arm(l, L); /* last iteration: disarm, continue at the end */
  }
  return hit;
}

EMU static int emulate(uint32_t *x, uint32_t pc, uint32_t w);

/* x: the saved registers x0..x31 (x[2] = sp at the trap). Returns 1 if handled. The 8-bit dot
 * products (the int8 kernels' inner loops) take a short path. */
EMU int deeploy_xpulp_emulate(uint32_t *x) {
  uint32_t cause, pc;
  __asm__ volatile("csrr %0, mcause\n csrr %1, mepc" : "=r"(cause), "=r"(pc));
  if (cause == 3) return loop_end(pc);
  if (cause != 2) return 0;
  uint32_t w = (uint32_t)*(volatile uint16_t *)pc | (uint32_t)*(volatile uint16_t *)(pc + 2) << 16;
  uint32_t f7 = w >> 25, rd = (w >> 7) & 31;
  if ((w & 0x707f) != 0x107b || f7 < 0x40 || f7 > 0x54 || (f7 & 3) || !rd) return emulate(x, pc, w);
  uint32_t f5 = f7 >> 2, a = x[(w >> 15) & 31], b = x[(w >> 20) & 31]; /* cv.(s)dot{up,usp,sp}.b */
  x[rd] = (f5 >= 0x13 ? x[rd] : 0) + dot_b(a, b, f5 - (f5 >= 0x13 ? 0x13 : 0x10));
  __asm__ volatile("csrw mepc, %0" ::"r"(pc + 4));
  return 1;
}

/* any other instruction word w at pc */
EMU static int emulate(uint32_t *x, uint32_t pc, uint32_t w) {
  hwloop_t *l = my_loops();
  uint32_t op = w & 0x7f, f3 = (w >> 12) & 7, f7 = w >> 25;
  uint32_t rd = (w >> 7) & 31, r1 = (w >> 15) & 31, r2 = (w >> 20) & 31;
  uint32_t a = x[r1], b = x[r2], d = x[rd];
  int32_t imm12 = (int32_t)w >> 20;
  uint32_t res = 0;
  int write = 1, ok = 1;
  switch (op) {
  case 0x0b: /* cv.l{b,h,w,bu,hu} rD, (rs1), imm */
    if (f3 == 3 || f3 > 5) return 0;
    res = deeploy_xpulp_load(a, f3);
    if (r1) x[r1] = a + (uint32_t)imm12;
    break;
  case 0x2b:
    if (f3 <= 2) { /* cv.s{b,h,w} rs2, (rs1), imm */
      deeploy_xpulp_store(a, b, f3);
      if (r1) x[r1] = a + (uint32_t)((imm12 & ~31) | (int32_t)rd);
      write = 0;
    } else if (f3 == 3) {
      if (f7 < 0x10) { /* loads, register post-increment (0xxx) or offset (1xx) */
        static const uint8_t kinds[] = {0, 1, 2, 0xff, 0, 1, 2, 0xff, 4, 5, 0xff, 0xff, 4, 5, 0xff, 0xff};
        uint32_t kind = kinds[f7];
        if (kind == 0xff) return 0;
        if (f7 & 4) res = deeploy_xpulp_load(a + b, kind);
        else {
          res = deeploy_xpulp_load(a, kind);
          if (r1) x[r1] = a + b;
        }
      } else if (f7 < 0x18) { /* stores: rs2 value, rd field = increment / offset register */
        uint32_t wd = f7 & 3;
        if (wd == 3) return 0;
        if (f7 & 4) deeploy_xpulp_store(a + d, b, wd);
        else {
          deeploy_xpulp_store(a, b, wd);
          if (r1) x[r1] = a + d;
        }
        write = 0;
      } else {
        uint32_t wb = ((b >> 5) & 31) + 1, p = b & 31, mk = bitmask(wb, p);
        switch (f7) {
        case 0x18: res = (uint32_t)(((int32_t)((a & mk) << (32 - (wb + p > 32 ? 32 : wb + p)))) >>
                                    (32 - (wb + p > 32 ? 32 : wb + p) + p));
          break;
        case 0x19: res = (a & mk) >> p; break;
        case 0x1a: res = (d & ~mk) | ((a << p) & mk); break;
        case 0x1c: res = a & ~mk; break;
        case 0x1d: res = a | mk; break;
        case 0x20: res = (a >> (b & 31)) | (a << ((32 - (b & 31)) & 31)); break;
        case 0x21: res = a ? 31 - emu_clz(a & -a) : 32; break;
        case 0x22: res = a ? 31 - emu_clz(a) : 32; break;
        case 0x23: res = a ? emu_clz(a ^ (uint32_t)((int32_t)a >> 31)) - 1 : 0; break;
        case 0x24: res = emu_popcount(a); break;
        case 0x28: res = (int32_t)a < 0 ? -a : a; break;
        case 0x29: res = (int32_t)a <= (int32_t)b; break;
        case 0x2a: res = a <= b; break;
        case 0x2b: res = (int32_t)a < (int32_t)b ? a : b; break;
        case 0x2c: res = a < b ? a : b; break;
        case 0x2d: res = (int32_t)a < (int32_t)b ? b : a; break;
        case 0x2e: res = a < b ? b : a; break;
        case 0x30: res = (uint32_t)(int32_t)(int16_t)a; break;
        case 0x31: res = a & 0xffff; break;
        case 0x32: res = (uint32_t)(int32_t)(int8_t)a; break;
        case 0x33: res = a & 0xff; break;
        case 0x38: case 0x39: case 0x3a: case 0x3b: { /* clip, clipu (Is2 = rs2 field), clipr, clipur */
          int32_t hi, lo, v = (int32_t)a;
          if (f7 < 0x3a) {
            hi = r2 ? (int32_t)((1u << (r2 - 1)) - 1) : 0;
            lo = f7 == 0x38 ? (r2 ? -(int32_t)(1u << (r2 - 1)) : -1) : 0;
          } else {
            hi = (int32_t)(b & 0x7fffffff);
            lo = f7 == 0x3a ? -hi - 1 : 0;
          }
          res = (uint32_t)(v <= lo ? lo : v >= hi ? hi : v);
          break;
        }
        case 0x40: res = (uint32_t)((int32_t)(d + a) >> (b & 31)); break; /* addNr */
        case 0x41: res = (d + a) >> (b & 31); break;                      /* adduNr */
        case 0x48: res = d + a * b; break;
        case 0x49: res = d - a * b; break;
        default: return 0;
        }
      }
    } else if (f3 == 4) { /* hardware loops */
      uint32_t L = rd & 1, f4 = rd >> 1, uimm = (uint32_t)w >> 20;
      switch (f4) {
      case 0: l->start[L] = pc + (uimm << 2); break;
      case 1: l->start[L] = a & ~3u; break;
      case 2: l->end[L] = pc + (uimm << 2); break;
      case 3: l->end[L] = a & ~3u; break;
      case 4: l->count[L] = uimm; break;
      case 5: l->count[L] = a; break;
      case 6: l->start[L] = pc + 4; l->end[L] = pc + (r1 << 2); l->count[L] = uimm; break;
      case 7: l->start[L] = pc + 4; l->end[L] = pc + (uimm << 2); l->count[L] = a; break;
      default: return 0;
      }
      arm(l, L);
      write = 0;
    } else
      return 0;
    break;
  case 0x5b: { /* bit fields (funct3 000/001), add/sub with normalisation, 16-bit multiply(-accumulate) */
    uint32_t f2 = w >> 30, is3 = (w >> 25) & 31;
    if (f3 <= 1) {
      uint32_t wb = is3 + 1, p = r2, mk = bitmask(wb, p), hi = wb + p > 32 ? 32 : wb + p;
      uint32_t k = f3 * 4 + f2; /* 0 extract, 1 extractu, 2 insert, 4 bclr, 5 bset */
      if (k == 0) res = (uint32_t)((int32_t)((a & mk) << (32 - hi)) >> (32 - hi + p));
      else if (k == 1) res = (a & mk) >> p;
      else if (k == 2) res = (d & ~mk) | ((a << p) & mk);
      else if (k == 4) res = a & ~mk;
      else if (k == 5) res = a | mk;
      else return 0;
    } else
      return 0;
    break;
  }
  case 0x7b: /* SIMD: funct5 = [31:27], F = [26] must be 0; Imm6 = {[24:20], [25]} */
    if ((w >> 26) & 1) return 0;
    res = simd(w >> 27, f3, a, b, ((w >> 25) & 1) | (r2 << 1), d, &ok);
    if (!ok) return 0;
    break;
  default:
    return 0;
  }
  if (write && rd) x[rd] = res;
  __asm__ volatile("csrw mepc, %0" ::"r"(pc + 4));
  return 1;
}
