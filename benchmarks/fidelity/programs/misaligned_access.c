/* Misaligned word loads and stores: N iterations of lw and sw at addresses of 1 mod 4. */
#include "bench.h"

#define N 1000

static uint8_t buf[16] __attribute__((aligned(4)));

KERNEL static uint32_t kernel(uint32_t n, uint8_t *p) {
  uint32_t acc = 0, t;
  __asm__ volatile("1: lw %2, 1(%3)\n addi %2, %2, 1\n sw %2, 5(%3)\n add %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(acc), "=&r"(t)
                   : "r"(p)
                   : "memory");
  return acc;
}

int main(void) {
  for (int i = 0; i < 16; i++) buf[i] = (uint8_t)i;
  uint32_t w = 1u | 2u << 8 | 3u << 16 | 4u << 24;
  BENCH_BEGIN();
  uint32_t acc = kernel(N, buf);
  BENCH_END();
  return bench_done(acc == (w + 1) * N && buf[5] == 2 && buf[8] == 4);
}
