/* The Cortex-M runtime: one core, nothing to start beyond picolibc's semihosting start-up (vector
 * table, stack, .data/.bss, FPU enable, exit code back to QEMU). The generated code includes this
 * header for its layer markers.
 *
 * A marker is the instruction `pld [pc, #ID]` (a preload hint: no architectural effect, and QEMU
 * makes no memory access for it), whose 12-bit immediate the Cortex-M cycle-count plugin
 * (toolchain/qemu_plugin/deeploy_arm_timing.c) decodes; programs run unchanged without it. */
#ifndef DEEPLOY_CORTEXM_H
#define DEEPLOY_CORTEXM_H

#include "deeploy_layer_markers.h"

#define DEEPLOY_MARKER(id) __asm__ volatile(".inst.w 0xf89ff000 | %c0" ::"i"(id) : "memory")
#define DEEPLOY_MARK_LAYER(k) DEEPLOY_MARKER(DEEPLOY_MARKER_LAYER_BASE + (k))
#define DEEPLOY_MARK_LAYER_END() DEEPLOY_MARKER(DEEPLOY_MARKER_LAYER_END)

#endif
