/* Generated from Deeploy/runtime/abi.py by `python -m Deeploy.runtime.abi_headers`: do not edit.
 * Marker ids (`slti x0, x0, ID`) and the tables of tiled layers shared by the generated code,
 * the runtime (deeploy_runtime.h, deeploy_dma.h, deeploy_tiling.h), the QEMU timing plugin and
 * the cycle model. In the wait-region range an even id stops counting a hart, an odd one
 * resumes it; all other ids leave counting as it is. */
#ifndef DEEPLOY_ABI_H
#define DEEPLOY_ABI_H

#include <stdint.h>

/* ---- marker ids ---- */
#define DEEPLOY_RT_WAIT_FIRST 0x010 /* first id of the wait-region range */
#define DEEPLOY_RT_WAIT_LAST 0x03f /* last id of the wait-region range */
#define DEEPLOY_RT_FORK_ENTER 0x010 /* hart 0 (or the data mover) enters a fork (stop) */
#define DEEPLOY_RT_TASK_BEGIN 0x011 /* a core starts fn(arg) (resume) */
#define DEEPLOY_RT_TASK_END 0x012 /* a core has returned from fn(arg) (stop) */
#define DEEPLOY_RT_FORK_LEAVE 0x013 /* the forker: all cores have finished; fork returns (resume) */
#define DEEPLOY_RT_BARRIER_ENTER 0x014 /* a core enters deeploy_cluster_barrier (stop) */
#define DEEPLOY_RT_BARRIER_LEAVE 0x015 /* all cores have arrived (resume) */
#define DEEPLOY_RT_BOOT 0x016 /* a worker hart (id >= 1) right after reset (stop) */
#define DEEPLOY_RT_PARK 0x018 /* an unused hart, sleeping forever (stop) */
#define DEEPLOY_RT_INIT_ENTER 0x01a /* hart 0: runtime start-up before main (stop) */
#define DEEPLOY_RT_INIT_LEAVE 0x01b /* hart 0: workers released, main follows (resume) */
#define DEEPLOY_RT_DM_CALL_ENTER 0x01c /* hart 0 hands a call to the data-mover core (stop) */
#define DEEPLOY_RT_DM_CALL_LEAVE 0x01d /* hart 0: the data mover's call has returned (resume) */
#define DEEPLOY_RT_FORK_RUN 0x01f /* the data mover has started a fork and works on (resume) */
#define DEEPLOY_RT_FORK_JOIN 0x01e /* the data mover waits for the fork's cores (stop; FORK_LEAVE follows) */
#define DEEPLOY_RT_DM_RUN_BEGIN 0x027 /* the data mover starts hart 0's call (resume) */
#define DEEPLOY_RT_DM_RUN_END 0x028 /* the data mover has returned from the call (stop) */
#define DEEPLOY_RT_DMA_ISSUE_BEGIN 0x020 /* a DMA issue window opens (stop) */
#define DEEPLOY_RT_DMA_ISSUE_END 0x021 /* the DMA issue window closes (resume) */
#define DEEPLOY_RT_DMA_WAIT_BEGIN 0x022 /* a DMA wait window opens (stop) */
#define DEEPLOY_RT_DMA_WAIT_END 0x023 /* the DMA wait window closes (resume) */
#define DEEPLOY_RT_NPU_JOB_BEGIN 0x024 /* an NPU job's functional model starts (stop) */
#define DEEPLOY_RT_NPU_JOB_END 0x025 /* the NPU job's functional model is done (resume) */
#define DEEPLOY_RT_NPU_WAIT 0x058 /* a core waits for the oldest NPU job it triggered */
#define DEEPLOY_RT_NPU_DIGIT_BASE 0x060 /* DIGIT(d) = base + d: a hex digit of the job's modelled cycles */
#define DEEPLOY_RT_NPU_DIGITS 6 /* digits of a job's cycles, most significant first */
#define DEEPLOY_RT_NPU_MAC_DIGITS 8 /* then digits of the job's multiply-accumulates */
#define DEEPLOY_RT_DMA_INNER_FIRST 0x040 /* first id of the in-window DMA markers */
#define DEEPLOY_RT_DMA_INNER_LAST 0x04f /* last id of the in-window DMA markers */
#define DEEPLOY_RT_DMA_ENGINE_BASE 0x040 /* ENGINE(e) = base + e names the window's engine */
#define DEEPLOY_RT_DMA_MAX_ENGINES 8 /* engines the ENGINE markers can name */
#define DEEPLOY_RT_DMA_CMD 0x048 /* a hardware command (1-D or 2-D) of the transfer begins */
#define DEEPLOY_RT_DMA_ROW_BEGIN 0x049 /* a contiguous row of the transfer follows */
#define DEEPLOY_RT_DMA_ROW_END 0x04a /* the row ends */
#define DEEPLOY_RT_DMA_RETIRE 0x04b /* the oldest unretired transfer of this core and engine is done */
#define DEEPLOY_MARK_TILE_INPUT 0x050 /* L1 tile: its inputs are moved */
#define DEEPLOY_MARK_TILE_KERNEL 0x051 /* L1 tile: its kernel is forked */
#define DEEPLOY_MARK_TILE_OUTPUT 0x052 /* L1 tile: its outputs are written back */
#define DEEPLOY_MARK_TILE_END 0x053 /* L1 tile: done */
#define DEEPLOY_MARK_STAGE_INPUT 0x054 /* L2 tile: its L3 inputs are staged */
#define DEEPLOY_MARK_STAGE_INNER 0x055 /* L2 tile: its L1 tile loop runs */
#define DEEPLOY_MARK_STAGE_OUTPUT 0x056 /* L2 tile: its L3 outputs are written back */
#define DEEPLOY_MARK_STAGE_END 0x057 /* L2 tile: done */
#define DEEPLOY_MARKER_LAYER_END 0x0ff /* closes the last layer */
#define DEEPLOY_MARKER_LAYER_BASE 0x100 /* layer k starts at base + k */
#define DEEPLOY_MARKER_LAYER_COUNT 1792 /* layers that have a marker id */
#define DEEPLOY_RT_DMA_ENGINE(e) (DEEPLOY_RT_DMA_ENGINE_BASE + (e)) /* e = 0..MAX_ENGINES-1 */

