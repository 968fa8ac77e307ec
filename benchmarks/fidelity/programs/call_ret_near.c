/* Near calls and returns: N iterations of jal to a leaf (addi; addi; ret) and back; addi; bnez. */
#include "bench.h"

#define N 1000

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t k = 0;
  __asm__ volatile("j 2f\n"
                   "1: addi %1, %1, 1\n addi %1, %1, 1\n ret\n"
                   "2: jal ra, 1b\n addi %0, %0, -1\n bnez %0, 2b"
                   : "+r"(n), "+r"(k)
                   :
                   : "ra");
  return k;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t k = kernel(N);
  BENCH_END();
  return bench_done(k == 2 * N);
}
