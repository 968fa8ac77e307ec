/* Requantisation of int32 accumulators to int8 (the PULP kernels' output stage) in a hardware
 * loop: per element cv.lw post-increment; mv; cv.mac (bias + x * mul); srai; cv.clip 8 bits;
 * cv.sb post-increment. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 512
#define MUL 93
#define BIAS 1234
#define SHIFT 9

static int32_t X[N];
static int8_t Y[N];

KERNEL static void kernel(const int32_t *x, int8_t *y, uint32_t n, int32_t mul, int32_t bias) {
  uint32_t v, r;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[v]", "%[x]", 4) "mv %[r], %[bias]\n"
                   XPULP_ASM_ALU(XPULP_ALU_MAC, "%[r]", "%[v]", "%[mul]") "srai %[r], %[r], " XPULP_STR(SHIFT) "\n"
                   XPULP_ASM_CLIP(0, "%[r]", "%[r]", 8) XPULP_ASM_ST_PI(0, "%[r]", "%[y]", 1) "1:\n" XPULP_LOOP_FINISH
                   : [x] "+r"(x), [y] "+r"(y), [v] "=&r"(v), [r] "=&r"(r)
                   : [n] "r"(n), [mul] "r"(mul), [bias] "r"(bias)
                   : "memory");
}

int main(void) {
  for (int i = 0; i < N; i++) X[i] = (int32_t)(bench_rand() >> 16) - 32768;
  BENCH_BEGIN();
  kernel(X, Y, N, MUL, BIAS);
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) {
    int32_t r = (BIAS + X[i] * MUL) >> SHIFT;
    ok &= Y[i] == (r < -128 ? -128 : r > 127 ? 127 : r);
  }
  return bench_done(ok);
}
