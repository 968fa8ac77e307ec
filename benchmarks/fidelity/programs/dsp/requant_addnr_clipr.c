/* The int8 GEMM's inline requantisation (gemm.inc) in a hardware loop: per element cv.lw
 * post-increment; mul (x * mul); cv.addNr (+ bias, >> shift in one); cv.clipr to [-128, 127];
 * cv.sb post-increment. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 512
#define MUL 93
#define BIAS 1234
#define SHIFT 9

static int32_t X[N];
static int8_t Y[N];

KERNEL static void kernel(const int32_t *x, int8_t *y, uint32_t n, int32_t mul, int32_t bias, int32_t shift,
                          int32_t hi) {
  uint32_t v;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[v]", "%[x]", 4) "mul %[v], %[v], %[mul]\n"
                   XPULP_ASM_ALU(XPULP_ALU_ADDNR, "%[v]", "%[bias]", "%[shift]")
                   XPULP_ASM_ALU(XPULP_ALU_CLIPR, "%[v]", "%[v]", "%[hi]") XPULP_ASM_ST_PI(0, "%[v]", "%[y]", 1)
                   "1:\n" XPULP_LOOP_FINISH
                   : [x] "+r"(x), [y] "+r"(y), [v] "=&r"(v)
                   : [n] "r"(n), [mul] "r"(mul), [bias] "r"(bias), [shift] "r"(shift), [hi] "r"(hi)
                   : "memory");
}

int main(void) {
  for (int i = 0; i < N; i++) X[i] = (int32_t)(bench_rand() >> 16) - 32768;
  BENCH_BEGIN();
  kernel(X, Y, N, MUL, BIAS, SHIFT, 127);
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) {
    int32_t r = (X[i] * MUL + BIAS) >> SHIFT;
    ok &= Y[i] == (r < -128 ? -128 : r > 127 ? 127 : r);
  }
  return bench_done(ok);
}
