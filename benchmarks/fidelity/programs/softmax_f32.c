/* float32 softmax over rows of 32 (fsoftmax.inc's structure: max, exp, sum, scale by 1/sum),
 * exp by range reduction and a degree-5 polynomial. Checked: every row sums to 1 within 1e-5 and
 * keeps the order of its inputs. */
#include "bench.h"

#define ROWS 8
#define L 32

static float X[ROWS][L], Y[ROWS][L];

static inline float fexp(float x) {            /* x <= 0 */
  int32_t k = (int32_t)(x * 1.44269504f - 0.5f);
  float r = x - (float)k * 0.69314718f;
  float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.16666667f + r * (0.04166667f + r * 0.00833333f))));
  union { float f; int32_t i; } u = {p};
  u.i += k << 23;
  return u.f;
}

KERNEL static void kernel(void) {
  for (int r = 0; r < ROWS; r++) {
    float mx = X[r][0];
    for (int i = 1; i < L; i++) mx = X[r][i] > mx ? X[r][i] : mx;
    float sum = 0.0f;
    for (int i = 0; i < L; i++) sum += (Y[r][i] = fexp(X[r][i] - mx));
    float inv = 1.0f / sum;
    for (int i = 0; i < L; i++) Y[r][i] *= inv;
  }
}

int main(void) {
  for (int r = 0; r < ROWS; r++)
    for (int i = 0; i < L; i++) X[r][i] = 4.0f * bench_rand_f();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int r = 0; r < ROWS; r++) {
    float s = 0.0f;
    for (int i = 0; i < L; i++) {
      s += Y[r][i];
      for (int j = 0; j < L; j++) ok &= (X[r][i] < X[r][j]) ? Y[r][i] <= Y[r][j] : 1;
    }
    ok &= s > 0.99999f && s < 1.00001f;
  }
  return bench_done(ok);
}
