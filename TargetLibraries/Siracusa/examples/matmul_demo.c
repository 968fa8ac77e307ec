/* Virtual-platform demo: an int8 64x64x64 matrix product split by rows over the cluster cores
 * with deeploy_cluster_fork, a barrier, then a cross-core checksum. Prints
 *   checksum 0x........ cores N
 * and exits 0 if the parallel checksum matches a serial one (1 otherwise). The checksum does
 * not depend on the number of cores.
 * Layers (markers for the timing model): 0 = input initialisation (serial), 1 = the forked
 * matmul + checksum, 2 = the serial check.
 * Build and run: TargetLibraries/Siracusa/examples/run_demo.py. */
#include <stdint.h>
#include <stdio.h>

#include "deeploy_runtime.h"

#ifndef DEMO_REPEAT
#define DEMO_REPEAT 1 /* > 1: repeat the fork, for measuring the timing plugin's slowdown */
#endif

#define M 64
#define K 64
#define N 64

static int8_t A[M * K] DEEPLOY_L2;
static int8_t B[K * N] DEEPLOY_L2;
static int32_t C[M * N] DEEPLOY_L1;
static uint32_t partial[DEEPLOY_NUM_CORES] DEEPLOY_L1;

static void rows_of(uint32_t core, uint32_t cores, uint32_t *lo, uint32_t *hi) {
  uint32_t chunk = (M + cores - 1) / cores;
  *lo = core * chunk < M ? core * chunk : M;
  *hi = *lo + chunk < M ? *lo + chunk : M;
}

static uint32_t weighted_sum(uint32_t lo, uint32_t hi) {
  uint32_t s = 0;
  for (uint32_t i = lo * N; i < hi * N; i++) s += (uint32_t)C[i] * (2 * i + 1);
  return s;
}

static void matmul_task(void *arg) {
  (void)arg;
  uint32_t id = deeploy_core_id(), cores = deeploy_num_cores(), lo, hi;
  rows_of(id, cores, &lo, &hi);
  for (uint32_t i = lo; i < hi; i++)
    for (uint32_t j = 0; j < N; j++) {
      int32_t acc = 0;
      for (uint32_t k = 0; k < K; k++) acc += (int32_t)A[i * K + k] * (int32_t)B[k * N + j];
      C[i * N + j] = acc;
    }
  deeploy_cluster_barrier();
  /* checksum the rows of the next core: needs the barrier to see them complete */
  uint32_t other = (id + 1) % cores;
  rows_of(other, cores, &lo, &hi);
  partial[other] = weighted_sum(lo, hi);
}

int main(void) {
  DEEPLOY_MARK_LAYER(0);
  uint32_t x = 12345;
  for (uint32_t i = 0; i < M * K; i++) { x = x * 1103515245u + 12345u; A[i] = (int8_t)(x >> 16); }
  for (uint32_t i = 0; i < K * N; i++) { x = x * 1103515245u + 12345u; B[i] = (int8_t)(x >> 16); }
  DEEPLOY_MARK_LAYER(1);
  for (int r = 0; r < DEMO_REPEAT; r++) deeploy_cluster_fork(matmul_task, 0);
  DEEPLOY_MARK_LAYER(2);
  uint32_t parallel = 0;
  for (uint32_t c = 0; c < deeploy_num_cores(); c++) parallel += partial[c];
  uint32_t serial = weighted_sum(0, M);
  DEEPLOY_MARK_LAYER_END();
  printf("checksum 0x%08lx cores %lu\n", (unsigned long)parallel, (unsigned long)deeploy_num_cores());
  if (parallel != serial) {
    printf("MISMATCH: serial checksum 0x%08lx\n", (unsigned long)serial);
    return 1;
  }
  return 0;
}
