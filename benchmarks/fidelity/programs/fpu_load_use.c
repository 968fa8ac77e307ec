/* FP load-use: N iterations of flw; fadd.s using it; flw; fmul.s using it; addi; bnez. */
#include "bench.h"

#define N 1000

static volatile float vals[2] = {1.0f, 1.0f};

KERNEL static float kernel(uint32_t n, const volatile float *p) {
  float acc = 0, t;
  __asm__ volatile("1: flw %2, 0(%3)\n fadd.s %1, %1, %2\n flw %2, 4(%3)\n fmul.s %1, %1, %2\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+f"(acc), "=&f"(t)
                   : "r"(p)
                   : "memory");
  return acc;
}

int main(void) {
  BENCH_BEGIN();
  float a = kernel(N, vals);
  BENCH_END();
  return bench_done(a == (float)N);
}
