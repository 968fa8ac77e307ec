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

#endif
