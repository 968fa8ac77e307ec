/* Compares, min/max and sign injection: N iterations of flt.s; fmin.s; fmax.s; fsgnjn.s; add. */
#include "bench.h"

#define N 1000

KERNEL static uint32_t kernel(uint32_t n, float a, float b) {
  uint32_t k = 0, t;
  float m, x;
  __asm__ volatile("1: flt.s %2, %5, %6\n fmin.s %3, %5, %6\n fmax.s %4, %3, %6\n fsgnjn.s %4, %4, %4\n"
                   " add %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(k), "=&r"(t), "=&f"(m), "=&f"(x)
                   : "f"(a), "f"(b));
  return k;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t k = kernel(N, 1.0f, 2.0f);
  BENCH_END();
  return bench_done(k == N);
}
