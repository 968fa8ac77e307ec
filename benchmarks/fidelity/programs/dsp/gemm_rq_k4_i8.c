/* The requantised int8 GEMM kernel itself (gemm.inc with GEMM_REQUANT, as Siracusa's gemm_rq.inc)
 * on attention's Q K^T of one head of d = 4: [1, 64, 4] x [1, 4, 64], B an input, one core, one
 * tile: the K = 4 rows path (each column block's words gathered from B's rows, then two rows of
 * requantised outputs per hardware-loop trip: cv.lw post-increment, cv.dotsp.b, mul, cv.addNr,
 * cv.clipr, cv.sb with a register post-increment). Checked against the C requantisation of the
 * plain sums. */
#include "bench.h"
#include "common.h"

#define HEADS 1
#define S 64
#define D 4
#define MUL 37
#define ADD -1200
#define SHIFT 9

#undef KERNEL /* bench.h's attributes, below; the kernel's name here (common.h's KFN) */
#define KERNEL gemm_rq_k4
#define TA int8_t
#define TB int8_t
#define TC int8_t
#define TM int32_t
#define TAD int32_t
#define TY int8_t
#define TSUM int32_t
#define TACC int32_t
#define GEMM_REQUANT 1
#include "gemm.inc"

static int8_t A[HEADS][S][D] __attribute__((aligned(4))), B[HEADS][D][S] __attribute__((aligned(4)));
static int8_t Y[HEADS][S][S];
static const int32_t mul = MUL, add = ADD;

__attribute__((noinline, aligned(16))) static void kernel(void) {
  gemm_rq_k4(&A[0][0][0], &B[0][0][0], NULL, &mul, &add, &Y[0][0][0], HEADS, S, S, D, S * D, D * S, 0, 0, 0, 1, 1,
             0, 0, 0, 0, 0, 0, 0, 0, SHIFT, -128, 127);
}

int main(void) {
  for (int i = 0; i < HEADS * S * D; i++) (&A[0][0][0])[i] = bench_rand_i8();
  for (int i = 0; i < HEADS * D * S; i++) (&B[0][0][0])[i] = bench_rand_i8();
  BENCH_BEGIN();
  kernel();
  BENCH_END();
  int ok = 1;
  for (int h = 0; h < HEADS; h++)
    for (int m = 0; m < S; m++)
      for (int n = 0; n < S; n++) {
        int32_t acc = 0;
        for (int k = 0; k < D; k++) acc += A[h][m][k] * B[h][k][n];
        int32_t y = (acc * MUL + ADD + (1 << (SHIFT - 1))) >> SHIFT;
        ok &= Y[h][m][n] == (int8_t)(y < -128 ? -128 : y > 127 ? 127 : y);
      }
  return bench_done(ok);
}
