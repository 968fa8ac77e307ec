/* int8 dot product with the PULP DSP extension in a branch loop: N iterations of 2 x lw; addi;
 * addi; cv.sdotsp.b (4 signed int8 products accumulated into rd); addi; bnez. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256

static int8_t A[4 * N] __attribute__((aligned(4))), B[4 * N] __attribute__((aligned(4)));

KERNEL static int32_t kernel(const int8_t *a, const int8_t *b, uint32_t n) {
  int32_t acc = 0;
  uint32_t x, y;
  __asm__ volatile("1: lw %3, 0(%1)\n lw %4, 0(%2)\n addi %1, %1, 4\n addi %2, %2, 4\n"
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%0", "%3", "%4") " addi %5, %5, -1\n bnez %5, 1b"
                   : "+r"(acc), "+r"(a), "+r"(b), "=&r"(x), "=&r"(y), "+r"(n)
                   :
                   : "memory");
  return acc;
}

int main(void) {
  for (int i = 0; i < 4 * N; i++) { A[i] = bench_rand_i8(); B[i] = bench_rand_i8(); }
  int32_t e = 0;
  for (int i = 4 * N - 1; i >= 0; i--) e += A[i] * B[i];
  BENCH_BEGIN();
  int32_t acc = kernel(A, B, N);
  BENCH_END();
  return bench_done(acc == e);
}
