/* int8 GEMM summed in the FPU (fcvt.s.w + fmadd.s per product, the FPU-summed path): exact while
 * the sums stay below 2^24. */
#include "bench.h"

#define M 8
#define N 8
#define K 32

static int8_t A[M][K], B[K][N];
static int32_t C[M][N];

KERNEL static void kernel(void) {
  for (int m = 0; m < M; m++)
    for (int n = 0; n < N; n++) {
      float acc = 0.0f;
      for (int k = 0; k < K; k++) acc += (float)A[m][k] * (float)B[k][n];
      C[m][n] = (int32_t)acc;
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
      ok &= C[m][n] == acc;
    }
  return bench_done(ok);
}
