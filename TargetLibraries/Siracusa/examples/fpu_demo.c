/* Virtual-platform demo of the cluster's shared units: the same fixed work (8 slices of straight-line
 * code) split over the cluster cores, as floating-point multiply-adds (layer 0), integer adds
 * (layer 1) and floating-point divisions (layer 2). Each layer is one fork; core c runs slices
 * c, c + cores, ... Prints
 *   fpu 16384 int 16384 div 512 cores N
 * (the operations done, whatever the core count) and exits 0 if they are complete (1 otherwise).
 * With the cycle model's 4 FPUs shared by 8 cores and one divider for the cluster, 8 cores gain
 * at most 4x over one on layer 0, about 8x on layer 1 and nothing on layer 2.
 * Build and run as the other demos (TargetLibraries/Siracusa/examples/CMakeLists.txt). */
#include <stdint.h>
#include <stdio.h>

#include "deeploy_runtime.h"

#define SLICES 8
#define SLICE_OPS 2048 /* operations per slice: keep in sync with the .rept counts below */
#define SLICE_DIVS 64

static float fsum[SLICES] DEEPLOY_L1;
static uint32_t isum[SLICES] DEEPLOY_L1;
static float dsum[SLICES] DEEPLOY_L1;

static void fpu_task(void *arg) {
  (void)arg;
  for (uint32_t s = deeploy_core_id(); s < SLICES; s += deeploy_num_cores()) {
    float acc = 0.0f, one = 1.0f;
    __asm__ volatile(".rept 2048\n fmadd.s %0, %1, %1, %0\n .endr" : "+f"(acc) : "f"(one));
    fsum[s] = acc;
  }
}

static void int_task(void *arg) {
  (void)arg;
  for (uint32_t s = deeploy_core_id(); s < SLICES; s += deeploy_num_cores()) {
    uint32_t acc = 0, one = 1;
    __asm__ volatile(".rept 2048\n add %0, %0, %1\n .endr" : "+r"(acc) : "r"(one));
    isum[s] = acc;
  }
}

static void div_task(void *arg) {
  (void)arg;
  for (uint32_t s = deeploy_core_id(); s < SLICES; s += deeploy_num_cores()) {
    float x = (float)(1 << 30), two = 2.0f; /* 2^30 / 2^64: exact (a normal float) */
    __asm__ volatile(".rept 64\n fdiv.s %0, %0, %1\n .endr" : "+f"(x) : "f"(two));
    dsum[s] = x * (float)(1 << 30) * (float)(1 << 4) * (float)SLICE_DIVS; /* 2^30 * 2^-64 * 2^34 * 64 */
  }
}

int main(void) {
  DEEPLOY_MARK_LAYER(0);
  deeploy_cluster_fork(fpu_task, 0);
  DEEPLOY_MARK_LAYER(1);
  deeploy_cluster_fork(int_task, 0);
  DEEPLOY_MARK_LAYER(2);
  deeploy_cluster_fork(div_task, 0);
  DEEPLOY_MARK_LAYER_END();
  float f = 0.0f, d = 0.0f;
  uint32_t i = 0;
  for (int s = 0; s < SLICES; s++) {
    f += fsum[s];
    i += isum[s];
    d += dsum[s];
  }
  printf("fpu %lu int %lu div %lu cores %lu\n", (unsigned long)f, (unsigned long)i, (unsigned long)d,
         (unsigned long)deeploy_num_cores());
  return f == SLICES * SLICE_OPS && i == SLICES * SLICE_OPS && d == SLICES * SLICE_DIVS ? 0 : 1;
}
