/* Divisions as kernels do them (normalisation by a count or a norm): N iterations of div and rem
 * of a 16-bit sum by a 7-bit count (64..95) and divu of a 16-bit value by a 7-bit norm. The core's
 * divider takes 3 + (leading zero bits of the divisor) cycles: 28 for every divisor here. */
#include "bench.h"

#define N 500

static int32_t num[N];
static uint32_t unum[N];

KERNEL static int32_t kernel(const int32_t *x, const uint32_t *u, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; i++) {
    int32_t d = 64 + (i & 31);
    s += x[i] / d + x[i] % d;
    s += (int32_t)(u[i] / (uint32_t)(d + 20));
  }
  return s;
}

int main(void) {
  int32_t e = 0;
  for (int i = 0; i < N; i++) {
    num[i] = (int32_t)(bench_rand() >> 16) - 32768;
    unum[i] = bench_rand() >> 16;
  }
  for (int i = 0; i < N; i++) {
    int64_t d = 64 + (i & 31), x = num[i];   /* 64-bit: libgcc's division, not the div instruction */
    e += (int32_t)(x / d + x % d);
    e += (int32_t)((uint64_t)unum[i] / (uint64_t)(d + 20));
  }
  BENCH_BEGIN();
  int32_t s = kernel(num, unum, N);
  BENCH_END();
  return bench_done(s == e);
}
