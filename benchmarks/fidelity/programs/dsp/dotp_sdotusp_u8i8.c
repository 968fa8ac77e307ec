/* u8 x i8 dot product (unsigned activations, signed weights) in a hardware loop: per trip
 * cv.lw x, (a), 4; cv.lw y, (b), 4; cv.sdotusp.b acc, x, y. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256

static uint8_t A[4 * N] __attribute__((aligned(4)));
static int8_t B[4 * N] __attribute__((aligned(4)));

KERNEL static int32_t kernel(const uint8_t *a, const int8_t *b, uint32_t n) {
  int32_t acc = 0;
  uint32_t x, y;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y]", "%[b]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTUSP, 1, "%[acc]", "%[x]", "%[y]") "1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc), [a] "+r"(a), [b] "+r"(b), [x] "=&r"(x), [y] "=&r"(y)
                   : [n] "r"(n)
                   : "memory");
  return acc;
}

int main(void) {
  for (int i = 0; i < 4 * N; i++) { A[i] = (uint8_t)bench_rand_i8(); B[i] = bench_rand_i8(); }
  int32_t e = 0;
  for (int i = 0; i < 4 * N; i++) e += (int32_t)A[i] * B[i];
  BENCH_BEGIN();
  int32_t acc = kernel(A, B, N);
  BENCH_END();
  return bench_done(acc == e);
}
