/* DMA engines of the Siracusa target on the QEMU virtual platform.
 *
 * Two engines, each one FIFO queue of transfers:
 *   DEEPLOY_DMA_CLUSTER  the cluster DMA (mchan): L2 <-> L1; one side must be in L1, the other in L2
 *   DEEPLOY_DMA_L3       the L3 DMA (uDMA HyperBus channel): L3 <-> L2; neither side may be in L1
 *                        (without an L3 level in the memory map, L2 <-> L2 is accepted)
 *
 * Transfers are asynchronous: a copy call returns a handle at once, deeploy_dma_wait() returns
 * when that transfer (and every earlier one of the same core on the same engine) is complete.
 * Until then the destination must not be read and the source must not be written.
 *
 * Who may call: ANY core, inside or outside a fork (with a data-mover core, DEEPLOY_DM_CORE: it alone). Transfers and handles belong to the core that
 * issued them: a core waits only for its own transfers (waiting for a handle the calling core has
 * not issued is a fatal error). To hand data to other cores, the issuing core waits and then
 * the cores synchronise (deeploy_cluster_barrier). The usual pattern in a forked kernel: core 0
 * issues and waits, all cores compute, barriers in between.
 *
 * On QEMU the copy is done functionally at issue time by the calling hart, inside runtime markers
 * (deeploy_runtime.h), so its instructions and memory accesses are not counted as core work; the
 * timing plugin turns each issue into a transfer record (bytes read and written per memory region,
 * rows, hardware commands) and each wait into a wait record naming the transfer it waited for;
 * the cycle model (Deeploy/targets/siracusa/timing.py) puts the transfer on the engine's queue
 * and stalls the waiting core until it ends.
 *
 * Shapes: 1-D (bytes), 2-D (rows of row_bytes, consecutive rows dst_stride / src_stride bytes
 * apart) and 3-D (planes of such 2-D blocks, dst_plane_stride / src_plane_stride apart). The
 * runtime merges contiguous dimensions (a 2-D copy of contiguous rows is one 1-D command). The
 * cluster DMA executes 1-D and 2-D commands: a 3-D copy is one 2-D command per plane, all under
 * one handle (built with DEEPLOY_DMA_1D, a DMA with 1-D commands only: one per row). A copy of 0
 * bytes issues nothing and returns DEEPLOY_DMA_NONE. */
#ifndef DEEPLOY_DMA_H
#define DEEPLOY_DMA_H

#include <stdint.h>

#include "deeploy_runtime.h"

typedef enum {
  DEEPLOY_DMA_CLUSTER = 0, /* cluster DMA (mchan), L2 <-> L1 */
  DEEPLOY_DMA_L3 = 1,      /* L3 DMA (uDMA HyperBus), L3 <-> L2 */
} deeploy_dma_engine_t;
#define DEEPLOY_DMA_ENGINES 2

/* Handle of a transfer: its 1-based sequence number among the transfers the calling core has
 * issued on that engine. DEEPLOY_DMA_NONE (0): no transfer (waiting for it returns at once);
 * DEEPLOY_DMA_ALL: every transfer the calling core has issued on the engine so far. */
typedef uint32_t deeploy_dma_t;
#define DEEPLOY_DMA_NONE ((deeploy_dma_t)0)
#define DEEPLOY_DMA_ALL ((deeploy_dma_t)0xffffffffu)

