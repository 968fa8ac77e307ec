/* Jump-register hazard: N iterations of a jalr whose target register the instruction before it
 * writes (la; jalr), then back. */
#include "bench.h"

#define N 1000

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t k = 0, t;
  __asm__ volatile("1: la %2, 2f\n jalr zero, 0(%2)\n2: addi %1, %1, 1\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(k), "=&r"(t));
  return k;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t k = kernel(N);
  BENCH_END();
  return bench_done(k == N);
}
