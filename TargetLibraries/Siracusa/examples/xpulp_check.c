/* The PULP extension on the QEMU cluster: every operation of deeploy_xpulp.h (run as stubs or
 * through the runtime's trap-and-emulate) against a plain C reference written from the CV32E40P manual, on
 * random operands, on every core; hardware loops (1-instruction bodies, nesting, a body ending in a
 * compressed instruction, which stays on the trap path when QEMU runs the stubs); then a DSP
 * loop of XPULP_DOT_N cv.sdotsp.b (speed). Core 0 then runs two measured stretches for the timing
 * plugin: layer 0 = 100 trips of a 4 x cv.sdotsp.b hardware loop, layer 1 = 16 trips of
 * { cv.lw post-increment from L1; cv.sdotsp.b using it }. Prints "xpulp ok <checks>" or the first
 * mismatch and exits with 1. */
#include <stdint.h>
#include <stdio.h>

#include "deeploy_runtime.h"
#include "deeploy_xpulp.h"

#ifndef XPULP_DOT_N
#define XPULP_DOT_N 0
#endif

static uint32_t fails[DEEPLOY_NUM_CORES], checks[DEEPLOY_NUM_CORES];
static uint32_t first_bad[DEEPLOY_NUM_CORES][3];

static uint32_t rnd(uint32_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 17;
  *s ^= *s << 5;
  return *s;
}

#define CHECK(id, got, want)                                                                        \
  do {                                                                                              \
    uint32_t g_ = (uint32_t)(got), w_ = (uint32_t)(want);                                           \
    checks[me]++;                                                                                   \
    if (g_ != w_ && !fails[me]++) {                                                                 \
      first_bad[me][0] = (id);                                                                      \
      first_bad[me][1] = g_;                                                                        \
      first_bad[me][2] = w_;                                                                        \
    }                                                                                               \
  } while (0)

static int32_t sl(uint32_t x, int i, int b) { /* signed lane */
  int32_t v = (int32_t)((x >> (i * b)) & ((1u << b) - 1));
  return v >= (1 << (b - 1)) ? v - (1 << b) : v;
}
static uint32_t ul(uint32_t x, int i, int b) { return (x >> (i * b)) & ((1u << b) - 1); }

static uint32_t ref_lanes(uint32_t a, uint32_t b, int bits, int op) {
  uint32_t r = 0, m = (1u << bits) - 1;
  for (int i = 0; i < 32 / bits; i++) {
    int32_t x = sl(a, i, bits), y = sl(b, i, bits);
    uint32_t ux = ul(a, i, bits), uy = ul(b, i, bits), v;
    switch (op) {
    case 0: v = ux + uy; break;
    case 1: v = ux - uy; break;
    case 2: v = (uint32_t)(x < y ? x : y); break;
    case 3: v = ux < uy ? ux : uy; break;
    case 4: v = (uint32_t)(x > y ? x : y); break;
    case 5: v = ux > uy ? ux : uy; break;
    case 6: v = (uint32_t)(x < 0 ? -x : x); break;
    case 7: v = ux >> (uy & (bits - 1)); break;
    case 8: v = (uint32_t)(x >> (uy & (bits - 1))); break;
    default: v = ux << (uy & (bits - 1)); break;
    }
    r |= (v & m) << (i * bits);
  }
  return r;
}

static uint32_t ref_dot(uint32_t acc, uint32_t a, uint32_t b, int bits, int sa, int sb) {
  for (int i = 0; i < 32 / bits; i++)
    acc += (uint32_t)((sa ? sl(a, i, bits) : (int32_t)ul(a, i, bits)) * (sb ? sl(b, i, bits) : (int32_t)ul(b, i, bits)));
  return acc;
}

static int32_t ref_clip(int32_t v, int32_t lo, int32_t hi) { return v <= lo ? lo : v >= hi ? hi : v; }

