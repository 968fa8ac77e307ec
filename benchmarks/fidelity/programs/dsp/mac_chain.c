/* A chain of dependent cv.mac in a hardware loop: per trip 2 x cv.lw post-increment; 3 x cv.mac
 * on the same accumulator. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256

static int32_t A[N], B[N];

KERNEL static int32_t kernel(const int32_t *a, const int32_t *b, uint32_t n) {
  int32_t acc = 0;
  uint32_t x, y;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[y]", "%[b]", 4)
                   XPULP_ASM_ALU(XPULP_ALU_MAC, "%[acc]", "%[x]", "%[x]")
                   XPULP_ASM_ALU(XPULP_ALU_MAC, "%[acc]", "%[x]", "%[y]")
                   XPULP_ASM_ALU(XPULP_ALU_MSU, "%[acc]", "%[y]", "%[y]") "1:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc), [a] "+r"(a), [b] "+r"(b), [x] "=&r"(x), [y] "=&r"(y)
                   : [n] "r"(n)
                   : "memory");
  return acc;
}

int main(void) {
  for (int i = 0; i < N; i++) { A[i] = (int32_t)bench_rand() >> 20; B[i] = (int32_t)bench_rand() >> 20; }
  int32_t e = 0;
  for (int i = 0; i < N; i++) e += A[i] * A[i] + A[i] * B[i] - B[i] * B[i];
  BENCH_BEGIN();
  int32_t acc = kernel(A, B, N);
  BENCH_END();
  return bench_done(acc == e);
}
