/* Jumps: N iterations of j (forward); addi; addi; bnez. */
#include "bench.h"

#define N 2000

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t k = 0;
  __asm__ volatile("1: j 2f\n addi %1, %1, 100\n2: addi %1, %1, 1\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(k));
  return k;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t k = kernel(N);
  BENCH_END();
  return bench_done(k == N);
}
