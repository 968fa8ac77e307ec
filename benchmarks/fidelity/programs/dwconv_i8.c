/* int8 depthwise 3 x 3 convolution in HWC layout (conv2d_depthwise.inc, plain RV32), 8 x 8 x 8,
 * zero padding 1, requantised to int8 by a shift. */
#include "bench.h"

#define H 8
#define W 8
#define C 8

static int8_t X[H][W][C], Wt[3][3][C], Y[H][W][C];

KERNEL static void kernel(void) {
  for (int h = 0; h < H; h++)
    for (int w = 0; w < W; w++)
      for (int c = 0; c < C; c++) {
        int32_t acc = 0;
        for (int kh = 0; kh < 3; kh++) {
          int y = h + kh - 1;
          if (y < 0 || y >= H) continue;
          for (int kw = 0; kw < 3; kw++) {
            int x = w + kw - 1;
            if (x >= 0 && x < W) acc += X[y][x][c] * Wt[kh][kw][c];
          }
        }
        acc >>= 6;
        Y[h][w][c] = (int8_t)(acc < -128 ? -128 : acc > 127 ? 127 : acc);
      }
}

int main(void) {
  for (int i = 0; i < H * W * C; i++) (&X[0][0][0])[i] = bench_rand_i8();
  for (int i = 0; i < 9 * C; i++) (&Wt[0][0][0])[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int c = 0; c < C; c++)
    for (int h = 0; h < H; h++)
      for (int w = 0; w < W; w++) {
        int32_t acc = 0;
        for (int kh = -1; kh <= 1; kh++)
          for (int kw = -1; kw <= 1; kw++)
            if (h + kh >= 0 && h + kh < H && w + kw >= 0 && w + kw < W) acc += X[h + kh][w + kw][c] * Wt[kh + 1][kw + 1][c];
        acc >>= 6;
        ok &= Y[h][w][c] == (acc < -128 ? -128 : acc > 127 ? 127 : acc);
      }
  return bench_done(ok);
}
