/* Virtual-platform demo of the DMA engines (deeploy_dma.h): an int8 image of 64 x 512 is
 * streamed through L1 in 16 column tiles of 64 x 32 (2-D transfers: 64 rows of 32 bytes), each
 * tile transformed elementwise by all cluster cores, in two variants:
 *   single-buffered: core 0 loads tile t and waits, all compute, core 0 stores it and waits;
 *   double-buffered: two input and two output buffers; while the cores compute tile t the
 *                    cluster DMA stores tile t-1 and loads tile t+1 (one barrier per tile).
 * Before that the input makes a round trip through L3 with the L3 DMA (3-D transfers between the
 * row-major image in L2 and a tile-major copy in L3). Prints
 *   checksum 0x........ cores N
 * and exits 0 if both variants match a plain serial loop and the round trip is exact (1
 * otherwise). The checksum does not depend on the number of cores.
 * Layers (markers for the timing model): 0 = input generation, 1 = L3 round trip, 2 = single-
 * buffered pipeline (one fork), 3 = double-buffered pipeline (one fork), 4 = serial check.
 * Build and run: TargetLibraries/Siracusa/examples/run_demo.py. */
#include <stdint.h>
#include <stdio.h>

#include "deeploy_dma.h"
#include "deeploy_runtime.h"

#define ROWS 64
#define COLS 512
#define TILE_COLS 32
#define TILES (COLS / TILE_COLS)
#define TILE_BYTES (ROWS * TILE_COLS)

static int8_t gen[ROWS * COLS] DEEPLOY_L2;    /* generated input (reference for the check) */
static int8_t image[ROWS * COLS] DEEPLOY_L2;  /* input after the L3 round trip */
static int8_t out_sb[ROWS * COLS] DEEPLOY_L2; /* single-buffered result */
static int8_t out_db[ROWS * COLS] DEEPLOY_L2; /* double-buffered result */
static int8_t tiled_l3[TILES * TILE_BYTES] DEEPLOY_L3; /* tile-major copy in L3 */
static int8_t buf_in[2][TILE_BYTES] DEEPLOY_L1;
static int8_t buf_out[2][TILE_BYTES] DEEPLOY_L1;

static inline int8_t transform(int8_t x) {
  int32_t v = 3 * (int32_t)x + (((int32_t)x * x) >> 5) - 7;
  return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
}

/* this core's share of a tile */
static void compute_share(int8_t *dst, const int8_t *src) {
  uint32_t cores = deeploy_num_cores(), chunk = (TILE_BYTES + cores - 1) / cores;
  uint32_t lo = deeploy_core_id() * chunk, hi = lo + chunk < TILE_BYTES ? lo + chunk : TILE_BYTES;
  for (uint32_t i = lo; i < hi; i++) dst[i] = transform(src[i]);
}

/* column tile t of a 64 x 512 image <-> a 64 x 32 L1 buffer: 64 rows of 32 bytes */
static deeploy_dma_t load_tile(uint32_t t, int8_t *buf) {
  return deeploy_dma_copy_2d(DEEPLOY_DMA_CLUSTER, buf, image + t * TILE_COLS, TILE_COLS, ROWS, TILE_COLS, COLS);
}
static deeploy_dma_t store_tile(int8_t *out, uint32_t t, const int8_t *buf) {
  return deeploy_dma_copy_2d(DEEPLOY_DMA_CLUSTER, out + t * TILE_COLS, buf, TILE_COLS, ROWS, COLS, TILE_COLS);
}

static void single_buffered(void *arg) {
  (void)arg;
  uint32_t id = deeploy_core_id();
  for (uint32_t t = 0; t < TILES; t++) {
    if (id == 0) deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, load_tile(t, buf_in[0]));
    deeploy_cluster_barrier(); /* input in L1 */
    compute_share(buf_out[0], buf_in[0]);
    deeploy_cluster_barrier(); /* tile computed */
    if (id == 0) deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, store_tile(out_sb, t, buf_out[0]));
  }
}