/* DMA markers (slti x0, x0, ID; decoded by toolchain/qemu_plugin/deeploy_timing.c).
 * Ids in deeploy_abi.h (DEEPLOY_RT_DMA_*, generated from Deeploy/runtime/abi.py).
 * ISSUE_BEGIN/WAIT_BEGIN (even) and ISSUE_END/WAIT_END (odd) are runtime wait-region markers:
 * nothing between them is counted as core work. The markers in DEEPLOY_RT_DMA_INNER_FIRST..LAST
 * appear only inside such a window and write no record of their own:
 *   ENGINE(e)   names the engine of the issue or wait window (exactly once per window)
 *   CMD         a hardware command (1-D or 2-D) of the transfer begins
 *   ROW_BEGIN   a contiguous row follows: the loads and stores up to ROW_END are the transfer's
 *   ROW_END     bytes (read and written per memory region); a row is copied by one asm block
 *               with both markers inside, so no compiler-generated access falls in between
 *   RETIRE      (wait window) the oldest not yet retired transfer of this core on this engine is
 *               complete; the runtime emits one per transfer up to the handle waited for
 * Sequences:
 *   issue: ISSUE_BEGIN ENGINE(e) { CMD { ROW_BEGIN <copy> ROW_END }* }* ISSUE_END
 *          (no CMD: a 0-byte copy, no transfer)
 *   wait:  WAIT_BEGIN ENGINE(e) RETIRE* WAIT_END */

/* Implementation (src/deeploy_dma.c), called inside the marker windows below; use the
 * deeploy_dma_* functions instead. */
deeploy_dma_t deeploy_dma_issue_(uint32_t engine, void *dst, const void *src, uint32_t row_bytes, uint32_t rows,
                                 uint32_t dst_stride, uint32_t src_stride, uint32_t planes, uint32_t dst_plane_stride,
                                 uint32_t src_plane_stride);
void deeploy_dma_wait_(uint32_t engine, deeploy_dma_t handle);

/* 3-D copy: planes x rows x row_bytes. Returns the transfer's handle. */
static inline deeploy_dma_t deeploy_dma_copy_3d(deeploy_dma_engine_t engine, void *dst, const void *src,
                                                uint32_t row_bytes, uint32_t rows, uint32_t dst_stride,
                                                uint32_t src_stride, uint32_t planes, uint32_t dst_plane_stride,
                                                uint32_t src_plane_stride) {
  DEEPLOY_MARKER(DEEPLOY_RT_DMA_ISSUE_BEGIN);
  deeploy_dma_t h = deeploy_dma_issue_((uint32_t)engine, dst, src, row_bytes, rows, dst_stride, src_stride, planes,
                                       dst_plane_stride, src_plane_stride);
  DEEPLOY_MARKER(DEEPLOY_RT_DMA_ISSUE_END);
  return h;
}

/* 2-D copy: rows x row_bytes, rows dst_stride / src_stride bytes apart. */
static inline deeploy_dma_t deeploy_dma_copy_2d(deeploy_dma_engine_t engine, void *dst, const void *src,
                                                uint32_t row_bytes, uint32_t rows, uint32_t dst_stride,
                                                uint32_t src_stride) {
  return deeploy_dma_copy_3d(engine, dst, src, row_bytes, rows, dst_stride, src_stride, 1, 0, 0);
}

/* 1-D copy of bytes contiguous bytes. */
static inline deeploy_dma_t deeploy_dma_copy(deeploy_dma_engine_t engine, void *dst, const void *src,
                                             uint32_t bytes) {
  return deeploy_dma_copy_3d(engine, dst, src, bytes, 1, bytes, bytes, 1, 0, 0);
}

/* Returns when transfer `handle` of the calling core on `engine` (and all its earlier ones there)
 * is complete. DEEPLOY_DMA_NONE and already completed handles return at once. */
static inline void deeploy_dma_wait(deeploy_dma_engine_t engine, deeploy_dma_t handle) {
  DEEPLOY_MARKER(DEEPLOY_RT_DMA_WAIT_BEGIN);
  deeploy_dma_wait_((uint32_t)engine, handle);
  DEEPLOY_MARKER(DEEPLOY_RT_DMA_WAIT_END);
}

/* Waits for every transfer the calling core has issued on `engine`. */
static inline void deeploy_dma_wait_all(deeploy_dma_engine_t engine) { deeploy_dma_wait(engine, DEEPLOY_DMA_ALL); }

#endif
