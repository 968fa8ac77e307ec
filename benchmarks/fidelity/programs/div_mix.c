/* Divisions as kernels do them (average pooling, requantisation by a count): N iterations of
 * div and rem of a 16-bit sum by a small window count (4..19), divu and remu of a 24-bit value. */
#include "bench.h"

#define N 500

static int32_t num[N];
static uint32_t unum[N];

KERNEL static int32_t kernel(const int32_t *x, const uint32_t *u, int n) {
  int32_t s = 0;
  for (int i = 0; i < n; i++) {
    int32_t d = 4 + (i & 15);
    s += x[i] / d + x[i] % d;
    s += (int32_t)(u[i] / (uint32_t)(d + 3) + u[i] % 1000u);
  }
  return s;
}

int main(void) {
  int32_t e = 0;
  for (int i = 0; i < N; i++) {
    num[i] = (int32_t)(bench_rand() >> 16) - 32768;
    unum[i] = bench_rand() >> 8;
  }
  for (int i = 0; i < N; i++) {
    int32_t d = 4 + (i & 15), q = 0, r = num[i] < 0 ? -num[i] : num[i];
    while (r >= d) { r -= d; q++; }
    e += num[i] < 0 ? -q - r : q + r;
    e += (int32_t)(unum[i] / (uint32_t)(d + 3) + unum[i] % 1000u);
  }
  BENCH_BEGIN();
  int32_t s = kernel(num, unum, N);
  BENCH_END();
  return bench_done(s == e);
}
