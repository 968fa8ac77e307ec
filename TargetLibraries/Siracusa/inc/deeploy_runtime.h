/* Cluster runtime of the Siracusa target on the QEMU virtual platform.
 * Hart 0 is the fabric controller and cluster core 0; harts 0..N-1 are the cluster cores.
 * Generated network code only uses this interface. */
#ifndef DEEPLOY_RUNTIME_H
#define DEEPLOY_RUNTIME_H

#include <stdint.h>

#include "deeploy_abi.h"

#ifndef DEEPLOY_NUM_CORES
#define DEEPLOY_NUM_CORES 8 /* cluster cores used; set by the build (1..8) */
#endif

/* Id of the calling core (0..DEEPLOY_NUM_CORES-1). */
uint32_t deeploy_core_id(void);

/* Number of cluster cores taking part in forks. */
static inline uint32_t deeploy_num_cores(void) { return DEEPLOY_NUM_CORES; }

/* Runs fn(arg) on every cluster core (core 0 included) and returns when all have finished.
 * Waiting cores sleep (wfi), they do not spin. Called from core 0 only. */
void deeploy_cluster_fork(void (*fn)(void *), void *arg);

/* Synchronises all cores inside a forked function. */
void deeploy_cluster_barrier(void);

/* Harts that may call the runtime: the cluster cores, and the data-mover core when there is one. */
#ifdef DEEPLOY_DM_CORE
#define DEEPLOY_HARTS (DEEPLOY_DM_CORE + 1)

/* Data-mover core (Snitch; DEEPLOY_DM_CORE = its hart, beyond the cluster cores). Core 0 hands it
 * fn(arg) and computes the forks it starts, as the other cores, until fn returns. */
void deeploy_dm_call(void (*fn)(const void *), const void *arg);

/* The data-mover core: starts fn(arg) on every cluster core without taking part, and returns at
 * once; deeploy_cluster_join() waits until all have finished. */
void deeploy_cluster_fork_begin(void (*fn)(void *), void *arg);
void deeploy_cluster_join(void);
#else
#define DEEPLOY_HARTS DEEPLOY_NUM_CORES
#endif

/* Work-splitting hooks of the portable kernels (TargetLibraries/Generic/kernels/common.h). */
#define DEEPLOY_CORE_ID() deeploy_core_id()
#define DEEPLOY_CORES() deeploy_num_cores()
#define DEEPLOY_BARRIER() deeploy_cluster_barrier()

/* Markers: a no-op instruction `slti x0, x0, ID` whose immediate the timing plugin decodes. The
 * ids are defined in deeploy_abi.h (generated from Deeploy/runtime/abi.py).
 * Ids below DEEPLOY_MARKER_LAYER_END are reserved for the runtime (fork, join, wait regions);
 * DEEPLOY_MARK_LAYER(k) tags the start of layer k (0..DEEPLOY_MARKER_LAYER_COUNT-1) for per-layer
 * profiles; DEEPLOY_MARK_LAYER_END closes the last layer. */
#define DEEPLOY_MARKER(id) __asm__ volatile("slti x0, x0, %0" ::"i"(id) : "memory")
#define DEEPLOY_MARK_LAYER(k) DEEPLOY_MARKER(DEEPLOY_MARKER_LAYER_BASE + (k))
#define DEEPLOY_MARK_LAYER_END() DEEPLOY_MARKER(DEEPLOY_MARKER_LAYER_END)

/* Runtime markers (emitted by the runtime only; the timing plugin toolchain/qemu_plugin decodes
 * them). In DEEPLOY_RT_WAIT_FIRST..DEEPLOY_RT_WAIT_LAST an EVEN id opens a wait region and an ODD
 * id closes it: the plugin stops counting a hart's instructions and memory accesses after an even
 * id and resumes after an odd one (marker instructions themselves are never counted). All other
 * ids (tile phases, layers) leave counting as it is. Everything the runtime does to dispatch,
 * join, synchronise or sleep is inside such regions, so counts are identical run to run; the cycle
 * model (Deeploy/targets/siracusa/timing.py) charges fork and barrier overheads instead.
 *   hart 0:  ... FORK_ENTER [publish, wake] TASK_BEGIN fn(arg) TASK_END [join wait] FORK_LEAVE ...
 *   hart h:  BOOT [wait for boot flag, sleep] TASK_BEGIN fn(arg) TASK_END [sleep] TASK_BEGIN ...
 *   any:     BARRIER_ENTER [arrive, sleep until all arrived] BARRIER_LEAVE  (inside fn only)
 *   hart 0 before main: INIT_ENTER [clear .l1/.l2/.l3_bss, probe harts, release workers] INIT_LEAVE
 *   data mover: hart 0: DM_CALL_ENTER [hand over; TASK_BEGIN fn TASK_END per fork] DM_CALL_LEAVE;
 *     the data mover: DM_RUN_BEGIN fn ... FORK_ENTER [publish, wake] FORK_RUN <its own work>
 *     FORK_JOIN [wait for the cores] FORK_LEAVE ... DM_RUN_END
 *   PARK: a hart beyond DEEPLOY_NUM_CORES (or the stacks reserved) sleeps forever.
 * DMA (deeploy_dma.h) uses the DEEPLOY_RT_DMA_* ids: issue and wait windows (same even/odd rule)
 * and, inside those windows only, DEEPLOY_RT_DMA_INNER_FIRST..LAST (engine, commands, rows,
 * retired transfers). */

/* Stops the program: exit code n (QEMU exits with n, via semihosting). Same as exit(n). */
void deeploy_exit(int n) __attribute__((noreturn));

/* Memory placement of generated buffers. The _bss sections are NOLOAD and zeroed before main:
 * initialisers of DEEPLOY_L1 / DEEPLOY_L2 / DEEPLOY_L3 variables are ignored. */
#define DEEPLOY_L1 __attribute__((section(".l1_bss"), aligned(16)))
#define DEEPLOY_L2 __attribute__((section(".l2_bss"), aligned(16)))
#define DEEPLOY_L2_CONST __attribute__((section(".l2_rodata"), aligned(16)))
#define DEEPLOY_L3_CONST __attribute__((section(".l3_rodata"), aligned(16)))
#define DEEPLOY_L3 __attribute__((section(".l3_bss"), aligned(16))) /* zeroed before main */

#endif
