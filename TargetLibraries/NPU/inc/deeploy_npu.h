/* What every NPU driver of the virtual platform shares (neureka.h, ne16.h): the job queue (a job
 * slot per register context, jobs completing in trigger order), the markers that bracket a job's
 * functional model (run on the triggering hart, not core work) and pass its modelled cycles and
 * multiply-accumulates to the cycle model as hex digits, the waits, and the tile loop's hook.
 * A platform has one NPU; its driver writes the job registers and runs its functional model. */
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

static npu_state_t npu_state;

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

/* One hex digit of a job's cycles as a marker (the timing plugin records it; the cycle model
 * reads the job's cycles from NPU_DIGITS of them). */
#define NPU_DIGIT_CASE(d) case d: __asm__ volatile("slti x0, x0, %0" ::"i"(DEEPLOY_RT_NPU_DIGIT_BASE + d) : "memory"); break;
static void npu_emit_digit(uint32_t d) {
    switch (d & 15u) {
        NPU_DIGIT_CASE(0) NPU_DIGIT_CASE(1) NPU_DIGIT_CASE(2) NPU_DIGIT_CASE(3)
        NPU_DIGIT_CASE(4) NPU_DIGIT_CASE(5) NPU_DIGIT_CASE(6) NPU_DIGIT_CASE(7)
        NPU_DIGIT_CASE(8) NPU_DIGIT_CASE(9) NPU_DIGIT_CASE(10) NPU_DIGIT_CASE(11)
        NPU_DIGIT_CASE(12) NPU_DIGIT_CASE(13) NPU_DIGIT_CASE(14) NPU_DIGIT_CASE(15)
    }
}

/* Starts the job in context ``id`` on the virtual platform: the engine's functional model
 * ``run`` runs here, outside the core counts, and the modelled ``cycles`` and ``macs`` of the
 * job (engine functions of its registers) go to the cycle model's NPU timeline. */
#define NPU_TRIGGER(id, run, cycles_of, macs_of)                                                           \
    do {                                                                                                   \
        npu_marker_begin();                                                                                \
        run(npu_state.regs[id]);                                                                           \
        uint32_t cycles = cycles_of(npu_state.regs[id]);                                                   \
        if (cycles >= (1u << (4 * DEEPLOY_RT_NPU_DIGITS))) cycles = (1u << (4 * DEEPLOY_RT_NPU_DIGITS)) - 1; \
        for (int k = DEEPLOY_RT_NPU_DIGITS - 1; k >= 0; k--) npu_emit_digit(cycles >> (4 * k));            \
        const uint32_t macs = macs_of(npu_state.regs[id]);                                                 \
        for (int k = DEEPLOY_RT_NPU_MAC_DIGITS - 1; k >= 0; k--) npu_emit_digit(macs >> (4 * k));          \
        npu_marker_end();                                                                                  \
        npu_state.order[npu_state.triggered % NPU_QUEUE_DEPTH] = (uint8_t)(id);                            \
        npu_state.triggered++;                                                                             \
    } while (0)

/* A layer's jobs begin (``npu_layer_end`` closes them). */
static inline void npu_layer_begin(void) { npu_state.tile_first = npu_state.triggered; }

/* A layer's jobs are all triggered: wait for them, unless the tile loop defers the waits. */
static inline void npu_layer_end(void) {
    if (!npu_state.defer) npu_wait_before(npu_state.triggered);
}

/* The tile loop's hook (deeploy_tiled_layer_t.engine_sync, deeploy_tiling.h; the NPU engines'
 * ``tile_sync``): DEFER lets every following tile kernel return with its jobs in flight, so the
 * next tile's job is programmed while the current one runs (the queue holds two); PREVIOUS waits
 * for the jobs of every tile but the latest one (before their outputs are written back); ALL
 * waits for every job and ends the deferral. */
static void npu_tile_sync(uint32_t op) {
    if (op == DEEPLOY_TILE_SYNC_DEFER) {
        npu_state.defer = 1;
        return;
    }
    npu_wait_before(op == DEEPLOY_TILE_SYNC_PREVIOUS ? npu_state.tile_first : npu_state.triggered);
    if (op == DEEPLOY_TILE_SYNC_ALL) npu_state.defer = 0;
}

#endif /* DEEPLOY_NPU_H */
