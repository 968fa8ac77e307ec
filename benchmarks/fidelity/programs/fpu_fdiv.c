/* FP division: N iterations of a dependent fdiv.s; addi; bnez. */
#include "bench.h"

#define N 500

KERNEL static float kernel(uint32_t n, float a, float b) {
  __asm__ volatile("1: fdiv.s %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b" : "+r"(n), "+f"(a) : "f"(b));
  return a;
}

int main(void) {
  float e = 3.0f;
  for (int i = 0; i < N; i++) e /= 1.0001f;
  BENCH_BEGIN();
  float a = kernel(N, 3.0f, 1.0001f);
  BENCH_END();
  return bench_done(a == e);
}
