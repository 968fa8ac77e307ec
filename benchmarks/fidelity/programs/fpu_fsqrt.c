/* FP square root: N iterations of fsqrt.s of a constant, then an fadd.s of the result; addi; bnez. */
#include "bench.h"

#define N 500

KERNEL static float kernel(uint32_t n, float x) {
  float acc = 0, r;
  __asm__ volatile("1: fsqrt.s %2, %3\n fadd.s %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+f"(acc), "=&f"(r)
                   : "f"(x));
  return acc;
}

int main(void) {
  BENCH_BEGIN();
  float a = kernel(N, 4.0f);
  BENCH_END();
  return bench_done(a == 2.0f * N);
}
