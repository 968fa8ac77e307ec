/* int8 table lookup on 4 byte lanes in a hardware loop (the cluster's RequantShift, AddRQ and
 * iSoftmax row walks): per trip cv.lw post-increment (load-use on the first extract), 4 x
 * cv.extract.b, 4 x register-offset cv.lbu from the table based at input 0, 4 x cv.sb
 * post-increment. */
#include "bench.h"
#include "deeploy_xpulp.h"

#define N 256 /* words */
#define EXT(rd, k)                                                                                 \
  ".insn i " XPULP_STR(OPC(XPULP_LANE_OP(0, 1))) ", " XPULP_STR(XPULP_LANE_F3(XPULP_LANE_OP(0, 1))) ", " rd \
  ", %[x], " XPULP_STR(XPULP_LANE_IMM12(0, 1, k)) "\n"
#define OPC_(opc, f3, hi) opc
#define OPC(...) OPC_(__VA_ARGS__)

static int8_t X[4 * N] __attribute__((aligned(4))), Y[4 * N];
static uint8_t T[256];

KERNEL static void kernel(const int8_t *x, int8_t *y, const uint8_t *t0, uint32_t n) {
  uint32_t w;
  __asm__ volatile(XPULP_LOOP_BEGIN XPULP_LP_SETUP(0, "%[n]", "1f") XPULP_ASM_LD_PI(2, "%[x]", "%[p]", 4)
                   EXT("t1", 0) EXT("t2", 1) EXT("t3", 2) EXT("t4", 3)
                   XPULP_ASM_LD_RR(8, 0, "t1", "%[t]", "t1") XPULP_ASM_LD_RR(8, 0, "t2", "%[t]", "t2")
                   XPULP_ASM_LD_RR(8, 0, "t3", "%[t]", "t3") XPULP_ASM_LD_RR(8, 0, "t4", "%[t]", "t4")
                   XPULP_ASM_ST_PI(0, "t1", "%[y]", 1) XPULP_ASM_ST_PI(0, "t2", "%[y]", 1)
                   XPULP_ASM_ST_PI(0, "t3", "%[y]", 1) XPULP_ASM_ST_PI(0, "t4", "%[y]", 1) "1:\n" XPULP_LOOP_FINISH
                   : [p] "+r"(x), [y] "+r"(y), [x] "=&r"(w)
                   : [n] "r"(n), [t] "r"(t0)
                   : "t1", "t2", "t3", "t4", "memory");
}

int main(void) {
  for (int i = 0; i < 4 * N; i++) X[i] = bench_rand_i8();
  for (int v = 0; v < 256; v++) T[v] = (uint8_t)(v * 37 + 11);
  BENCH_BEGIN();
  kernel(X, Y, T + 128, N); /* T[x + 128]: inputs -128..127 */
  BENCH_END();
  int ok = 1;
  for (int i = 0; i < 4 * N; i++) ok &= (uint8_t)Y[i] == T[X[i] + 128];
  return bench_done(ok);
}
