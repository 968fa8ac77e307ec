/* int8 dot product, scheduled hardware loop: two words of each operand per trip, all four loads
 * before the two cv.sdotsp.b (no load-use stall). */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256 /* trips: 8 bytes of each operand */

static int8_t A[8 * N] __attribute__((aligned(4))), B[8 * N] __attribute__((aligned(4)));

KERNEL static int32_t kernel(const int8_t *a, const int8_t *b, uint32_t n) {
  int32_t acc = 0, acc1 = 0;
  uint32_t x0, y0, x1, y1;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x0]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y0]", "%[b]", 4)
                   XPULP_ASM_LD_PI(2, "%[x1]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y1]", "%[b]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[acc]", "%[x0]", "%[y0]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[acc1]", "%[x1]", "%[y1]") "1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc), [acc1] "+r"(acc1), [a] "+r"(a), [b] "+r"(b), [x0] "=&r"(x0), [y0] "=&r"(y0),
                     [x1] "=&r"(x1), [y1] "=&r"(y1)
                   : [n] "r"(n)
                   : "memory");
  return acc + acc1;
}

int main(void) {
  for (int i = 0; i < 8 * N; i++) { A[i] = bench_rand_i8(); B[i] = bench_rand_i8(); }
  int32_t e = 0;
  for (int i = 0; i < 8 * N; i++) e += A[i] * B[i];
  BENCH_BEGIN();
  int32_t acc = kernel(A, B, N);
  BENCH_END();
  return bench_done(acc == e);
}
