/* Independent fused multiply-adds: N iterations of 4 x fmadd.s on four accumulators. */
#include "bench.h"

#define N 1000

KERNEL static float kernel(uint32_t n, float b) {
  float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
  __asm__ volatile("1: fmadd.s %1, %5, %5, %1\n fmadd.s %2, %5, %5, %2\n fmadd.s %3, %5, %5, %3\n"
                   " fmadd.s %4, %5, %5, %4\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3)
                   : "f"(b));
  return a0 + a1 + a2 + a3;
}

int main(void) {
  BENCH_BEGIN();
  float a = kernel(N, 1.0f);
  BENCH_END();
  return bench_done(a == 4.0f * N);
}
