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
/* 1 when the integer type T is signed */
#define DEEPLOY_SIGNED(T) ((T)-1 < (T)0)

/* float -> int32 rounding half to even (as nearbyintf in the default rounding mode), for values
 * in int32's range: one conversion instruction on a RISC-V FPU, where nearbyintf is a library call. */
static inline int32_t deeploy_round_even(float f) {
#if defined(__riscv) && defined(__riscv_flen)
    int32_t i;
    __asm__("fcvt.w.s %0, %1, rne" : "=r"(i) : "f"(f));
    return i;
#else
    return (int32_t)__builtin_nearbyintf(f);
#endif
}

/* Float32 arithmetic in a fixed order, as a bit-exact reference computes it: deeploy_fmaf
 * rounds x * y + z once (a fused multiply-add), deeploy_fmul rounds x * y on its own (GNU C
 * would otherwise contract a product and a following addition into one fused operation). */
static inline float deeploy_fmaf(float x, float y, float z) {
    return __builtin_fmaf(x, y, z);
}

static inline float deeploy_fmul(float x, float y) {
    volatile float p = x * y;
    return p;
}

/* Arm's DSP extension (Cortex-M4 and later): SMLAD multiplies two pairs of signed halfwords and
 * adds both products to an accumulator; SXTB16 sign-extends bytes 0 and 2 of a word into its two
 * halfwords (deeploy_sxtb16_ror8: bytes 1 and 3; UXTB16 and deeploy_uxtb16_ror8 zero-extend them).
 * DEEPLOY_DSP_INT8(TIN, TW, TSUM) is true when a kernel's operands are int8 with int32 sums, i.e.
 * when it may take four products per two SMLADs; deeploy_word reads four bytes at any alignment
 * (one LDR on the M4). */
#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#define DEEPLOY_DSP_INT8(TIN, TW, TSUM)                                                                        \
    (sizeof(TIN) == 1 && sizeof(TW) == 1 && sizeof(TSUM) == 4 && (TIN)-1 < 0 && (TW)-1 < 0 && (TSUM)0.5 == 0)
