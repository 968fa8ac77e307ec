/* Dependent fused multiply-adds: N iterations of 4 x fmadd.s on one accumulator; addi; bnez. */
#include "bench.h"

#define N 1000

KERNEL static float kernel(uint32_t n, float a, float b) {
  __asm__ volatile("1: fmadd.s %1, %2, %2, %1\n fmadd.s %1, %2, %2, %1\n fmadd.s %1, %2, %2, %1\n"
                   " fmadd.s %1, %2, %2, %1\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+f"(a)
                   : "f"(b));
  return a;
}

int main(void) {
  BENCH_BEGIN();
  float a = kernel(N, 0.0f, 1.0f);
  BENCH_END();
  return bench_done(a == 4.0f * N);
}
