/* The NPU drivers' shared trigger, layer hooks and tile-loop hook (the queue: deeploy_npu.h); an
 * engine's driver defines NPU_ENGINE (its prefix) and includes this after its functional model. */
#ifndef DEEPLOY_NPU_JOBS_H
#define DEEPLOY_NPU_JOBS_H

#include "deeploy_npu.h"

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

/* Starts the job in context ``id``: NPU_ENGINE_trigger(id), for the engine the driver names in
 * NPU_ENGINE before including this header. On the virtual platform the engine's functional model
 * NPU_ENGINE_run_job runs here, outside the core counts, and the job's modelled cycles and
 * multiply-accumulates (NPU_ENGINE_job_cycles, NPU_ENGINE_job_macs: functions of its registers)
 * go to the cycle model's NPU timeline. */
#define NPU_CAT_(a, b) a##b
#define NPU_CAT(a, b) NPU_CAT_(a, b)
static inline void NPU_CAT(NPU_ENGINE, _trigger)(int id) {
    npu_marker_begin();
    NPU_CAT(NPU_ENGINE, _run_job)(npu_state.regs[id]);
    uint32_t cycles = NPU_CAT(NPU_ENGINE, _job_cycles)(npu_state.regs[id]);
    if (cycles >= (1u << (4 * DEEPLOY_RT_NPU_DIGITS))) cycles = (1u << (4 * DEEPLOY_RT_NPU_DIGITS)) - 1;
    for (int k = DEEPLOY_RT_NPU_DIGITS - 1; k >= 0; k--) npu_emit_digit(cycles >> (4 * k));
    const uint32_t macs = NPU_CAT(NPU_ENGINE, _job_macs)(npu_state.regs[id]);
    for (int k = DEEPLOY_RT_NPU_MAC_DIGITS - 1; k >= 0; k--) npu_emit_digit(macs >> (4 * k));
    npu_marker_end();
    npu_state.order[npu_state.triggered % NPU_QUEUE_DEPTH] = (uint8_t)id;
    npu_state.triggered++;
}

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

#endif /* DEEPLOY_NPU_JOBS_H */
