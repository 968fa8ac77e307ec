/* Calibration kernels of the Siracusa cycle model: loops in inline assembly whose cycle counts
 * follow by hand from the CV32E40P manual and the platform description (benchmarks/calibration.py
 * derives each expected count from the loop structure). One layer marker per kernel:
 *   0 taken-branch loop          N iterations of  addi; bnez
 *   1 mulh chain                 N iterations of  4 x mulh; addi; bnez
 *   2 load-use pairs             N iterations of  2 x (lw from L1; add using it); addi; bnez
 *   3 8 cores, same L1 bank      fork; each core N iterations of  lw (word 0); addi; bnez
 *   4 8 cores, different banks   fork; core c: N iterations of  lw (word c); addi; bnez
 *   5 8 cores streaming from L2  fork; each core N iterations of  lw (own L2 array); addi; addi; bnez
 *   6 FPU chain                  N iterations of  fdiv.s; flw; fadd.s using it; addi; bnez
 * Exits 0. */
#include <stdint.h>

#include "deeploy_runtime.h"

#define N 4096

static volatile uint32_t l1_words[64] DEEPLOY_L1;
static uint32_t l2_data[DEEPLOY_NUM_CORES][N] DEEPLOY_L2;

static void taken_loop(void) {
  uint32_t n = N;
  __asm__ volatile("1: addi %0, %0, -1\n bnez %0, 1b" : "+r"(n));
}

static void mulh_chain(void) {
  uint32_t n = N, a = 0x12345678u, b = 0x9abcdef1u;
  __asm__ volatile("1: mulh %1, %1, %2\n mulh %1, %1, %2\n mulh %1, %1, %2\n mulh %1, %1, %2\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(a)
                   : "r"(b));
}

static void load_use(void) {
  uint32_t n = N, acc = 0, t;
  __asm__ volatile("1: lw %2, 0(%3)\n add %1, %1, %2\n lw %2, 4(%3)\n add %1, %1, %2\n"
                   " addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+r"(acc), "=&r"(t)
                   : "r"(l1_words)
                   : "memory");
}

/* arg: word stride between cores (0: all cores read word 0, one bank; 1: core c reads word c) */
static void bank_task(void *arg) {
  uint32_t n = N, t;
  const volatile uint32_t *p = &l1_words[deeploy_core_id() * (uint32_t)(uintptr_t)arg];
  __asm__ volatile("1: lw %1, 0(%2)\n addi %0, %0, -1\n bnez %0, 1b" : "+r"(n), "=&r"(t) : "r"(p) : "memory");
}

static void l2_task(void *arg) {
  (void)arg;
  uint32_t n = N, t;
  const uint32_t *p = l2_data[deeploy_core_id()];
  __asm__ volatile("1: lw %1, 0(%2)\n addi %2, %2, 4\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "=&r"(t), "+r"(p)
                   :
                   : "memory");
}

static void fpu_chain(void) {
  uint32_t n = N;
  float x = 1.5f, y = 1.0001f, t;
  static volatile float one DEEPLOY_L1 = 1.0f;
  __asm__ volatile(".balign 4\n1: fdiv.s %1, %1, %3\n flw %2, 0(%4)\n fadd.s %1, %1, %2\n addi %0, %0, -1\n bnez %0, 1b"
                   : "+r"(n), "+f"(x), "=&f"(t)
                   : "f"(y), "r"(&one)
                   : "memory");
}

int main(void) {
  DEEPLOY_MARK_LAYER(0);
  taken_loop();
  DEEPLOY_MARK_LAYER(1);
  mulh_chain();
  DEEPLOY_MARK_LAYER(2);
  load_use();
  DEEPLOY_MARK_LAYER(3);
  deeploy_cluster_fork(bank_task, (void *)0);
  DEEPLOY_MARK_LAYER(4);
  deeploy_cluster_fork(bank_task, (void *)1);
  DEEPLOY_MARK_LAYER(5);
  deeploy_cluster_fork(l2_task, 0);
  DEEPLOY_MARK_LAYER(6);
  fpu_chain();
  DEEPLOY_MARK_LAYER_END();
  return 0;
}