static void double_buffered(void *arg) {
  (void)arg;
  uint32_t id = deeploy_core_id();
  deeploy_dma_t in[2] = {DEEPLOY_DMA_NONE, DEEPLOY_DMA_NONE}, out = DEEPLOY_DMA_NONE;
  if (id == 0) {
    in[0] = load_tile(0, buf_in[0]);
    in[1] = load_tile(1, buf_in[1]);
    deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, in[0]);
  }
  deeploy_cluster_barrier();
  for (uint32_t t = 0; t < TILES; t++) {
    uint32_t cur = t & 1;
    compute_share(buf_out[cur], buf_in[cur]);
    if (id == 0) {
      if (t + 1 < TILES) deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, in[cur ^ 1]); /* next input in L1 */
      deeploy_dma_wait(DEEPLOY_DMA_CLUSTER, out); /* store of tile t-1 done: its buffer is free */
    }
    deeploy_cluster_barrier(); /* tile t computed everywhere */
    if (id == 0) {
      out = store_tile(out_db, t, buf_out[cur]);
      if (t + 2 < TILES) in[cur] = load_tile(t + 2, buf_in[cur]);
    }
  }
  if (id == 0) deeploy_dma_wait_all(DEEPLOY_DMA_CLUSTER);
}

int main(void) {
  DEEPLOY_MARK_LAYER(0);
  uint32_t x = 2024;
  for (uint32_t i = 0; i < ROWS * COLS; i++) { x = x * 1103515245u + 12345u; gen[i] = (int8_t)(x >> 16); }

  /* L2 (row-major) -> L3 (tile-major) -> L2 (row-major): 3-D transfers, tiles x rows x 32 bytes */
  DEEPLOY_MARK_LAYER(1);
  deeploy_dma_wait(DEEPLOY_DMA_L3, deeploy_dma_copy_3d(DEEPLOY_DMA_L3, tiled_l3, gen, TILE_COLS, ROWS, TILE_COLS,
                                                       COLS, TILES, TILE_BYTES, TILE_COLS));
  deeploy_dma_wait(DEEPLOY_DMA_L3, deeploy_dma_copy_3d(DEEPLOY_DMA_L3, image, tiled_l3, TILE_COLS, ROWS, COLS,
                                                       TILE_COLS, TILES, TILE_COLS, TILE_BYTES));

  DEEPLOY_MARK_LAYER(2);
  deeploy_cluster_fork(single_buffered, 0);
  DEEPLOY_MARK_LAYER(3);
  deeploy_cluster_fork(double_buffered, 0);

  DEEPLOY_MARK_LAYER(4);
  uint32_t sum_ref = 0, sum_sb = 0, sum_db = 0, bad = 0;
  for (uint32_t i = 0; i < ROWS * COLS; i++) {
    int8_t ref = transform(gen[i]); /* the plain loop */
    bad += (image[i] != gen[i]) + (out_sb[i] != ref) + (out_db[i] != ref);
    sum_ref += (uint32_t)(uint8_t)ref * (2 * i + 1);
    sum_sb += (uint32_t)(uint8_t)out_sb[i] * (2 * i + 1);
    sum_db += (uint32_t)(uint8_t)out_db[i] * (2 * i + 1);
  }
  DEEPLOY_MARK_LAYER_END();
  printf("checksum 0x%08lx cores %lu\n", (unsigned long)sum_db, (unsigned long)deeploy_num_cores());
  printf("single-buffered 0x%08lx double-buffered 0x%08lx plain loop 0x%08lx\n", (unsigned long)sum_sb,
         (unsigned long)sum_db, (unsigned long)sum_ref);
  if (bad) {
    printf("MISMATCH: %lu elements differ from the serial loop\n", (unsigned long)bad);
    return 1;
  }
  return 0;
}
