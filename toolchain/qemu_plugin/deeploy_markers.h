/* Generated from Deeploy/runtime/abi.py by `python -m Deeploy.runtime.abi_headers`: do not edit.
 * Marker ids the QEMU timing plugin decodes (deeploy_timing.c). */
#ifndef DEEPLOY_MARKERS_H
#define DEEPLOY_MARKERS_H

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

#endif
