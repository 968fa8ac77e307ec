/* Post-increment loads with their uses right after them, in a hardware loop: per trip
 * cv.lw x, (p), 4; add s, s, x (load-use); cv.lw y, (p), 4; xor s, s, y (load-use); the second load
 * reads the pointer the first one just advanced. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256

static uint32_t W[2 * N];

KERNEL static uint32_t kernel(const uint32_t *p, uint32_t n) {
  uint32_t s = 0, x, y;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x]", "%[p]", 4) "add %[s], %[s], %[x]\n"
                   XPULP_ASM_LD_PI(2, "%[y]", "%[p]", 4) "xor %[s], %[s], %[y]\n" "1:\n" XPULP_LOOP_FINISH
                   : [s] "+r"(s), [p] "+r"(p), [x] "=&r"(x), [y] "=&r"(y)
                   : [n] "r"(n)
                   : "memory");
  return s;
}

int main(void) {
  for (int i = 0; i < 2 * N; i++) W[i] = bench_rand();
  uint32_t e = 0;
  for (int i = 0; i < N; i++) e = (e + W[2 * i]) ^ W[2 * i + 1];
  BENCH_BEGIN();
  uint32_t s = kernel(W, N);
  BENCH_END();
  return bench_done(s == e);
}
