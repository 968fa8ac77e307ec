/* Shared helpers of the Generic kernels. Each kernel source (*.inc) defines
 * `static void KERNEL(...)` in terms of type macros the generated code defines before
 * including it; helpers private to one source are named KFN(_suffix). */
#ifndef DEEPLOY_KERNELS_COMMON_H
#define DEEPLOY_KERNELS_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DEEPLOY_CAT_(a, b) a##b
#define DEEPLOY_CAT(a, b) DEEPLOY_CAT_(a, b)
#define KFN(suffix) DEEPLOY_CAT(KERNEL, suffix)

#define DEEPLOY_MIN(a, b) ((a) < (b) ? (a) : (b))
#define DEEPLOY_MAX(a, b) ((a) > (b) ? (a) : (b))
#define DEEPLOY_CLIP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))

/* Work splitting. On a cluster every core runs the same kernel call (inside a fork) and takes
 * its share of the kernel's outermost parallel loop; on a serial platform there is one core
 * and the share is everything, so both give bit-identical results. The runtime header of a
 * multi-core engine, included before this file, defines the three hooks; without one there is
 * one core. */
#ifndef DEEPLOY_CORE_ID
#define DEEPLOY_CORE_ID() 0u
#define DEEPLOY_CORES() 1u
#define DEEPLOY_BARRIER() ((void)0)
#endif

typedef struct {
    uint32_t lo, hi;
} deeploy_range_t;

/* This core's contiguous share [lo, hi) of n iterations (empty when n < cores). */
static inline deeploy_range_t deeploy_chunk(uint32_t n) {
    const uint32_t cores = DEEPLOY_CORES(), size = (n + cores - 1) / cores;
    uint32_t lo = DEEPLOY_CORE_ID() * size, hi;
    lo = lo < n ? lo : n;
    hi = lo + size < n ? lo + size : n;
    return (deeploy_range_t){lo, hi};
}

#endif
