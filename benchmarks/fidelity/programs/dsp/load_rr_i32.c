/* Register-offset and register post-increment loads (a column walk of a matrix), in a hardware
 * loop: per row cv.lw x, (p), stride (p += stride); cv.lw y, off(p) (p + off); 2 x add. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define ROWS 256
#define COLS 8

static int32_t M[ROWS][COLS];

KERNEL static int32_t kernel(const int32_t *p, uint32_t n, uint32_t stride, uint32_t off) {
  int32_t s = 0;
  uint32_t x, y;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f")
                   XPULP_ASM_LD_RR(2, 1, "%[x]", "%[p]", "%[stride]") XPULP_ASM_LD_RR(2, 0, "%[y]", "%[p]", "%[off]")
                   "add %[s], %[s], %[x]\n add %[s], %[s], %[y]\n" "1:\n" XPULP_LOOP_FINISH
                   : [s] "+r"(s), [p] "+r"(p), [x] "=&r"(x), [y] "=&r"(y)
                   : [n] "r"(n), [stride] "r"(stride), [off] "r"(off)
                   : "memory");
  return s;
}

int main(void) {
  for (int r = 0; r < ROWS; r++)
    for (int c = 0; c < COLS; c++) M[r][c] = (int32_t)bench_rand() >> 8;
  int32_t e = 0;
  /* column 1, and column 3 of the next row (p has advanced by a row when off is added) */
  for (int r = 0; r < ROWS; r++) e += M[r][1] + (r + 1 < ROWS ? M[r + 1][3] : 0);
  BENCH_BEGIN();
  int32_t s = kernel(&M[0][1], ROWS - 1, sizeof M[0], 2 * sizeof(int32_t));
  BENCH_END();
  return bench_done(s == e - M[ROWS - 1][1]);
}
