/* float32 element-wise addition with broadcast of a per-channel bias (fadd.inc). */
#include "bench.h"

#define N 1024
#define C 16

static float A[N], Bias[C], Y[N];

KERNEL static void kernel(void) {
  for (int i = 0; i < N; i++) Y[i] = A[i] + Bias[i & (C - 1)];
}

int main(void) {
  for (int i = 0; i < N; i++) A[i] = (float)bench_rand_i8();
  for (int c = 0; c < C; c++) Bias[c] = (float)bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= Y[i] == (float)((int)A[i] + (int)Bias[i % C]);
  return bench_done(ok);
}
