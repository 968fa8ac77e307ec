/* Cluster runtime of the PULPOpen/Siracusa target on the QEMU virtual platform.
 * Hart 0 is the fabric controller and cluster core 0; harts 0..N-1 are the cluster cores.
 * Generated network code only uses this interface. */
#ifndef DEEPLOY_RUNTIME_H
#define DEEPLOY_RUNTIME_H

#include <stdint.h>

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

/* Markers: a no-op instruction `slti x0, x0, ID` whose immediate the timing plugin decodes.
 * IDs 0x000-0x0ff are reserved for the runtime (fork, join, wait regions);
 * DEEPLOY_MARK_LAYER(k) tags the start of layer k (0..1791) for per-layer profiles;
 * DEEPLOY_MARK_LAYER_END closes the last layer. */
#define DEEPLOY_MARKER(id) __asm__ volatile("slti x0, x0, %0" ::"i"(id) : "memory")
#define DEEPLOY_MARK_LAYER(k) DEEPLOY_MARKER(0x100 + (k))
#define DEEPLOY_MARK_LAYER_END() DEEPLOY_MARKER(0x0ff)

/* Memory placement of generated buffers. */
#define DEEPLOY_L1 __attribute__((section(".l1_bss"), aligned(16)))
#define DEEPLOY_L2 __attribute__((section(".l2_bss"), aligned(16)))
#define DEEPLOY_L2_CONST __attribute__((section(".l2_rodata"), aligned(16)))
#define DEEPLOY_L3_CONST __attribute__((section(".l3_rodata"), aligned(16)))

#endif
