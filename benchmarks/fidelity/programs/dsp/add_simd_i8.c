/* int8 element-wise add on 4 lanes (wrapping) in a hardware loop: per trip 2 x cv.lw; cv.add.b
 * (load-use on the second load); cv.sw post-increment. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256 /* words */

static int8_t A[4 * N] __attribute__((aligned(4))), B[4 * N] __attribute__((aligned(4))), C[4 * N] __attribute__((aligned(4)));

KERNEL static void kernel(const int8_t *a, const int8_t *b, int8_t *c, uint32_t n) {
  uint32_t x, y;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y]", "%[b]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_ADD, 1, "%[x]", "%[x]", "%[y]")
                   XPULP_ASM_ST_PI(2, "%[x]", "%[c]", 4) "1:\n" XPULP_LOOP_FINISH
                   : [a] "+r"(a), [b] "+r"(b), [c] "+r"(c), [x] "=&r"(x), [y] "=&r"(y)
                   : [n] "r"(n)
                   : "memory");
}

int main(void) {
  for (int i = 0; i < 4 * N; i++) { A[i] = bench_rand_i8(); B[i] = bench_rand_i8(); }
  BENCH_BEGIN();
  kernel(A, B, C, N);
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < 4 * N; i++) ok &= C[i] == (int8_t)(A[i] + B[i]);
  return bench_done(ok);
}
