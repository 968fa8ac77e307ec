/* Bit manipulation mix in a hardware loop: per word cv.lw post-increment; cv.cnt (load-use);
 * cv.ff1; cv.fl1; cv.ror; cv.clb; and adds folding the results. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256
#define ROT 11

static uint32_t W[N];

KERNEL static uint32_t kernel(const uint32_t *p, uint32_t n, uint32_t rot) {
  uint32_t s = 0, x, a, b;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x]", "%[p]", 4)
                   XPULP_ASM_ALU(XPULP_ALU_CNT, "%[a]", "%[x]", "x0")
                   XPULP_ASM_ALU(XPULP_ALU_FF1, "%[b]", "%[x]", "x0") "add %[s], %[s], %[a]\n"
                   XPULP_ASM_ALU(XPULP_ALU_FL1, "%[a]", "%[x]", "x0") "add %[s], %[s], %[b]\n"
                   XPULP_ASM_ALU(XPULP_ALU_ROR, "%[b]", "%[x]", "%[rot]") "add %[s], %[s], %[a]\n"
                   XPULP_ASM_ALU(XPULP_ALU_CLB, "%[a]", "%[x]", "x0") "xor %[s], %[s], %[b]\n"
                   "add %[s], %[s], %[a]\n" "1:\n" XPULP_LOOP_FINISH
                   : [s] "+r"(s), [p] "+r"(p), [x] "=&r"(x), [a] "=&r"(a), [b] "=&r"(b)
                   : [n] "r"(n), [rot] "r"(rot)
                   : "memory");
  return s;
}

static uint32_t ref_clb(uint32_t x) { /* leading sign bits minus one; 0 for 0 */
  if (x == 0) return 0;
  uint32_t n = 0, sign = x >> 31;
  for (int i = 30; i >= 0 && ((x >> i) & 1) == sign; i--) n++;
  return n;
}

int main(void) {
  for (int i = 0; i < N; i++) W[i] = bench_rand() >> (i % 29);
  W[3] = 0; W[7] = 0xffffffffu;
  uint32_t e = 0;
  for (int i = 0; i < N; i++) {
    uint32_t x = W[i], cnt = 0, ff1 = 32, fl1 = 32;
    for (int b = 0; b < 32; b++)
      if ((x >> b) & 1) { cnt++; fl1 = b; if (ff1 == 32) ff1 = b; }
    e = (((e + cnt + ff1 + fl1) ^ ((x >> ROT) | (x << (32 - ROT)))) + ref_clb(x));
  }
  BENCH_BEGIN();
  uint32_t s = kernel(W, N, ROT);
  BENCH_END();
  return bench_done(s == e);
}
