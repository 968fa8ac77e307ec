/* Exact integer helpers of the integer softmax and normalisation kernels (no floating point,
 * no allocation). Static inline with an include guard, so any number of kernel instances can
 * include this header. */
#ifndef DEEPLOY_KERNELS_INTEGER_MATH_H
#define DEEPLOY_KERNELS_INTEGER_MATH_H

#include <stdint.h>

#include "common.h"

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

/* Exact division by a divisor d >= 1 shared by many dividends 0 <= n < 2^31, with one high
 * multiply and a shift per dividend (no correction step): m = ceil(2^(31+c) / d) with
 * c = ceil(log2 d) (m < 2^32 since d > 2^(c-1)), and n / d == floor(2n * m / 2^32) >> c.
 * Exact because, with m*d = 2^(31+c) + r (0 <= r < d <= 2^c), n*m / 2^(31+c) = n/d + n*r / (d * 2^(31+c))
 * and n*r < 2^31 * 2^c: the excess never reaches the next integer. d > 2^31 gives 0 for every such n. */
typedef struct {
    uint32_t m, c;
} deeploy_divisor_t;

/* Leading zeros of v != 0, in 32-bit compares and shifts (no libgcc call on cores without clz). */
static inline uint32_t deeploy_clz32(uint32_t v) {
    uint32_t n = 0;
    if (v < ((uint32_t)1 << 16)) { n += 16; v <<= 16; }
    if (v < ((uint32_t)1 << 24)) { n += 8; v <<= 8; }
    if (v < ((uint32_t)1 << 28)) { n += 4; v <<= 4; }
    if (v < ((uint32_t)1 << 30)) { n += 2; v <<= 2; }
    return v < ((uint32_t)1 << 31) ? n + 1 : n;
}

/* floor((2^63 - 1) / v) for a normalised v (2^31 < v < 2^32): Knuth's algorithm D with 16-bit
 * digits (Hacker's Delight divlu), two 32-bit divisions, no 64-bit arithmetic. The dividend's
 * high word 2^31 - 1 is below v, so the quotient fits 32 bits. */
static inline uint32_t deeploy_div63(uint32_t v) {
    const uint32_t b = (uint32_t)1 << 16, u1 = 0x7fffffffu, vn1 = v >> 16, vn0 = v & 0xffffu;
    uint32_t q1 = u1 / vn1;
    __asm__("" : "+r"(q1)); /* the remainder from q1 (a multiply), not a second division */
    uint32_t rhat = u1 - q1 * vn1;
    while (q1 >= b || q1 * vn0 > ((rhat << 16) | 0xffffu)) {
        q1--;
        rhat += vn1;
        if (rhat >= b)
            break;
    }
    const uint32_t un21 = (u1 << 16) + 0xffffu - q1 * v; /* the partial remainder, < v */
    uint32_t q0 = un21 / vn1;
    __asm__("" : "+r"(q0));
    rhat = un21 - q0 * vn1;
    while (q0 >= b || q0 * vn0 > ((rhat << 16) | 0xffffu)) {
        q0--;
        rhat += vn1;
        if (rhat >= b)
            break;
    }
    return (q1 << 16) | q0;
}

/* m = ceil(2^(31+c) / d) in 32-bit arithmetic: a power of two gives 2^31; otherwise
 * 2^(c-1) < d < 2^c and with v = d << (32 - c) (normalised) m = ceil(2^63 / v) =
 * floor((2^63 - 1) / v) + 1. Checked against the 64-bit formula for every d in
 * test_softmax_transpose_kernels.py. */
static inline deeploy_divisor_t deeploy_divisor(uint32_t d) {
    deeploy_divisor_t v = {0, 0};
    if (d == 0 || d > ((uint32_t)1 << 31))
        return v;
    v.c = d > 1 ? 32 - deeploy_clz32(d - 1) : 0;
    v.m = (d & (d - 1)) == 0 ? (uint32_t)1 << 31 : deeploy_div63(d << (32 - v.c)) + 1;
    return v;
}

static inline uint32_t deeploy_div_exact(uint32_t n, deeploy_divisor_t v) {
    return (uint32_t)(((uint64_t)(n << 1) * v.m) >> 32) >> v.c;
}

/* This core's share of `rows` rows of `width` elements: rows [lo, hi), of which row lo is
 * written from column jlo on and row hi-1 up to column jhi (exclusive), the others entirely.
 * The rows of a kernel are walked as
 *     for (r = s.lo; r < s.hi; r++) { ja = r == s.lo ? s.jlo : 0; jb = r == s.hi - 1 ? s.jhi : width; }
 * deeploy_chunk_flat splits the flat element range (element-wise kernels). deeploy_chunk_rows
 * (kernels that reduce each row, then write it) splits whole rows when there are at least as
 * many rows as cores, else the flat range: a row shared by several cores is then reduced whole
 * by each of them (identical results, the reduced axis is never split) and each writes its own
 * columns. No shared intermediates, so no barrier. One core: all rows, whole. */
typedef struct {
    uint32_t lo, hi, jlo, jhi;
} deeploy_rows_t;

static inline deeploy_rows_t deeploy_chunk_flat(uint32_t rows, uint32_t width) {
    deeploy_rows_t s = {0, rows, 0, width};
    if (DEEPLOY_CORES() == 1)
        return s;
    const deeploy_range_t f = deeploy_chunk(rows * width);
    if (f.lo == f.hi) {
        s.hi = 0;
        return s;
    }
    s.lo = f.lo / width;
    s.jlo = f.lo - s.lo * width;
    s.hi = (f.hi - 1) / width + 1;
    s.jhi = f.hi - (s.hi - 1) * width;
    return s;
}

static inline deeploy_rows_t deeploy_chunk_rows(uint32_t rows, uint32_t width) {
    if (DEEPLOY_CORES() == 1 || rows >= DEEPLOY_CORES()) {
        const deeploy_range_t c = deeploy_chunk(rows);
        return (deeploy_rows_t){c.lo, c.hi, 0, width};
    }
    return deeploy_chunk_flat(rows, width);
}

#endif
