/* Cluster runtime of the MemPool target on the QEMU virtual platform (virt machine, RV32IMA):
 * harts 0..DEEPLOY_NUM_CORES-1 are the cores (up to 256; core 0 runs main). Generated network code
 * only uses this interface (the same as the Siracusa runtime's: fork, barrier, markers, placement
 * macros). */
#ifndef MEMPOOL_RUNTIME_H
#define MEMPOOL_RUNTIME_H

#include <stdint.h>

#include "deeploy_abi.h"

#ifndef DEEPLOY_NUM_CORES
#define DEEPLOY_NUM_CORES 16 /* cores forked on; set by the build (1..256), the peer runs 16 threads */
#endif

uint32_t deeploy_core_id(void);
static inline uint32_t deeploy_num_cores(void) { return DEEPLOY_NUM_CORES; }

/* Runs fn(arg) on every core (core 0 included) and returns when all have finished. Waiting
 * cores sleep (wfi) until woken (the ACLINT's msip: MemPool's wake-up register). Core 0 only. */
void deeploy_cluster_fork(void (*fn)(void *), void *arg);

/* Synchronises all cores inside a forked function (an atomic counter, as mempool_barrier). */
void deeploy_cluster_barrier(void);

/* Work-splitting hooks of the portable kernels (TargetLibraries/Generic/kernels/common.h). */
#define DEEPLOY_CORE_ID() deeploy_core_id()
#define DEEPLOY_CORES() deeploy_num_cores()
#define DEEPLOY_BARRIER() deeploy_cluster_barrier()

/* Markers for the timing plugin (ids in deeploy_abi.h; protocol as in the Siracusa runtime:
 * even ids of the wait range stop counting a hart, odd ones resume it). */
#define DEEPLOY_MARKER(id) __asm__ volatile("slti x0, x0, %0" ::"i"(id) : "memory")
#define DEEPLOY_MARK_LAYER(k) DEEPLOY_MARKER(DEEPLOY_MARKER_LAYER_BASE + (k))
#define DEEPLOY_MARK_LAYER_END() DEEPLOY_MARKER(DEEPLOY_MARKER_LAYER_END)

void deeploy_exit(int n) __attribute__((noreturn));

/* Placement: activations in L1 (the shared 1 MiB scratchpad), constants in L2, as the peer does.
 * The _bss sections are NOLOAD and zeroed before main. */
#define DEEPLOY_L1 __attribute__((section(".l1_bss"), aligned(16)))
#define DEEPLOY_L2 __attribute__((section(".l2_bss"), aligned(16)))
#define DEEPLOY_L2_CONST __attribute__((section(".l2_rodata"), aligned(16)))

#endif
