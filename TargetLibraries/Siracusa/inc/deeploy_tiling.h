/* Tiled execution of one layer (Siracusa): the tile loop, DMA of every operand's tile
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
 * Engines with a job queue (engine_sync set, e.g. the NPU): the tile kernel is called on core 0
 * (not forked) and, double-buffered, returns with its work in flight: tile i+1's work is
 * programmed while tile i's runs, and the loop waits for tile i's work (engine_sync PREVIOUS)
 * only before writing its outputs back and reusing its input slots for tile i+2's prefetch. So
 * the store phase of tile i+1 writes back tile i; the last tile waits for all (ALL).
 *
 * Profiling: the hart running the loop (core 0, or the data-mover core) marks the phases of every tile (DEEPLOY_MARK_TILE_* and DEEPLOY_MARK_STAGE_*,
 * decoded by the cycle model): L1 tile input / kernel / output / end; L2 tile input / inner loop /
 * output / end.
 *
 * The limits, marker ids and table structs (deeploy_tile_axis_t, deeploy_tile_operand_t,
 * deeploy_tile_t, deeploy_tiled_layer_t) are in deeploy_abi.h, generated from
 * Deeploy/runtime/abi.py, which the generated tables (Deeploy/codegen/tiled.py) follow. */
#ifndef DEEPLOY_TILING_H
#define DEEPLOY_TILING_H

#include <stdint.h>

#include "deeploy_abi.h"
#include "deeploy_dma.h"

/* Runs every tile of the layer (called by core 0, outside forks; with a data-mover core the loop
 * runs there, which then alone programs the DMA, and starts each tile's kernel on the cluster cores
 * before it prefetches the next tile's inputs); returns when all outputs are home. */
void deeploy_run_tiled(const deeploy_tiled_layer_t *layer);

/* The same for a layer the compiler planned (Deeploy/tiling/dma_plan.py): its copies' addresses and
 * shapes, slots, waits and prefetches come from the tables; the loop only issues, waits and forks. */
void deeploy_run_planned(const deeploy_tile_plan_t *plan);

#endif
