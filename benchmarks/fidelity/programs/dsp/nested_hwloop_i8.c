/* Nested hardware loops (a matrix-vector product): loop 1 over M rows, loop 0 over the row's words
 * (cv.lw; cv.lw; cv.sdotsp.b); after it cv.sw post-increment of the row's sum, its reset and the
 * vector pointer's rewind. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define M 16
#define K 128 /* bytes per row */

static int8_t A[M * K] __attribute__((aligned(4))), V[K] __attribute__((aligned(4)));
static int32_t Y[M];

KERNEL static void kernel(const int8_t *a, const int8_t *v, int32_t *y, uint32_t m, uint32_t k) {
  int32_t acc = 0;
  uint32_t x, w, kb = 4 * k;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(1, "%[m]", "2f") XPULP_LP_SETUP(0, "%[k]", "1f")
                   XPULP_ASM_LD_PI(2, "%[x]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[w]", "%[v]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[acc]", "%[x]", "%[w]") "1:\n"
                   XPULP_ASM_ST_PI(2, "%[acc]", "%[y]", 4) "li %[acc], 0\n sub %[v], %[v], %[kb]\n"
                   "2:\n" XPULP_LOOP_FINISH
                   : [acc] "+r"(acc), [a] "+r"(a), [v] "+r"(v), [y] "+r"(y), [x] "=&r"(x), [w] "=&r"(w)
                   : [m] "r"(m), [k] "r"(k), [kb] "r"(kb)
                   : "memory");
}

int main(void) {
  for (int i = 0; i < M * K; i++) A[i] = bench_rand_i8();
  for (int i = 0; i < K; i++) V[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel(A, V, Y, M, K / 4);
  BENCH_END();
  int ok = 1;
  for (int r = 0; r < M; r++) {
    int32_t e = 0;
    for (int i = 0; i < K; i++) e += A[r * K + i] * V[i];
    ok &= Y[r] == e;
  }
  return bench_done(ok);
}
