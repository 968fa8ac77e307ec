/* FP results used by the integer side right away: N iterations of feq.s; add; fcvt.w.s; add. */
#include "bench.h"

#define N 1000

KERNEL static int32_t kernel(uint32_t n, float a) {
  int32_t k = 0, t;
  __asm__ volatile("1: feq.s %2, %3, %3\n add %1, %1, %2\n fcvt.w.s %2, %3, rtz\n add %1, %1, %2\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(k), "=&r"(t)
                   : "f"(a));
  return k;
}

int main(void) {
  BENCH_BEGIN();
  int32_t k = kernel(N, 2.0f);
  BENCH_END();
  return bench_done(k == 3 * N);
}
