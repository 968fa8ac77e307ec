/* Load-use stalls: N iterations of 2 x (lw; add using it); addi; bnez. */
#include "bench.h"

#define N 2000

static volatile uint32_t words[2] = {3, 4};

KERNEL static uint32_t kernel(uint32_t n, const volatile uint32_t *p) {
  uint32_t acc = 0, t;
  __asm__ volatile("1: lw %2, 0(%3)\n add %1, %1, %2\n lw %2, 4(%3)\n add %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(acc), "=&r"(t)
                   : "r"(p)
                   : "memory");
  return acc;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t acc = kernel(N, words);
  BENCH_END();
  return bench_done(acc == 7 * N);
}
