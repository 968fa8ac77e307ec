/* int8 max pooling over 3 rows on 4 lanes (the PULP maxpool's inner loop) in a hardware loop:
 * per trip 3 x cv.lw; 2 x cv.max.b; cv.sw post-increment. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256 /* words per row */

static int8_t X[3][4 * N] __attribute__((aligned(4))), Y[4 * N] __attribute__((aligned(4)));

KERNEL static void kernel(const int8_t *r0, const int8_t *r1, const int8_t *r2, int8_t *y, uint32_t n) {
  uint32_t a, b, c;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[a]", "%[r0]", 4) XPULP_ASM_LD_PI(2, "%[b]", "%[r1]", 4)
                   XPULP_ASM_LD_PI(2, "%[c]", "%[r2]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_MAX, 1, "%[a]", "%[a]", "%[b]")
                   XPULP_ASM_SIMD(XPULP_SIMD_MAX, 1, "%[a]", "%[a]", "%[c]")
                   XPULP_ASM_ST_PI(2, "%[a]", "%[y]", 4) "1:\n" XPULP_LOOP_FINISH
                   : [r0] "+r"(r0), [r1] "+r"(r1), [r2] "+r"(r2), [y] "+r"(y), [a] "=&r"(a), [b] "=&r"(b),
                     [c] "=&r"(c)
                   : [n] "r"(n)
                   : "memory");
}

int main(void) {
  for (int r = 0; r < 3; r++)
    for (int i = 0; i < 4 * N; i++) X[r][i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel(X[0], X[1], X[2], Y, N);
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < 4 * N; i++) {
    int8_t m = X[0][i] > X[1][i] ? X[0][i] : X[1][i];
    ok &= Y[i] == (X[2][i] > m ? X[2][i] : m);
  }
  return bench_done(ok);
}