/* ---- tables of tiled layers (read by deeploy_run_tiled) ---- */
#define DEEPLOY_TILE_MAX_DIMS 8 /* iteration dims of a tiled layer */
#define DEEPLOY_TILE_MAX_OPERANDS 12 /* operands of a tiled layer */
#define DEEPLOY_TILE_MAX_RANK 8 /* axes of one operand */
#define DEEPLOY_TILE_MAX_GEOMETRIES 16 /* copy shapes of a planned tile loop */
#define DEEPLOY_TILE_PLAN_L1_BYTES 4096 /* a planned loop's steps and copies up to this size are read from an L1 copy */
#define DEEPLOY_TILE_SYNC_ALL 0 /* wait for every tile's work; stop deferring */
#define DEEPLOY_TILE_SYNC_PREVIOUS 1 /* wait for the work of every tile but the latest */
#define DEEPLOY_TILE_SYNC_DEFER 2 /* the following tile kernels may return with work in flight */

/* one axis of an operand, following one iteration dim */
typedef struct {
  int32_t size; /* elements along the axis (the tensor's view shape) */
  int32_t stride; /* index of the axis = dim index * stride + offset */
  int32_t offset;
  int32_t span; /* extent of one dim step along the axis (windows) */
  int16_t dim; /* iteration dim, -1: the whole axis */
  uint8_t reverse; /* 1: the axis runs against the dim */
  uint16_t group_q; /* channel groups: dim index / q * r; 0: no groups */
  uint16_t group_r;
} deeploy_tile_axis_t;

