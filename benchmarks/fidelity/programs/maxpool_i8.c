/* int8 2 x 2 max pooling, stride 2, HWC 16 x 16 x 4 (maxpool.inc). */
#include "bench.h"

#define H 16
#define W 16
#define C 4

static int8_t X[H][W][C], Y[H / 2][W / 2][C];

KERNEL static void kernel(void) {
  for (int h = 0; h < H / 2; h++)
    for (int w = 0; w < W / 2; w++)
      for (int c = 0; c < C; c++) {
        int8_t m = X[2 * h][2 * w][c];
        for (int kh = 0; kh < 2; kh++)
          for (int kw = 0; kw < 2; kw++) {
            int8_t v = X[2 * h + kh][2 * w + kw][c];
            m = v > m ? v : m;
          }
        Y[h][w][c] = m;
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
        int8_t a = X[2 * h][2 * w][c], b = X[2 * h][2 * w + 1][c], d = X[2 * h + 1][2 * w][c], e = X[2 * h + 1][2 * w + 1][c];
        int8_t m = a;
        if (b > m) m = b;
        if (d > m) m = d;
        if (e > m) m = e;
        ok &= Y[h][w][c] == m;
      }
  return bench_done(ok);
}
