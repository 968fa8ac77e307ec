/* Calls and returns: N calls of a small function (jal, 2 x add, ret). */
#include "bench.h"

#define N 1000

__attribute__((noinline)) static uint32_t step(uint32_t x, uint32_t y) {
  __asm__ volatile("" : "+r"(x));
  return x + y + 1;
}

KERNEL static uint32_t kernel(uint32_t n) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) k = step(k, i & 1);
  return k;
}

int main(void) {
  BENCH_BEGIN();
  uint32_t k = kernel(N);
  BENCH_END();
  return bench_done(k == N + N / 2);
}
