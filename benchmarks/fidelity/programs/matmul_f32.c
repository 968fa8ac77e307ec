/* float32 matrix multiplication (the float GEMM's inner loop): C = A @ B, 8 x 8 x 16. */
#include "bench.h"

#define M 8
#define N 8
#define K 16

static float A[M][K], B[K][N], C[M][N];

KERNEL static void kernel(void) {
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += A[m][k] * B[k][n];
      C[m][n] = acc;
    }
}

int main(void) {
  for (int m = 0; m < M; m++)
    for (int k = 0; k < K; k++) A[m][k] = (float)(bench_rand_i8() >> 3);
  for (int k = 0; k < K; k++)
    for (int n = 0; n < N; n++) B[k][n] = (float)(bench_rand_i8() >> 3);
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;   /* small integers: every float sum is exact */
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      int32_t acc = 0;
      for (int k = 0; k < K; k++) acc += (int32_t)A[m][k] * (int32_t)B[k][n];
      ok &= C[m][n] == (float)acc;
    }
  return bench_done(ok);
}
