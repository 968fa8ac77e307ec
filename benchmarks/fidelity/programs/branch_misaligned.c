/* Taken branches to a misaligned 32-bit target: the loop head is a 32-bit instruction at an
 * address of 2 mod 4 (a c.nop before it), N iterations of add (32-bit); addi; bnez. */
#include "bench.h"

#define N 2000

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t k = 0, one = 1;
  __asm__ volatile(".balign 4\n c.nop\n"
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