static void check_ops(uint32_t me, uint32_t seed) {
  static int8_t mem[DEEPLOY_NUM_CORES][64];
  int8_t *buf = mem[me];
  for (int it = 0; it < 40; it++) {
    uint32_t a = rnd(&seed), b = rnd(&seed), c = rnd(&seed);
    if (it & 1) b &= 0x1f1f1f1f; /* small shift amounts / field specs now and then */
    CHECK(1, xpulp_sdotsp_b(c, a, b), ref_dot(c, a, b, 8, 1, 1));
    CHECK(2, xpulp_sdotup_b(c, a, b), ref_dot(c, a, b, 8, 0, 0));
    CHECK(3, xpulp_sdotusp_b(c, a, b), ref_dot(c, a, b, 8, 0, 1));
    CHECK(4, xpulp_sdotsp_h(c, a, b), ref_dot(c, a, b, 16, 1, 1));
    CHECK(5, xpulp_sdotup_h(c, a, b), ref_dot(c, a, b, 16, 0, 0));
    CHECK(6, xpulp_sdotusp_h(c, a, b), ref_dot(c, a, b, 16, 0, 1));
    CHECK(7, xpulp_dotsp_b(a, b), ref_dot(0, a, b, 8, 1, 1));
    CHECK(8, xpulp_dotup_h(a, b), ref_dot(0, a, b, 16, 0, 0));
    CHECK(9, xpulp_dotusp_b(a, b), ref_dot(0, a, b, 8, 0, 1));
    CHECK(10, xpulp_add_b(a, b), ref_lanes(a, b, 8, 0));
    CHECK(11, xpulp_add_h(a, b), ref_lanes(a, b, 16, 0));
    CHECK(12, xpulp_sub_b(a, b), ref_lanes(a, b, 8, 1));
    CHECK(13, xpulp_sub_h(a, b), ref_lanes(a, b, 16, 1));
    CHECK(14, xpulp_min_b(a, b), ref_lanes(a, b, 8, 2));
    CHECK(15, xpulp_minu_h(a, b), ref_lanes(a, b, 16, 3));
    CHECK(16, xpulp_max_h(a, b), ref_lanes(a, b, 16, 4));
    CHECK(17, xpulp_maxu_b(a, b), ref_lanes(a, b, 8, 5));
    CHECK(18, xpulp_abs_b(a), ref_lanes(a, 0, 8, 6));
    CHECK(19, xpulp_abs_h(a), ref_lanes(a, 0, 16, 6));
    CHECK(20, xpulp_srl_b(a, b), ref_lanes(a, b, 8, 7));
    CHECK(21, xpulp_sra_h(a, b), ref_lanes(a, b, 16, 8));
    CHECK(22, xpulp_sll_b(a, b), ref_lanes(a, b, 8, 9));
    CHECK(64, xpulp_and_b(a, b), a & b);
    CHECK(65, xpulp_or_b(a, b), a | b);
    CHECK(66, xpulp_xor_b(a, b), a ^ b);
    CHECK(23, xpulp_extract_b(a, 2), sl(a, 2, 8));
    CHECK(24, xpulp_extractu_h(a, 1), ul(a, 1, 16));
    CHECK(25, xpulp_insert_b(c, a, 3), (c & 0x00ffffffu) | (a << 24));
    CHECK(26, xpulp_insert_h(c, a, 0), (c & 0xffff0000u) | (a & 0xffff));
    uint32_t sh = 0;
    for (int i = 0; i < 4; i++) sh |= ul(a, ul(b, i, 8) & 3, 8) << (8 * i);
    CHECK(27, xpulp_shuffle_b(a, b), sh);
    sh = 0;
    for (int i = 0; i < 4; i++) sh |= ul((ul(b, i, 8) & 4) ? a : c, ul(b, i, 8) & 3, 8) << (8 * i);
    CHECK(28, xpulp_shuffle2_b(c, a, b), sh);
    CHECK(29, xpulp_mac((int32_t)c, (int32_t)a, (int32_t)b), c + a * b);
    CHECK(30, xpulp_msu((int32_t)c, (int32_t)a, (int32_t)b), c - a * b);
    CHECK(73, xpulp_addnr((int32_t)c, (int32_t)a, (int32_t)b), (uint32_t)((int32_t)(c + a) >> (b & 31)));
    CHECK(74, xpulp_addunr(c, a, b), (c + a) >> (b & 31));
    CHECK(31, xpulp_min((int32_t)a, (int32_t)b), (int32_t)a < (int32_t)b ? a : b);
    CHECK(32, xpulp_maxu(a, b), a > b ? a : b);
    CHECK(33, xpulp_abs((int32_t)a), (int32_t)a < 0 ? -a : a);
    int32_t v = (int32_t)a >> (a & 15);
    CHECK(34, xpulp_clip(v, 8), ref_clip(v, -128, 127));
    CHECK(35, xpulp_clipu(v, 9), ref_clip(v, 0, 255));
    CHECK(36, xpulp_clipr(v, (int32_t)(b & 0xffff)), ref_clip(v, -(int32_t)(b & 0xffff) - 1, (int32_t)(b & 0xffff)));
    CHECK(37, xpulp_clipur(v, (int32_t)(b & 0xffff)), ref_clip(v, 0, (int32_t)(b & 0xffff)));
    CHECK(38, xpulp_extract(a, 5, 9), (uint32_t)((int32_t)(a << (32 - 14)) >> (32 - 5)));
    CHECK(39, xpulp_extractu(a, 12, 20), a >> 20);
    CHECK(40, xpulp_insert(c, a, 7, 3), (c & ~(0x7fu << 3)) | ((a & 0x7f) << 3));
    CHECK(41, xpulp_bclr(a, 4, 28), a & 0x0fffffffu);
    CHECK(42, xpulp_bset(a, 3, 0), a | 7);
    CHECK(43, xpulp_cnt(a), (uint32_t)__builtin_popcount(a));
    CHECK(44, xpulp_ff1(a & b), (a & b) ? (uint32_t)__builtin_ctz(a & b) : 32);
    CHECK(45, xpulp_fl1(a >> (b & 31)), (a >> (b & 31)) ? 31 - (uint32_t)__builtin_clz(a >> (b & 31)) : 32);
    CHECK(46, xpulp_ror(a, b), (a >> (b & 31)) | (a << ((32 - (b & 31)) & 31)));
    /* loads and stores */
    for (int i = 0; i < 64; i++) buf[i] = (int8_t)rnd(&seed);
    const int8_t *p = buf + 4 * (it & 7);
    const int8_t *p0 = p;
    int32_t inc = 4;
    CHECK(47, xpulp_lb_postinc(p, 3), buf[4 * (it & 7)]);
    CHECK(48, xpulp_lhu_postinc(p, -2), *(const uint16_t *)(p0 + 3) * 0 + (uint16_t)(((uint8_t)p0[3]) | ((uint8_t)p0[4] << 8)));
    CHECK(49, p, p0 + 1);
    CHECK(50, xpulp_lw_postinc_r(p, inc), (uint32_t)(uint8_t)p0[1] | (uint32_t)(uint8_t)p0[2] << 8 |
                                              (uint32_t)(uint8_t)p0[3] << 16 | (uint32_t)(uint8_t)p0[4] << 24);
    CHECK(51, p, p0 + 5);
    CHECK(52, xpulp_lh_rr(p, inc), (int16_t)((uint8_t)p0[9] | (uint8_t)p0[10] << 8));
    CHECK(53, xpulp_lbu_rr(p, -inc), (uint8_t)p0[1]);
    int8_t *q = buf + 32, *q0 = q;
    xpulp_sw_postinc(q, a, 4);
    xpulp_sh_postinc_r(q, b, inc);
    xpulp_sb_rr(q, c, inc);
    CHECK(54, q, q0 + 8);
    CHECK(55, *(uint32_t *)q0, a);
    CHECK(56, *(uint16_t *)(q0 + 4), b & 0xffff);
    CHECK(57, (uint8_t)q0[12], c & 0xff);
    /* operands sharing a register (rD written last) */
    uint32_t x = c;
    __asm__(".insn r 0x7b, 1, 0x54, %0, %0, %1" : "+r"(x) : "r"(a)); /* cv.sdotsp.b x, x, a */
    CHECK(68, x, ref_dot(c, c, a, 8, 1, 1));
    x = c;
    __asm__(".insn r 0x7b, 1, 0x48, %0, %1, %0" : "+r"(x) : "r"(a)); /* cv.dotsp.b x, a, x */
    CHECK(69, x, ref_dot(0, a, c, 8, 1, 1));
    x = c;
    __asm__(".insn r 0x7b, 0, 0x50, %0, %0, %0" : "+r"(x)); /* cv.sdotusp.h x, x, x */
    CHECK(70, x, ref_dot(c, c, c, 16, 0, 1));
    x = c;
    __asm__(".insn r 0x2b, 3, 0x48, %0, %0, %1" : "+r"(x) : "r"(b)); /* cv.mac x, x, b */
    CHECK(71, x, c + c * b);
    x = (uint32_t)(uintptr_t)(buf + 4);
    __asm__ volatile(".insn i 0x0b, 2, %0, %0, 4" : "+r"(x) : "m"(*(const uint32_t *)(buf + 4))); /* cv.lw x, (x), 4 */
    CHECK(72, x, (uint32_t)(uint8_t)buf[4] | (uint32_t)(uint8_t)buf[5] << 8 | (uint32_t)(uint8_t)buf[6] << 16 |
                     (uint32_t)(uint8_t)buf[7] << 24);
  }
}