static inline uint32_t deeploy_word(const void *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint32_t deeploy_sxtb16_ror8(uint32_t v) {
    uint32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}
static inline uint32_t deeploy_uxtb16_ror8(uint32_t v) {
    uint32_t r;
    __asm__("uxtb16 %0, %1, ror #8" : "=r"(r) : "r"(v));
    return r;
}
#endif

/* Helium (MVE, Cortex-M55): the int8 dot products of the GEMM's DSP path, 16 products per
 * VMLADAV; the last step, if partial, loads under a tail predicate (VCTP: lanes beyond n read as
 * zero). deeploy_mve_dot4: s[j] += x . w_j for the vectors w_j = w + j * ws (j < 4) of n values. */
#if defined(__ARM_FEATURE_MVE)
#include <arm_mve.h>
#define DEEPLOY_MVE_DOT(LOAD)                                                                                   \
    {                                                                                                         \
        const int8x16_t v = LOAD(x);                                                                          \
        a0 = vmladavaq_s8(a0, v, LOAD(w));                                                                    \
        a1 = vmladavaq_s8(a1, v, LOAD(w + ws));                                                               \
        a2 = vmladavaq_s8(a2, v, LOAD(w + 2 * ws));                                                           \
        a3 = vmladavaq_s8(a3, v, LOAD(w + 3 * ws));                                                           \
    }
static inline void deeploy_mve_dot4(const int8_t *x, const int8_t *w, uint32_t ws, uint32_t n, int32_t *s) {
    int32_t a0 = s[0], a1 = s[1], a2 = s[2], a3 = s[3];
    const int8_t *end = x + (n & ~15u);
    for (; x < end; x += 16, w += 16)
        DEEPLOY_MVE_DOT(vldrbq_s8)
    if (n & 15) {
        const mve_pred16_t p = vctp8q(n & 15);
#define DEEPLOY_MVE_TAIL(ptr) vldrbq_z_s8(ptr, p)
        DEEPLOY_MVE_DOT(DEEPLOY_MVE_TAIL)
#undef DEEPLOY_MVE_TAIL
    }
    s[0] = a0, s[1] = a1, s[2] = a2, s[3] = a3;
}
#undef DEEPLOY_MVE_DOT
#endif

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

/* Maximum and minimum that give NaN when an operand is NaN (ONNX's Max, Min, Clip, Relu as
 * onnxruntime computes them; fmaxf and fminf return the other operand). */
static inline float deeploy_fmax(float a, float b) {
    return a != a || b != b ? a + b : __builtin_fmaxf(a, b);
}

static inline float deeploy_fmin(float a, float b) {
    return a != a || b != b ? a + b : __builtin_fminf(a, b);
}

/* p[i] = v for an integer element type, stored through the unsigned type of its width: GCC
 * keeps narrow signed values sign-extended in registers and would extend each clipped value
 * before a byte or halfword store that ignores the upper bits. */
#define DEEPLOY_STORE(p, i, v)                                                                     \
    do {                                                                                           \
        if (sizeof(*(p)) == 1)                                                                     \
            ((uint8_t *)(p))[i] = (uint8_t)(v);                                                    \
        else if (sizeof(*(p)) == 2)                                                                \
            ((uint16_t *)(p))[i] = (uint16_t)(v);                                                  \
        else                                                                                       \
            (p)[i] = (__typeof__(*(p)))(v);                                                        \
    } while (0)

/* A 32-bit word that may alias any object (word-at-a-time copies of packed narrow elements). */
typedef uint32_t __attribute__((may_alias)) deeploy_word_t;

/* memcpy of n bytes: 32-bit words (four per loop trip) when dst and src share their
 * alignment modulo 4, with a byte head and tail; four bytes per loop trip otherwise. Written
 * without single-statement copy loops, which the compiler would turn back into memcpy calls
 * (a byte loop in the bare-metal C library). */
static inline void deeploy_copy(void *restrict dst, const void *restrict src, size_t n) {
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    const size_t head = (4 - ((uintptr_t)d & 3)) & 3;
    if ((((uintptr_t)d ^ (uintptr_t)s) & 3) == 0 && n >= head + 4) {
        if (head & 1)
            *d++ = *s++;
        if (head & 2) {
            d[0] = s[0], d[1] = s[1];
            d += 2, s += 2;
        }
        n -= head;
        deeploy_word_t *dw = (deeploy_word_t *)d;
        const deeploy_word_t *sw = (const deeploy_word_t *)s;
        for (; n >= 16; n -= 16, dw += 4, sw += 4) {
            const uint32_t w0 = sw[0], w1 = sw[1], w2 = sw[2], w3 = sw[3];
            dw[0] = w0, dw[1] = w1, dw[2] = w2, dw[3] = w3;
        }
        if (n & 8) {
            const uint32_t w0 = sw[0], w1 = sw[1];
            dw[0] = w0, dw[1] = w1;
            dw += 2, sw += 2;
        }
        if (n & 4)
            *dw++ = *sw++;
        d = (unsigned char *)dw;
        s = (const unsigned char *)sw;
        n &= 3;
    }
    for (; n >= 4; n -= 4, d += 4, s += 4) {
        const unsigned char b0 = s[0], b1 = s[1], b2 = s[2], b3 = s[3];
        d[0] = b0, d[1] = b1, d[2] = b2, d[3] = b3;
    }
    if (n & 2) {
        d[0] = s[0], d[1] = s[1];
        d += 2, s += 2;
    }
    if (n & 1)
        *d = *s;
}

/* This core's contiguous share [lo, hi) of n iterations (empty when n < cores). */
static inline deeploy_range_t deeploy_chunk(uint32_t n) {
    const uint32_t cores = DEEPLOY_CORES(), size = (n + cores - 1) / cores;
    uint32_t lo = DEEPLOY_CORE_ID() * size, hi;
    lo = lo < n ? lo : n;
    hi = lo + size < n ? lo + size : n;
    return (deeploy_range_t){lo, hi};
}

#endif
