/* Requantised int8 addition (add_rq.inc, plain RV32): y = clip(((a * ma + b * mb) + r) >> s). */
#include "bench.h"

#define N 1024
#define MA 45
#define MB 83
#define SHIFT 7

static int8_t A[N], B[N], Y[N];

KERNEL static void kernel(void) {
  for (int i = 0; i < N; i++) {
    int32_t y = (A[i] * MA + B[i] * MB + (1 << (SHIFT - 1))) >> SHIFT;
    Y[i] = (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
  }
}

int main(void) {
  for (int i = 0; i < N; i++) { A[i] = bench_rand_i8(); B[i] = bench_rand_i8(); }
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) {
    int32_t y = (A[i] * MA + B[i] * MB + 64) / 128 - ((A[i] * MA + B[i] * MB + 64) % 128 < 0);
    ok &= Y[i] == (y < -128 ? -128 : y > 127 ? 127 : y);
  }
  return bench_done(ok);
}
