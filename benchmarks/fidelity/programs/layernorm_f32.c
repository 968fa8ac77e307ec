/* float32 layer normalisation over rows of 64 (fnorm.inc: mean, variance, 1/sqrt, scale, shift). */
#include "bench.h"

#define ROWS 8
#define L 64

static float X[ROWS][L], G[L], Bt[L], Y[ROWS][L];

static inline float fsqrt(float x) {
  float r;
  __asm__("fsqrt.s %0, %1" : "=f"(r) : "f"(x));
  return r;
}

KERNEL static void kernel(void) {
  for (int r = 0; r < ROWS; r++) {
    float mean = 0.0f, var = 0.0f;
    for (int i = 0; i < L; i++) mean += X[r][i];
    mean *= 1.0f / L;
    for (int i = 0; i < L; i++) { float d = X[r][i] - mean; var += d * d; }
    float inv = 1.0f / fsqrt(var * (1.0f / L) + 1e-5f);
    for (int i = 0; i < L; i++) Y[r][i] = (X[r][i] - mean) * inv * G[i] + Bt[i];
  }
}

int main(void) {
  for (int r = 0; r < ROWS; r++)
    for (int i = 0; i < L; i++) X[r][i] = 3.0f * bench_rand_f();
  for (int i = 0; i < L; i++) { G[i] = 1.0f; Bt[i] = 0.0f; }
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;   /* normalised rows: mean 0, variance 1 */
  for (int r = 0; r < ROWS; r++) {
    float m = 0.0f, v = 0.0f;
    for (int i = 0; i < L; i++) m += Y[r][i];
    for (int i = 0; i < L; i++) v += Y[r][i] * Y[r][i];
    ok &= m > -1e-3f && m < 1e-3f && v > L * 0.999f && v < L * 1.001f;
  }
  return bench_done(ok);
}
