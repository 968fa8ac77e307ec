/* What every NPU driver of the virtual platform shares (neureka.h, ne16.h): the job queue (a job
 * slot per register context, jobs completing in trigger order), the markers that bracket a job's
 * functional model (run on the triggering hart, not core work) and pass its modelled cycles and
 * multiply-accumulates to the cycle model as hex digits, the waits, and the tile loop's hook.
 * A platform has one NPU; its driver writes the job registers and runs its functional model.
 * This header holds the queue; deeploy_npu_jobs.h the trigger, the layer hooks and the tile loop's
 * hook, which the driver includes after its functional model (as the code was laid out before the
 * two engines shared it: the programs' code layout, and so their cycles, stay the same). */
#ifndef DEEPLOY_NPU_H
#define DEEPLOY_NPU_H

#include <stdint.h>

#include "deeploy_abi.h"
#include "deeploy_runtime.h"   /* the cluster runtime the NPU is driven from (memory placement macros) */

#define NPU_QUEUE_DEPTH 2      /* register contexts: a job is programmed while the previous one runs */
#define NPU_JOB_REGS 24        /* job registers (both engines: pointers, strides, subtiles, padding, offset, config) */

typedef struct {
    uint32_t regs[NPU_QUEUE_DEPTH][NPU_JOB_REGS];
    uint8_t busy[NPU_QUEUE_DEPTH];   /* acquired or running, not yet waited for */
    uint8_t next;                    /* the context the next acquire tries first */
    uint8_t order[NPU_QUEUE_DEPTH];  /* contexts of the triggered jobs, oldest first (a ring) */
    uint32_t triggered, waited;      /* jobs triggered and waited for so far */
    uint32_t tile_first;             /* the first job of the latest tile (deferred tiles) */
    uint8_t defer;                   /* tile kernels return with their jobs in flight */
} npu_state_t;

/* In L1: the job registers are the engine's, on the cluster's peripheral interconnect, a few cycles
 * from the cores (as the TCDM), not across the SoC interconnect (as L2). */
static npu_state_t npu_state DEEPLOY_L1;

static inline void npu_marker_begin(void) { __asm__ volatile("slti x0, x0, %0" ::"i"(DEEPLOY_RT_NPU_JOB_BEGIN) : "memory"); }
static inline void npu_marker_end(void) { __asm__ volatile("slti x0, x0, %0" ::"i"(DEEPLOY_RT_NPU_JOB_END) : "memory"); }

/* A free job slot, or -1 when every context holds a job not yet waited for. */
static inline int npu_acquire(void) {
    for (int k = 0; k < NPU_QUEUE_DEPTH; k++) {
        int id = (npu_state.next + k) % NPU_QUEUE_DEPTH;
        if (!npu_state.busy[id]) {
            npu_state.busy[id] = 1;
            npu_state.next = (uint8_t)((id + 1) % NPU_QUEUE_DEPTH);
            return id;
        }
    }
    return -1;
}

/* Waits until the oldest triggered job is complete and frees its context (jobs complete in
 * trigger order: the engine runs one at a time). Nothing to wait for: returns at once. */
static inline void npu_wait_oldest(void) {
    if (npu_state.waited == npu_state.triggered) return;
    __asm__ volatile("slti x0, x0, %0" ::"i"(DEEPLOY_RT_NPU_WAIT) : "memory");
    npu_state.busy[npu_state.order[npu_state.waited % NPU_QUEUE_DEPTH]] = 0;
    npu_state.waited++;
}

/* A job slot, waiting for the oldest job when the queue is full. */
static inline int npu_acquire_wait(void) {
    int id = npu_acquire();
    while (id < 0) {
        npu_wait_oldest();
        id = npu_acquire();
    }
    return id;
}

/* Waits for every job triggered before job number ``seq`` (counting from 0). */
static inline void npu_wait_before(uint32_t seq) {
    while ((int32_t)(seq - npu_state.waited) > 0 && npu_state.waited != npu_state.triggered)
        npu_wait_oldest();
}

static inline void npu_write(int id, int reg, uint32_t value) { npu_state.regs[id][reg] = value; }

static inline int32_t npu_sat32(int64_t v) {
    return v > INT32_MAX ? INT32_MAX : (v < INT32_MIN ? INT32_MIN : (int32_t)v);
}

#endif /* DEEPLOY_NPU_H */
