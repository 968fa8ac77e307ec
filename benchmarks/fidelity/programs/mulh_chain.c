/* High multiplications: N iterations of mulh; mulhu; mulhsu (dependent); addi; bnez. */
#include "bench.h"

#define N 1000

KERNEL static int32_t kernel(uint32_t n, int32_t a, int32_t b) {
  __asm__ volatile("1: mulh %1, %1, %2\n addi %1, %1, 7\n mulhu %1, %1, %2\n addi %1, %1, 7\n mulhsu %1, %1, %2\n"
                   " addi %1, %1, 7\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(a)
                   : "r"(b));
  return a;
}

int main(void) {
  int32_t e = 0x12345678;
  const int32_t b = (int32_t)0x9abcdef1u;
  for (int i = 0; i < N; i++) {
    e = (int32_t)(((int64_t)e * b) >> 32) + 7;
    e = (int32_t)(((uint64_t)(uint32_t)e * (uint32_t)b) >> 32) + 7;
    e = (int32_t)(((int64_t)e * (int64_t)(uint32_t)b) >> 32) + 7;
  }
  BENCH_BEGIN();
  int32_t a = kernel(N, 0x12345678, b);
  BENCH_END();
  return bench_done(a == e);
}
