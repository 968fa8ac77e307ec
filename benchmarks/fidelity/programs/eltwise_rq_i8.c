/* Element-wise requantisation (requant_shift.inc / eltwise_rq.inc, plain RV32):
 * y = clip((x * mul[c] + add[c] + 2^(s-1)) >> s, -128, 127) over 512 int32 inputs, 8 channels. */
#include "bench.h"

#define N 512
#define C 8
#define SHIFT 12

static int32_t X[N], mul[C], add[C];
static int8_t Y[N];

KERNEL static void kernel(void) {
  for (int i = 0; i < N; i++) {
    int c = i & (C - 1);
    int32_t y = (X[i] * mul[c] + add[c] + (1 << (SHIFT - 1))) >> SHIFT;
    Y[i] = (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
  }
}

int main(void) {
  for (int i = 0; i < N; i++) X[i] = (int32_t)(bench_rand() >> 16) - 32768;
  for (int c = 0; c < C; c++) { mul[c] = 20 + (int32_t)(bench_rand() >> 27); add[c] = (int32_t)(bench_rand() >> 20) - 2048; }
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int i = N - 1; i >= 0; i--) {
    int64_t y = ((int64_t)X[i] * mul[i % C] + add[i % C] + (1 << (SHIFT - 1))) >> SHIFT;
    ok &= Y[i] == (y < -128 ? -128 : y > 127 ? 127 : y);
  }
  return bench_done(ok);
}
