/* Multiplications: N iterations of 4 dependent mul; addi; bnez. */
#include "bench.h"

#define N 1000

KERNEL static uint32_t kernel(uint32_t n, uint32_t a, uint32_t b) {
  __asm__ volatile("1: mul %1, %1, %2\n mul %1, %1, %2\n mul %1, %1, %2\n mul %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(a)
                   : "r"(b));
  return a;
}

int main(void) {
  uint32_t expect = 1;
  for (int i = 0; i < 4 * N; i++) expect *= 3u;
  BENCH_BEGIN();
  uint32_t a = kernel(N, 1, 3);
  BENCH_END();
  return bench_done(a == expect);
}
