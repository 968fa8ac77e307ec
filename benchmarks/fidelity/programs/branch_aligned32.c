/* Taken branches to an aligned 32-bit target: as branch_misaligned with the loop head at an
 * address of 0 mod 4. */
#include "bench.h"

#define N 2000

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t k = 0, one = 1;
  __asm__ volatile(".balign 4\n"
                   "1: .option push\n .option norvc\n add %1, %1, %2\n .option pop\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(k)
                   : "r"(one));
  return k;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t k = kernel(N);
  BENCH_END();
  return bench_done(k == N);
}
