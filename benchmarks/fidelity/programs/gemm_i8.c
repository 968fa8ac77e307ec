/* int8 GEMM with int32 sums (gemm.inc's inner loop, plain RV32): C[M][N] = A[M][K] @ B[K][N]. */
#include "bench.h"

#define M 8
#define N 8
#define K 32

static int8_t A[M][K], B[K][N];
static int32_t C[M][N];

KERNEL static void kernel(void) {
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      int32_t acc = 0;
      for (int k = 0; k < K; k++) acc += (int32_t)A[m][k] * B[k][n];
      C[m][n] = acc;
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
  for (int n = 0; n < N; n++)
    for (int m = 0; m < M; m++) {
      int32_t acc = 0;
      for (int k = K - 1; k >= 0; k--) acc += A[m][k] * B[k][n];
      ok &= C[m][n] == acc;
    }
  return bench_done(ok);
}
