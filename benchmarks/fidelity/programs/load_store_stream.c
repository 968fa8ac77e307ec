/* Loads and stores without stalls: copy and scale a word array (lw; lw; addi; slli; sw; sw ...). */
#include "bench.h"

#define N 1024

static int32_t src[N], dst[N];

KERNEL static void kernel(int32_t *restrict d, const int32_t *restrict s, int n) {
  for (int i = 0; i < n; i += 2) {
    int32_t a = s[i], b = s[i + 1];
    d[i] = a << 1;
    d[i + 1] = b << 1;
  }
}

int main(void) {
  for (int i = 0; i < N; i++) src[i] = (int32_t)bench_rand();
  BENCH_BEGIN();
  kernel(dst, src, N);
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= dst[i] == (int32_t)((uint32_t)src[i] << 1);
  return bench_done(ok);
}
