/* float32 3 x 3 average pooling, stride 1, no padding, CHW 4 x 10 x 10 (favgpool.inc). */
#include "bench.h"

#define C 4
#define H 10
#define W 10

static float X[C][H][W], Y[C][H - 2][W - 2];

KERNEL static void kernel(void) {
  for (int c = 0; c < C; c++)
    for (int h = 0; h < H - 2; h++)
      for (int w = 0; w < W - 2; w++) {
        float s = 0.0f;
        for (int kh = 0; kh < 3; kh++)
          for (int kw = 0; kw < 3; kw++) s += X[c][h + kh][w + kw];
        Y[c][h][w] = s * (1.0f / 9.0f);
      }
}

int main(void) {
  for (int i = 0; i < C * H * W; i++) (&X[0][0][0])[i] = (float)bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int c = 0; c < C; c++)
    for (int h = 0; h < H - 2; h++)
      for (int w = 0; w < W - 2; w++) {
        int32_t s = 0;
        for (int kh = 0; kh < 3; kh++)
          for (int kw = 0; kw < 3; kw++) s += (int32_t)X[c][h + kh][w + kw];
        ok &= Y[c][h][w] == (float)s * (1.0f / 9.0f);
      }
  return bench_done(ok);
}