/* one operand of a tiled layer and its L1 slots */
typedef struct {
  uint8_t *home; /* the tensor (first element) in L2 or L3 */
  const deeploy_tile_axis_t *axes;
  uint8_t rank;
  uint8_t elem; /* bytes per element */
  uint8_t output; /* 1: written by the kernel, 0: read */
  uint8_t in_l3; /* 1: staged through `staging` in L2 */
  uint8_t copies; /* L1 slots: 2 when double-buffered */
  uint8_t *l1[2]; /* the L1 slots */
  uint8_t *staging; /* L2 buffer of an L3 operand's L2 tile */
} deeploy_tile_operand_t;

/* what the kernel of one tile sees (its fork argument) */
typedef struct {
  uint32_t cls; /* which call of the layer's kernel (tile class) */
  uint32_t fill; /* 1: the call fills the layer's shared tables (its class's first tile of the loop); 0: they hold what that call filled */
  void *buf[DEEPLOY_TILE_MAX_OPERANDS]; /* each operand's L1 tile */
} deeploy_tile_t;

/* a tiled layer: iteration space, tiles, operands, kernel */
typedef struct {
  uint8_t ndims;
  uint8_t noperands;
  uint8_t double_buffer;
  const uint8_t *order; /* loop order, outermost first */
  const int32_t *size; /* elements per dim */
  const int32_t *l2_tile; /* L2 tile extent per dim */
  const int32_t *l1_tile; /* L1 tile extent per dim */
  const uint16_t *const *dim_class; /* per dim: class of each L1 tile along it, in order */
  const uint32_t *class_radix; /* tile class = sum over d of dim_class[d][i] * radix[d] */
  const deeploy_tile_operand_t *operands;
  void (*kernel)(void *); /* forked on every tile with a deeploy_tile_t * */
  void (*engine_sync)(uint32_t); /* NULL, or the hook of an engine whose kernels can return with work in flight (DEEPLOY_TILE_SYNC_*) */
} deeploy_tiled_layer_t;

/* the shape of a copy: planes of rows of row bytes */
typedef struct {
  uint32_t row;
  uint32_t rows;
  uint32_t dst_stride;
  uint32_t src_stride;
  uint32_t planes;
  uint32_t dst_plane_stride;
  uint32_t src_plane_stride;
} deeploy_tile_geometry_t;

/* one cluster DMA copy of a planned tile loop */
typedef struct {
  uint8_t *dst;
  const uint8_t *src;
  uint8_t geometry; /* its shape: index into the plan's geometries */
  uint8_t handle; /* 0: a load; 1 + 2 * output + slot: an output slot's write-back (output: its index among the outputs) */
} deeploy_tile_copy_t;

/* one L1 tile of a planned tile loop */
typedef struct {
  uint16_t cls; /* which call of the layer's kernel (tile class) */
  uint8_t loads; /* copies issued in its input phase */
  uint8_t prefetch; /* copies of the next tile's inputs, issued before its fork */
  uint8_t stores; /* copies writing its outputs back */
  uint8_t wait; /* 1: wait for the loads in flight before the fork */
  uint32_t reuse; /* bit 2 * output + slot: wait for that output slot's last write-back */
  uint32_t slots; /* bit o: operand o's tile is in its second slot */
} deeploy_tile_step_t;

/* a tiled layer's compile-time DMA plan */
typedef struct {
  uint16_t ntiles;
  uint16_t before; /* copies issued before the first tile (its loads, double-buffered) */
  uint32_t ncopies;
  uint8_t noperands;
  uint8_t ngeometries;
  uint8_t wait_all; /* 1 (single-buffered): every tile waits for its write-back */
  const deeploy_tile_geometry_t *geometries;
  uint8_t *const *slots; /* operand o's L1 slots at 2 * o and 2 * o + 1 */
  const deeploy_tile_step_t *steps;
  const deeploy_tile_copy_t *copies; /* in issue order: before, then per tile loads, prefetch, stores */
  void (*kernel)(void *); /* forked on every tile with a deeploy_tile_t * */
} deeploy_tile_plan_t;

#endif
