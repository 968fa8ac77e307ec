/* float32 clip to [0, 6] (fclip.inc / ReLU6), 1024 elements. */
#include "bench.h"

#define N 1024

static float X[N], Y[N];

KERNEL static void kernel(void) {
  for (int i = 0; i < N; i++) {
    float v = X[i];
    Y[i] = v < 0.0f ? 0.0f : v > 6.0f ? 6.0f : v;
  }
}

int main(void) {
  for (int i = 0; i < N; i++) X[i] = 8.0f * bench_rand_f();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= Y[i] == (X[i] <= 0.0f ? 0.0f : X[i] >= 6.0f ? 6.0f : X[i]);
  return bench_done(ok);
}
