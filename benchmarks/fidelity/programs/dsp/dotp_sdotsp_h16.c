/* int16 dot product with cv.sdotsp.h (2 lanes) in a hardware loop, scheduled: per trip two words
 * of each operand, loads first. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256 /* trips: 4 int16 of each operand */

static int16_t A[4 * N] __attribute__((aligned(4))), B[4 * N] __attribute__((aligned(4)));

KERNEL static int32_t kernel(const int16_t *a, const int16_t *b, uint32_t n) {
  int32_t acc = 0;
  uint32_t x0, y0, x1, y1;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x0]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y0]", "%[b]", 4)
                   XPULP_ASM_LD_PI(2, "%[x1]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y1]", "%[b]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 0, "%[acc]", "%[x0]", "%[y0]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 0, "%[acc]", "%[x1]", "%[y1]") "1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc), [a] "+r"(a), [b] "+r"(b), [x0] "=&r"(x0), [y0] "=&r"(y0), [x1] "=&r"(x1),
                     [y1] "=&r"(y1)
                   : [n] "r"(n)
                   : "memory");
  return acc;
}

int main(void) {
  for (int i = 0; i < 4 * N; i++) { A[i] = (int16_t)(bench_rand() >> 20); B[i] = (int16_t)(bench_rand() >> 20); }
  int32_t e = 0;
  for (int i = 0; i < 4 * N; i++) e += A[i] * B[i];
  BENCH_BEGIN();
  int32_t acc = kernel(A, B, N);
  BENCH_END();
  return bench_done(acc == e);
}
