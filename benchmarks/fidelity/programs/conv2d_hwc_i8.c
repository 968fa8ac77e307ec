/* int8 2-D convolution in HWC layout (conv2d_hwc.inc, plain RV32): 6 x 6 x 8 input, 3 x 3 kernel,
 * 8 output channels, stride 1, no padding, int32 outputs. */
#include "bench.h"

#define H 6
#define W 6
#define CI 8
#define CO 8
#define KS 3
#define HO (H - KS + 1)
#define WO (W - KS + 1)

static int8_t X[H][W][CI], Wt[CO][KS][KS][CI];
static int32_t Y[HO][WO][CO];

KERNEL static void kernel(void) {
  for (int h = 0; h < HO; h++)
    for (int w = 0; w < WO; w++)
      for (int co = 0; co < CO; co++) {
        int32_t acc = 0;
        for (int kh = 0; kh < KS; kh++)
          for (int kw = 0; kw < KS; kw++) {
            const int8_t *x = X[h + kh][w + kw], *k = Wt[co][kh][kw];
            for (int ci = 0; ci < CI; ci++) acc += x[ci] * k[ci];
          }
        Y[h][w][co] = acc;
      }
}

int main(void) {
  for (int i = 0; i < H * W * CI; i++) (&X[0][0][0])[i] = bench_rand_i8();
  for (int i = 0; i < CO * KS * KS * CI; i++) (&Wt[0][0][0][0])[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int co = 0; co < CO; co++)
    for (int h = 0; h < HO; h++)
      for (int w = 0; w < WO; w++) {
        int32_t acc = 0;
        for (int ci = 0; ci < CI; ci++)
          for (int kh = 0; kh < KS; kh++)
            for (int kw = 0; kw < KS; kw++) acc += X[h + kh][w + kw][ci] * Wt[co][kh][kw][ci];
        ok &= Y[h][w][co] == acc;
      }
  return bench_done(ok);
}
