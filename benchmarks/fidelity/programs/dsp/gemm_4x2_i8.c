/* int8 GEMM block of 4 rows x 2 columns (the PULP GEMM's inner loop): per trip 6 cv.lw
 * post-increment (4 words of A, 2 of B, packed per k) feed 8 cv.sdotsp.b; a3's load-use stall. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define K 512 /* bytes per row */

/* A: [K/4][4 rows] words, B: [K/4][2 columns] words */
static int8_t A[4 * K] __attribute__((aligned(4))), B[2 * K] __attribute__((aligned(4)));
static int32_t C[8];

KERNEL static void kernel(const int8_t *a, const int8_t *b, uint32_t n, int32_t *c) {
  int32_t c00 = 0, c01 = 0, c10 = 0, c11 = 0, c20 = 0, c21 = 0, c30 = 0, c31 = 0;
  uint32_t a0, a1, a2, a3, b0, b1;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_PI(2, "%[b0]", "%[b]", 4) XPULP_ASM_LD_PI(2, "%[b1]", "%[b]", 4)
                   XPULP_ASM_LD_PI(2, "%[a0]", "%[a]", 4) XPULP_ASM_LD_PI(2, "%[a1]", "%[a]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c00]", "%[a0]", "%[b0]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c01]", "%[a0]", "%[b1]")
                   XPULP_ASM_LD_PI(2, "%[a2]", "%[a]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c10]", "%[a1]", "%[b0]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c11]", "%[a1]", "%[b1]")
                   XPULP_ASM_LD_PI(2, "%[a3]", "%[a]", 4)
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c30]", "%[a3]", "%[b0]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c31]", "%[a3]", "%[b1]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c20]", "%[a2]", "%[b0]")
                   XPULP_ASM_SIMD(XPULP_SIMD_SDOTSP, 1, "%[c21]", "%[a2]", "%[b1]") "1:\n" XPULP_LOOP_FINISH
                   : [c00] "+r"(c00), [c01] "+r"(c01), [c10] "+r"(c10), [c11] "+r"(c11), [c20] "+r"(c20),
                     [c21] "+r"(c21), [c30] "+r"(c30), [c31] "+r"(c31), [a] "+r"(a), [b] "+r"(b), [a0] "=&r"(a0),
                     [a1] "=&r"(a1), [a2] "=&r"(a2), [a3] "=&r"(a3), [b0] "=&r"(b0), [b1] "=&r"(b1)
                   : [n] "r"(n)
                   : "memory");
  c[0] = c00; c[1] = c01; c[2] = c10; c[3] = c11; c[4] = c20; c[5] = c21; c[6] = c30; c[7] = c31;
}

int main(void) {
  for (int i = 0; i < 4 * K; i++) A[i] = bench_rand_i8();
  for (int i = 0; i < 2 * K; i++) B[i] = bench_rand_i8();
  int ok = 1;
  BENCH_BEGIN();
  kernel(A, B, K / 4, C);
  BENCH_END();
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < 2; j++) {
      int32_t e = 0;
      for (int k = 0; k < K; k++) e += A[(k / 4) * 16 + r * 4 + k % 4] * B[(k / 4) * 8 + j * 4 + k % 4];
      ok &= C[2 * r + j] == e;
    }
  return bench_done(ok);
}
