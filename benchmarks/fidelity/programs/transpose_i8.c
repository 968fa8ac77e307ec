/* int8 transpose of a 32 x 32 matrix (transpose.inc). */
#include "bench.h"

#define R 32
#define C 32

static int8_t X[R][C], Y[C][R];

KERNEL static void kernel(void) {
  for (int c = 0; c < C; c++)
    for (int r = 0; r < R; r++) Y[c][r] = X[r][c];
}

int main(void) {
  for (int i = 0; i < R * C; i++) (&X[0][0])[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int r = 0; r < R; r++)
    for (int c = 0; c < C; c++) ok &= Y[c][r] == X[r][c];
  return bench_done(ok);
}
