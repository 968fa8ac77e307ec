/* int8 GEMM fused with its requantisation (gemm_rq.inc, plain RV32), 2 x 2 register block:
 * Y = clip((acc * mul + add + 2^(s-1)) >> s, -128, 127). */
#include "bench.h"

#define M 8
#define N 8
#define K 32
#define MUL 37
#define ADD -1200
#define SHIFT 9

static int8_t A[M][K], B[K][N], Y[M][N];

static inline int8_t rq(int32_t acc) {
  int32_t y = (acc * MUL + ADD + (1 << (SHIFT - 1))) >> SHIFT;
  return (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
}

KERNEL static void kernel(void) {
  for (int m = 0; m < M; m += 2)
    for (int n = 0; n < N; n += 2) {
      int32_t a00 = 0, a01 = 0, a10 = 0, a11 = 0;
      for (int k = 0; k < K; k++) {
        int32_t x0 = A[m][k], x1 = A[m + 1][k], w0 = B[k][n], w1 = B[k][n + 1];
        a00 += x0 * w0; a01 += x0 * w1; a10 += x1 * w0; a11 += x1 * w1;
      }
      Y[m][n] = rq(a00); Y[m][n + 1] = rq(a01); Y[m + 1][n] = rq(a10); Y[m + 1][n + 1] = rq(a11);
    }
}

int main(void) {
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) A[m][k] = bench_rand_i8();
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n++) B[k][n] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      int32_t acc = 0;
      for (int k = 0; k < K; k++) acc += A[m][k] * B[k][n];
      ok &= Y[m][n] == rq(acc);
    }
  return bench_done(ok);
}
