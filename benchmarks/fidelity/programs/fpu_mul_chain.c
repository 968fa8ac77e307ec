/* Dependent FP multiplications: N iterations of 4 x fmul.s on one value; addi; bnez. */
#include "bench.h"

#define N 1000

KERNEL static float kernel(uint32_t n, float a, float b) {
  __asm__ volatile("1: fmul.s %1, %1, %2\n fmul.s %1, %1, %2\n fmul.s %1, %1, %2\n fmul.s %1, %1, %2\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+f"(a)
                   : "f"(b));
  return a;
}

int main(void) {
  BENCH_BEGIN();
  float a = kernel(N, 1.0f, 1.0f);
  BENCH_END();
  return bench_done(a == 1.0f);
}