static void check_loops(uint32_t me, uint32_t seed) {
  for (int it = 0; it < 8; it++) {
    uint32_t n = 1 + rnd(&seed) % 9, m = 1 + rnd(&seed) % 5, s = 0, t = 0;
    /* one-instruction body */
    __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f") "  addi %[s], %[s], 3\n1:\n" XPULP_LOOP_FINISH
                     : [s] "+r"(s)
                     : [n] "r"(n));
    CHECK(60, s, 3 * n);
    /* nested: outer m times { inner n times { s += 1 }; t += 1 } */
    s = 0;
    __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(1, "%[m]", "2f") XPULP_LP_SETUP(0, "%[n]", "1f")
                     "  addi %[s], %[s], 1\n1:\n  addi %[t], %[t], 1\n2:\n" XPULP_LOOP_FINISH
                     : [s] "+r"(s), [t] "+r"(t)
                     : [n] "r"(n), [m] "r"(m));
    CHECK(61, s, n * m);
    CHECK(62, t, m);
    /* immediate forms: count 5, long form (starti / endi / counti) */
    s = 0;
    __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUPI(0, 5, "1f") "  addi %[s], %[s], 1\n  addi %[s], %[s], 1\n1:\n"
                     XPULP_LP_STARTI(1, "3f") XPULP_LP_ENDI(1, "4f") XPULP_LP_COUNTI(1, 4)
                     "3:\n  addi %[s], %[s], 100\n4:\n" XPULP_LOOP_FINISH
                     : [s] "+r"(s));
    CHECK(63, s, 10 + 400);
    /* a body ending in a compressed instruction: the image rewriting (Deeploy/targets/pulp/stubs.py)
     * leaves this loop to the trap path */
    s = 0;
    __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f") "  addi %[s], %[s], 1\n"
                     ".option rvc\n  c.addi %[s], 2\n  c.addi %[s], 4\n1:\n" XPULP_LOOP_FINISH
                     : [s] "+r"(s)
                     : [n] "r"(n));
    CHECK(67, s, 7 * n);
  }
}

