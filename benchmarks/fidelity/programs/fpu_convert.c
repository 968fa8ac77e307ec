/* Conversions and moves (the FPU's other group): N iterations of fcvt.s.w; fcvt.w.s; fmv.x.w;
 * fmv.w.x with dependencies through the integer side. */
#include "bench.h"

#define N 1000

KERNEL static int32_t kernel(uint32_t n, int32_t x) {
  float f;
  int32_t t;
  __asm__ volatile("1: fcvt.s.w %2, %1\n fcvt.w.s %1, %2, rtz\n addi %1, %1, 1\n fmv.x.w %3, %2\n fmv.w.x %2, %3\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(x), "=&f"(f), "=&r"(t));
  return x;
}

int main(void) {
  BENCH_BEGIN();
  int32_t x = kernel(N, 5);
  BENCH_END();
  return bench_done(x == 5 + N);
}
