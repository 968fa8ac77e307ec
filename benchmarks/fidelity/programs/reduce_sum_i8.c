/* int8 reduction: sum and maximum over the rows of 16 x 64 (reduce.inc, maxreduce.inc). */
#include "bench.h"

#define R 16
#define L 64

static int8_t X[R][L];
static int32_t S[R];
static int8_t Mx[R];

KERNEL static void kernel(void) {
  for (int r = 0; r < R; r++) {
    int32_t s = 0;
    int8_t m = -128;
    for (int i = 0; i < L; i++) {
      s += X[r][i];
      m = X[r][i] > m ? X[r][i] : m;
    }
    S[r] = s;
    Mx[r] = m;
  }
}

int main(void) {
  for (int i = 0; i < R * L; i++) (&X[0][0])[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int r = 0; r < R; r++) {
    int32_t s = 0, m = -128;
    for (int i = L - 1; i >= 0; i--) { s += X[r][i]; if (X[r][i] > m) m = X[r][i]; }
    ok &= S[r] == s && Mx[r] == m;
  }
  return bench_done(ok);
}
