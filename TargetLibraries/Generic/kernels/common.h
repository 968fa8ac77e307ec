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

/* Float kernels compute in float32. bfloat16 values are the upper 16 bits of a float32, kept in
 * a struct of their own so that no integer kernel can take them for integers: DEEPLOY_F32(v)
 * widens a float or bfloat16 value exactly, DEEPLOY_AS(T, f) stores float f as type T (bfloat16
 * rounded to nearest even). */
typedef struct {
    uint16_t bits;
} deeploy_bf16_t;

static inline float deeploy_bf16_to_f32(deeploy_bf16_t v) {
    const uint32_t u = (uint32_t)v.bits << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline deeploy_bf16_t deeploy_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (deeploy_bf16_t){(uint16_t)((u >> 16) | 0x40u)};   /* NaN stays NaN */
    u += 0x7fffu + ((u >> 16) & 1u);
    return (deeploy_bf16_t){(uint16_t)(u >> 16)};
}

static inline float deeploy_f32_id(float f) {
    return f;
}

#define DEEPLOY_F32(v) _Generic((v), deeploy_bf16_t: deeploy_bf16_to_f32, default: deeploy_f32_id)(v)
#define DEEPLOY_AS(T, f) _Generic((T){0}, deeploy_bf16_t: deeploy_f32_to_bf16, default: deeploy_f32_id)(f)

/* This core's contiguous share [lo, hi) of n iterations (empty when n < cores). */
static inline deeploy_range_t deeploy_chunk(uint32_t n) {
    const uint32_t cores = DEEPLOY_CORES(), size = (n + cores - 1) / cores;
    uint32_t lo = DEEPLOY_CORE_ID() * size, hi;
    lo = lo < n ? lo : n;
    hi = lo + size < n ? lo + size : n;
    return (deeploy_range_t){lo, hi};
}

#endif