static uint32_t dots[DEEPLOY_NUM_CORES];

static void dsp_loop(uint32_t me) {
  /* XPULP_DOT_N sdotsp.b in a hardware loop, 4 per trip */
  static const uint32_t w[4] = {0x01020304u, 0xfffefdfcu, 0x7f80017fu, 0x11223344u};
  uint32_t acc = me, n = XPULP_DOT_N / 4;
  if (!n) return;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   ".insn r 0x7b, 1, 0x54, %[acc], %[a], %[b]\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[b], %[c]\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[c], %[d]\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[d], %[a]\n1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc)
                   : [n] "r"(n), [a] "r"(w[0]), [b] "r"(w[1]), [c] "r"(w[2]), [d] "r"(w[3]));
  dots[me] = acc;
}

static DEEPLOY_L1 uint32_t l1_words[16];

/* the measured stretches (layers 0 and 1) */
static uint32_t measured(void) {
  uint32_t acc = 0, n = 100, x;
  const uint32_t *p = l1_words;
  DEEPLOY_MARK_LAYER(0);
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   ".insn r 0x7b, 1, 0x54, %[acc], %[n], %[n]\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[n], %[n]\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[n], %[n]\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[n], %[n]\n1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc)
                   : [n] "r"(n));
  DEEPLOY_MARK_LAYER(1);
  n = 16;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   ".insn i 0x0b, 2, %[x], %[p], 4\n"
                   ".insn r 0x7b, 1, 0x54, %[acc], %[x], %[x]\n1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc), [p] "+r"(p), [x] "=&r"(x)
                   : [n] "r"(n));
  DEEPLOY_MARK_LAYER_END();
  return acc;
}

static void task(void *arg) {
  (void)arg;
  uint32_t me = deeploy_core_id();
  check_ops(me, 0x9e3779b9u * (me + 1));
  check_loops(me, 0x85ebca6bu * (me + 1));
  dsp_loop(me);
}

int main(void) {
  deeploy_cluster_fork(task, 0);
  uint32_t total = 0, bad = 0;
  for (uint32_t h = 0; h < DEEPLOY_NUM_CORES; h++) {
    total += checks[h];
    if (fails[h] && !bad++)
      printf("core %u: check %u got 0x%08x want 0x%08x (%u failures)\n", (unsigned)h, (unsigned)first_bad[h][0],
             (unsigned)first_bad[h][1], (unsigned)first_bad[h][2], (unsigned)fails[h]);
  }
  if (XPULP_DOT_N) printf("dot %u\n", (unsigned)dots[0]);
  for (uint32_t i = 0; i < 16; i++) l1_words[i] = 0x01010101u * (i + 1);
  uint32_t m = measured(), want = 400 * 100 * 100; /* lane 0 of n = 100: 100 * 100 */
  for (uint32_t i = 0; i < 16; i++) want += 4 * (i + 1) * (i + 1);
  if (m != want) {
    printf("measured loops: got %u want %u\n", (unsigned)m, (unsigned)want);
    return 1;
  }
  if (bad) return 1;
  printf("xpulp ok %u\n", (unsigned)total);
  return 0;
}
