/* Integer softmax of int8 logits (isoftmax.inc's structure: max, exp2 by shifts of a fixed-point
 * table, sum, then a division of every element by the sum through its reciprocal, the Generic
 * library's deeploy_divisor), rows of 32, uint8 probabilities. */
#include "bench.h"
#include "integer_math.h"

#define ROWS 8
#define L 32

static int8_t X[ROWS][L];
static uint8_t Y[ROWS][L];
static const uint16_t EXP2_FRAC[8] = {32768, 35734, 38968, 42495, 46341, 50535, 55109, 60097};

static inline uint32_t iexp(int32_t d) {            /* 2^(d / 8) in Q15, d <= 0 */
  int32_t q = -d;
  return (uint32_t)EXP2_FRAC[(8 - (q & 7)) & 7] >> ((q >> 3) + ((q & 7) != 0));
}

KERNEL static void kernel(void) {
  static uint32_t e[L];
  for (int r = 0; r < ROWS; r++) {
    int32_t mx = X[r][0];
    for (int i = 1; i < L; i++) mx = X[r][i] > mx ? X[r][i] : mx;
    uint32_t sum = 0;
    for (int i = 0; i < L; i++) sum += (e[i] = iexp(X[r][i] - mx));
    const deeploy_divisor_t inv = deeploy_divisor(sum);
    for (int i = 0; i < L; i++) Y[r][i] = (uint8_t)deeploy_div_exact(e[i] * 255u + sum / 2, inv);
  }
}

int main(void) {
  for (int r = 0; r < ROWS; r++)
    for (int i = 0; i < L; i++) X[r][i] = (int8_t)(bench_rand_i8() >> 2);
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int r = 0; r < ROWS; r++) {
    int32_t mx = -128;
    uint32_t sum = 0;
    for (int i = 0; i < L; i++) mx = X[r][i] > mx ? X[r][i] : mx;
    for (int i = 0; i < L; i++) sum += iexp(X[r][i] - mx);
    for (int i = 0; i < L; i++) ok &= Y[r][i] == (iexp(X[r][i] - mx) * 255u + sum / 2) / sum;
  }
  return bench_done(ok);
}
