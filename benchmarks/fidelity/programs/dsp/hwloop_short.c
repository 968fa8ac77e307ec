/* The shortest hardware-loop bodies: two instructions and three (the CV32E40P manual's minimum,
 * "HWLoop constraints"; the RTL runs a one-instruction body once, not count times). */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 500

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t s = 3 * n, t = 0, u = 0;
  __asm__ volatile(XPULP_LOOP_BEGIN
                   XPULP_LP_SETUP(0, "%[n]", "2f") "addi %[s], %[s], 5\n xori %[t], %[t], 1\n2:\n"
                   XPULP_LP_SETUP(0, "%[n]", "3f") "addi %[s], %[s], 7\n xori %[t], %[t], 1\n addi %[u], %[u], 1\n3:\n"
                   XPULP_LOOP_FINISH
                   : [s] "+r"(s), [t] "+r"(t), [u] "+r"(u)
                   : [n] "r"(n));
  return s + t + u;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t s = kernel(N);
  BENCH_END();
  return bench_done(s == 15 * N + N);
}
