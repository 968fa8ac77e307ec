/* Dependent FP additions: N iterations of 4 x fadd.s on one accumulator; addi; bnez. */
#include "bench.h"

#define N 1000

KERNEL static float kernel(uint32_t n, float a, float b) {
  __asm__ volatile("1: fadd.s %1, %1, %2\n fadd.s %1, %1, %2\n fadd.s %1, %1, %2\n fadd.s %1, %1, %2\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
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
