/* Exact integer helpers of the integer softmax and normalisation kernels (no floating point,
 * no allocation). Static inline with an include guard, so any number of kernel instances can
 * include this header. */
#ifndef DEEPLOY_KERNELS_INTEGER_MATH_H
#define DEEPLOY_KERNELS_INTEGER_MATH_H

#include <stdint.h>

/* floor(sqrt(v)), exact, bit by bit (16 steps). */
static inline uint32_t deeploy_isqrt32(uint32_t v) {
    uint32_t r = 0, bit = (uint32_t)1 << 30;
    while (bit > v)
        bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/* floor(sqrt(v)), exact, for any 64-bit v; uses the 32-bit routine when v fits. */
static inline uint64_t deeploy_isqrt64(uint64_t v) {
    if (v <= UINT32_MAX)
        return deeploy_isqrt32((uint32_t)v);
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > v)
        bit >>= 2;
    while (bit) {
        if (v >= r + bit) {
            v -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/* Division by a divisor d >= 1 that is constant over many dividends, without a division per
 * dividend: compute inv = deeploy_recip(d) once, then deeploy_div_recip(n, d, inv) == n / d
 * exactly for every 0 <= n <= 2^31. With inv = floor((2^32-1)/d) the estimate
 * floor(n*inv / 2^32) is n/d or n/d - 1 for such n; one compare corrects it. The product is
 * the high word of a 32x32 multiply (mulhu on RV32). */
static inline uint32_t deeploy_recip(uint32_t d) {
    return UINT32_MAX / d;
}

static inline uint32_t deeploy_div_recip(uint32_t n, uint32_t d, uint32_t inv) {
    uint32_t q = (uint32_t)(((uint64_t)n * inv) >> 32);
    if (n - q * d >= d)
        q++;
    return q;
}

#endif
