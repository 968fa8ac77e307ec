/* FP square root: N iterations of fsqrt.s of 2 (no early exit of the iterative unit), then an fadd.s of the result; addi; bnez. */
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
  float a = kernel(N, 2.0f), r = 1.41421354f;  /* sqrtf(2) rounded to float */
  BENCH_END();
  float e = 0.0f;
  for (int i = 0; i < N; i++) e += r;
  return bench_done(a == e);
}
