/* int8 2 x 2 average pooling with a rounding division (integer_div.inc), HWC 16 x 16 x 4. */
#include "bench.h"

#define H 16
#define W 16
#define C 4

static int8_t X[H][W][C], Y[H / 2][W / 2][C];

KERNEL static void kernel(void) {
  for (int h = 0; h < H / 2; h++)
    for (int w = 0; w < W / 2; w++)
      for (int c = 0; c < C; c++) {
        int32_t s = X[2 * h][2 * w][c] + X[2 * h][2 * w + 1][c] + X[2 * h + 1][2 * w][c] + X[2 * h + 1][2 * w + 1][c];
        Y[h][w][c] = (int8_t)(s >= 0 ? (s + 2) / 4 : -((-s + 2) / 4));
      }
}

int main(void) {
  for (int i = 0; i < H * W * C; i++) (&X[0][0][0])[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int h = 0; h < H / 2; h++)
    for (int w = 0; w < W / 2; w++)
      for (int c = 0; c < C; c++) {
        int32_t s = 0;
        for (int k = 0; k < 4; k++) s += X[2 * h + k / 2][2 * w + k % 2][c];
        int32_t a = s < 0 ? -s : s, q = 0;
        while (4 * (q + 1) <= a + 2) q++;
        ok &= Y[h][w][c] == (s < 0 ? -q : q);
      }
  return bench_done(ok);
}
