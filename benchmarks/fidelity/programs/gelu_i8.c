/* Integer GELU (igelu.inc's structure, I-BERT polynomial: erf by a clipped second-order
 * polynomial), int8 in, int32 out, 512 elements. */
#include "bench.h"

#define N 512
#define B -22   /* polynomial constants in the input's integer scale */
#define C 64
#define ONE 512

static int8_t X[N];
static int32_t Y[N];

static inline int32_t igelu(int32_t x) {
  int32_t a = x < 0 ? -x : x;
  if (a > -B) a = -B;
  int32_t l = (a + B) * (a + B) + C;          /* erf magnitude, positive */
  int32_t erf = x < 0 ? -l : l;
  return x * (erf + ONE);
}

KERNEL static void kernel(void) {
  for (int i = 0; i < N; i++) Y[i] = igelu(X[i]);
}

int main(void) {
  for (int i = 0; i < N; i++) X[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int i = N - 1; i >= 0; i--) {
    int32_t x = X[i], a = x < 0 ? -x : x;
    a = a < 22 ? a : 22;
    int32_t l = (a - 22) * (a - 22) + 64;
    ok &= Y[i] == x * ((x < 0 ? -l : l) + 512);
  }
  return bench_done(ok);
}
