/* Tiled execution of one layer (PULPOpen/Siracusa): the tile loop, DMA of every operand's tile
 * between its home (L2 or L3) and L1, single or double buffering, and the fork of the layer's
 * kernel on every tile. Generated code describes each tiled layer with the tables below
 * (Deeploy/codegen/tiled.py); the loop itself lives here, once.
 *
 * The iteration space: `ndims` dims of `size[d]` elements. A tile is a box [lo, hi) per dim. Each
 * operand is a C-contiguous logical view of a tensor (rank axes); axis k of an operand follows
 * dim axes[k].dim through the map of Deeploy/tiling/spec.py (AxisMap.range):
 *   identity/window  [lo*stride + offset, (hi-1)*stride + offset + span)
 *   reverse          [offset - stride*(hi-1), offset - stride*lo + span)
 *   group (q, r)     [(lo/q)*r, ((hi-1)/q + 1)*r)
 *   dim -1           the whole axis
 * clipped to [0, size). An operand's tile is copied densely (box extents, axis order kept).
 *
 * Two levels. Operands living in L3 are staged through an L2 buffer: the tiles of the L2 level
 * (l2_tile per dim) are moved L3 <-> L2 by the L3 DMA, single-buffered; inside each L2 tile the L1
 * tiles (l1_tile per dim) are moved L2 <-> L1 by the cluster DMA. Operands in L2 are read and
 * written in place by the cluster DMA. Without L3 operands the L2 level is one tile.
 *
 * Buffering of the L1 tiles (double_buffer): the inputs of tile i+1 are prefetched while tile i
 * computes (operands with two L1 slots), tile i's outputs are written back while tile i+1
 * computes; single buffering loads, computes and writes back one tile after the other. An input
 * whose box does not change from one tile to the next is not moved again.
 *
 * Profiling: hart 0 marks the phases of every tile (markers 0x50-0x57, decoded by the cycle
 * model): L1 tile input / kernel / output / end; L2 tile input / inner loop / output / end. */
#ifndef DEEPLOY_TILING_H
#define DEEPLOY_TILING_H

#include <stdint.h>

#include "deeploy_dma.h"

#define DEEPLOY_TILE_MAX_DIMS 8
#define DEEPLOY_TILE_MAX_OPERANDS 12
#define DEEPLOY_TILE_MAX_RANK 8

#define DEEPLOY_MARK_TILE_INPUT 0x50
#define DEEPLOY_MARK_TILE_KERNEL 0x51
#define DEEPLOY_MARK_TILE_OUTPUT 0x52
#define DEEPLOY_MARK_TILE_END 0x53
#define DEEPLOY_MARK_STAGE_INPUT 0x54
#define DEEPLOY_MARK_STAGE_INNER 0x55
#define DEEPLOY_MARK_STAGE_OUTPUT 0x56
#define DEEPLOY_MARK_STAGE_END 0x57

typedef struct {
  int32_t size, stride, offset, span;
  int16_t dim;             /* iteration dim, -1: the whole axis */
  uint8_t reverse;
  uint16_t group_q, group_r; /* 0: no channel groups */
} deeploy_tile_axis_t;

typedef struct {
  uint8_t *home;           /* the tensor (first element) in L2 or L3 */
  const deeploy_tile_axis_t *axes;
  uint8_t rank;
  uint8_t elem;            /* bytes per element */
  uint8_t output;          /* 1: written by the kernel, 0: read */
  uint8_t in_l3;           /* 1: staged through `staging` in L2 */
  uint8_t copies;          /* L1 slots: 2 when double-buffered */
  uint8_t *l1[2];          /* the L1 slots */
  uint8_t *staging;        /* L2 buffer of an L3 operand's L2 tile */
} deeploy_tile_operand_t;

/* What the kernel of one tile sees (its fork argument). */
typedef struct {
  uint32_t cls;                           /* which call of the layer's kernel (tile class) */
  void *buf[DEEPLOY_TILE_MAX_OPERANDS];   /* each operand's L1 tile */
} deeploy_tile_t;

typedef struct {
  uint8_t ndims, noperands, double_buffer;
  const uint8_t *order;                   /* loop order, outermost first */
  const int32_t *size, *l2_tile, *l1_tile;
  const uint16_t *const *dim_class;        /* per dim: class of each L1 tile along it, in order */
  const uint32_t *class_radix;            /* tile class = sum over d of dim_class[d][i] * radix[d] */
  const deeploy_tile_operand_t *operands;
  void (*kernel)(void *);                 /* forked on every tile with a deeploy_tile_t * */
} deeploy_tiled_layer_t;

/* Runs every tile of the layer (core 0, outside forks); returns when all outputs are home. */
void deeploy_run_tiled(const deeploy_tiled_layer_t *layer);

#endif
