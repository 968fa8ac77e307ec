/* Byte copy loop (copy.inc / the tile loop's short copies): 2048 bytes. */
#include "bench.h"

#define N 2048

static uint8_t S[N], D[N];

KERNEL static void kernel(uint8_t *restrict d, const uint8_t *restrict s, int n) {
  for (int i = 0; i < n; i++) d[i] = s[i];
}

int main(void) {
  for (int i = 0; i < N; i++) S[i] = (uint8_t)bench_rand();
  BENCH_BEGIN();
  kernel(D, S, N);
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= D[i] == S[i];
  return bench_done(ok);
}
