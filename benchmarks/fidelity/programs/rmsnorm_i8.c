/* Integer RMS normalisation (irmsnorm.inc's structure): sum of squares, integer square root by
 * bisection, division of every element, int8 output. */
#include "bench.h"

#define ROWS 8
#define L 64

static int8_t X[ROWS][L], Y[ROWS][L];

static inline uint32_t isqrt(uint32_t v) {
  uint32_t r = 0;
  for (uint32_t b = 1u << 15; b; b >>= 1)
    if ((r + b) * (r + b) <= v) r += b;
  return r;
}

KERNEL static void kernel(void) {
  for (int r = 0; r < ROWS; r++) {
    uint32_t ss = 0;
    for (int i = 0; i < L; i++) ss += (uint32_t)(X[r][i] * X[r][i]);
    int32_t rms = (int32_t)isqrt(ss / L) + 1;
    for (int i = 0; i < L; i++) Y[r][i] = (int8_t)((X[r][i] * 64) / rms);
  }
}

int main(void) {
  for (int r = 0; r < ROWS; r++)
    for (int i = 0; i < L; i++) X[r][i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int r = 0; r < ROWS; r++) {
    uint32_t ss = 0, s = 0;
    for (int i = 0; i < L; i++) ss += (uint32_t)(X[r][i] * X[r][i]);
    ss /= L;
    while ((s + 1) * (s + 1) <= ss) s++;
    for (int i = 0; i < L; i++) ok &= Y[r][i] == (X[r][i] * 64) / ((int32_t)s + 1);
  }
  return bench_done(ok);
}
