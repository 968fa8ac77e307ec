/* Cluster runtime of the MemPool and Snitch targets on the QEMU virtual platform (virt machine,
 * RV32). Harts 0..DEEPLOY_NUM_CORES-1 are the cores that run forked layers (core 0 runs main);
 * DEEPLOY_DM_HARTS more harts follow (Snitch's data-mover core), which boot and sleep. The
 * platform's CMake file sets the counts and the L1 geometry the cycle model reads. Generated
 * network code only uses this interface (the same as the Siracusa runtime's: fork, barrier,
 * markers, placement macros). */
#ifndef VIRT_CLUSTER_H
#define VIRT_CLUSTER_H

#include <stdint.h>

#include "deeploy_abi.h"

#ifndef DEEPLOY_NUM_CORES
#define DEEPLOY_NUM_CORES 8 /* cores forked on; set by the build */
#endif
#ifndef DEEPLOY_DM_HARTS
#define DEEPLOY_DM_HARTS 0 /* harts after the cores that take no part in forks (data mover) */
#endif
/* L1 geometry for the cycle model (absolute ELF symbols read by the QEMU runner): banks of
 * DEEPLOY_L1_BANK_BYTES interleaved; DEEPLOY_BANKS_PER_TILE banks and DEEPLOY_CORES_PER_TILE cores
 * per tile, DEEPLOY_TILES_PER_GROUP tiles per group. Defaults: one tile (a single cluster). */
#ifndef DEEPLOY_L1_BANKS
#define DEEPLOY_L1_BANKS 32
#endif
#ifndef DEEPLOY_L1_BANK_BYTES
#define DEEPLOY_L1_BANK_BYTES 4
#endif
#ifndef DEEPLOY_BANKS_PER_TILE
#define DEEPLOY_BANKS_PER_TILE DEEPLOY_L1_BANKS
#endif
#ifndef DEEPLOY_CORES_PER_TILE
#define DEEPLOY_CORES_PER_TILE (DEEPLOY_NUM_CORES + DEEPLOY_DM_HARTS)
#endif
#ifndef DEEPLOY_TILES_PER_GROUP
#define DEEPLOY_TILES_PER_GROUP 1
#endif

uint32_t deeploy_core_id(void);
static inline uint32_t deeploy_num_cores(void) { return DEEPLOY_NUM_CORES; }

/* Runs fn(arg) on every core (core 0 included) and returns when all have finished. Waiting
 * cores sleep (wfi) until woken (the ACLINT's msip: MemPool's wake-up register). Core 0 only. */
void deeploy_cluster_fork(void (*fn)(void *), void *arg);

/* Synchronises all cores inside a forked function (an atomic counter: mempool_barrier; Snitch's
 * hardware barrier CSR does not exist on QEMU). */
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

/* Placement: L1 (MemPool's shared scratchpad, Snitch's TCDM) and L2 (MemPool's L2, Snitch's
 * main memory). The _bss sections are NOLOAD and zeroed before main. */
#define DEEPLOY_L1 __attribute__((section(".l1_bss"), aligned(16)))
#define DEEPLOY_L2 __attribute__((section(".l2_bss"), aligned(16)))
#define DEEPLOY_L2_CONST __attribute__((section(".l2_rodata"), aligned(16)))

#endif
