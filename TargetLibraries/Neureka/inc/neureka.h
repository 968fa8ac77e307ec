/* Neureka NPU: driver API and functional model (specs/neureka.md).
 *
 * The driver programs a job the way the hardware is programmed (the queue, markers and waits
 * every NPU shares: deeploy_npu.h): acquire a job slot (one of the NPU_QUEUE_DEPTH register
 * contexts; -1 when the queue is full), write the job registers,
 * trigger, and wait for completion (jobs complete in trigger order). The virtual platform has no NPU device: triggering runs the
 * functional model of the job on the triggering hart, between the NPU job markers, so the
 * timing plugin does not count the model's instructions as core work. The model is bit-exact
 * with the engine: weights decoded from the offline layout (bit planes, channel subtiles,
 * layer-wise weight offset), 32-bit wrapping accumulators, normquant
 *   y = sat_out(relu?(sat_i32(wrap_i32(acc * scale) + bias)) >> shift)
 * with 8-bit (unsigned) or 32-bit scales, without rounding (a rounding term is part of the bias). */
#ifndef NEUREKA_H
#define NEUREKA_H

#include <stdint.h>
#include <stdio.h>

#include "deeploy_npu.h"

/* Weights placed in the weight memory (--neureka-wmem): constants of its own section, loaded with
 * the program as the chip's MRAM/SRAM is preloaded; 32-byte weight words. The linker gives the
 * level its region; a job with NEUREKA_CONF_WMEM reads its weights there, through the weight port. */
#define DEEPLOY_WMEM_CONST __attribute__((section(".wmem_rodata"), aligned(32)))
/* Buffers in the weight memory (a rolled region's weights streamed into it, two iterations' worth):
 * written by DMA before the jobs that read them; not loaded with the program. */
#define DEEPLOY_WMEM __attribute__((section(".wmem_bss"), aligned(32)))
extern const uint8_t __deeploy_region_WMEM_start[] __attribute__((weak));
extern const uint8_t __deeploy_region_WMEM_end[] __attribute__((weak));

#define NEUREKA_ARRAY 6             /* 6x6 processing elements: output subtile of 6x6 pixels */
#define NEUREKA_KO_SUBTILE 32       /* output channels per subtile (3x3 depthwise: 28) */
#define NEUREKA_KI_1X1 32           /* input channels per weight row, 1x1 */
#define NEUREKA_KI_3X3 28           /* input channels per weight row, 3x3 modes */
#define NEUREKA_ROW_BYTES 32

/* Job registers (NPU_JOB_REGS = 24 words; word 8 onwards of the register file). */
enum {
    NEUREKA_REG_WEIGHTS_PTR = 0,
    NEUREKA_REG_INFEAT_PTR = 1,
    NEUREKA_REG_OUTFEAT_PTR = 2,
    NEUREKA_REG_SCALE_PTR = 3,
    NEUREKA_REG_SCALE_SHIFT_PTR = 4,
    NEUREKA_REG_SCALE_BIAS_PTR = 5,
    NEUREKA_REG_INFEAT_D0_STRIDE = 6,   /* bytes per input pixel (channels) */
    NEUREKA_REG_INFEAT_D1_STRIDE = 7,   /* bytes per input row */
    NEUREKA_REG_INFEAT_D2_STRIDE = 8,
    NEUREKA_REG_OUTFEAT_D0_STRIDE = 9,  /* bytes per output pixel */
    NEUREKA_REG_OUTFEAT_D1_STRIDE = 10, /* bytes per output row */
    NEUREKA_REG_OUTFEAT_D2_STRIDE = 11,
    NEUREKA_REG_WEIGHTS_D0_STRIDE = 12, /* bytes per weight row (32) */
    NEUREKA_REG_WEIGHTS_D1_STRIDE = 13, /* bytes per input-channel subtile */
    NEUREKA_REG_WEIGHTS_D2_STRIDE = 14, /* bytes per output channel */
    NEUREKA_REG_REMAINDER_KO_KI = 15,   /* [31:16] Ko, [15:0] Ki of the last subtile */
    NEUREKA_REG_REMAINDER_HO_WO = 16,
    NEUREKA_REG_REMAINDER_HI_WI = 17,
    NEUREKA_REG_NUMBER_KO_KI = 18,      /* [31:16] Ko, [15:0] Ki subtiles */
    NEUREKA_REG_NUMBER_HO_WO = 19,
    NEUREKA_REG_PADDING = 20,           /* [31:28] top, [27:24] right, [23:20] bottom, [19:16] left */
    NEUREKA_REG_WEIGHT_OFFSET = 21,
    NEUREKA_REG_FILTER_MASK = 22,
    NEUREKA_REG_CONF0 = 23
};

/* Config word bits. */
#define NEUREKA_CONF_WBITS(bits) ((uint32_t)((bits) - 1) & 7u)
#define NEUREKA_CONF_MODE_3X3 (0u << 5)
#define NEUREKA_CONF_MODE_DW (1u << 5)
#define NEUREKA_CONF_MODE_1X1 (2u << 5)
#define NEUREKA_CONF_MODE_MASK (3u << 5)
#define NEUREKA_CONF_NORMQUANT (1u << 4)
#define NEUREKA_CONF_WMEM (1u << 9)
#define NEUREKA_CONF_SCALE_32BIT (2u << 12)
#define NEUREKA_CONF_LAYER_OFFSET (1u << 15)
#define NEUREKA_CONF_SHIFT(s) (((uint32_t)(s) & 31u) << 16)
#define NEUREKA_CONF_OUT_32BIT (2u << 21)
#define NEUREKA_CONF_NO_RELU (1u << 23)
#define NEUREKA_CONF_BIAS (1u << 25)
#define NEUREKA_CONF_SIGNED_IN (1u << 26)

/* One weight of the blob: bit planes of (channel c, tap t) of the row block at ``rows``. */
static inline int32_t neureka_weight(const uint8_t *rows, uint32_t mode, uint32_t c, uint32_t t, uint32_t row_stride) {
    uint32_t u = 0;
    for (uint32_t b = 0; b < 8; b++) {
        uint32_t bit = mode == NEUREKA_CONF_MODE_1X1 ? b * NEUREKA_KI_1X1 + c : t * NEUREKA_KI_3X3 + c;
        const uint8_t *row = mode == NEUREKA_CONF_MODE_1X1 ? rows : rows + b * row_stride;
        u |= (uint32_t)((row[bit >> 3] >> (bit & 7)) & 1u) << b;
    }
    return (int32_t)u;
}

/* The weight source a job names must hold its weights: the weight memory's window with
 * NEUREKA_CONF_WMEM, anywhere else (L1, L2) without. A mismatch stops the program (exit 3). */
static void neureka_check_weight_source(uint32_t conf, const uint8_t *w) {
    const int in_wmem = w >= __deeploy_region_WMEM_start && w < __deeploy_region_WMEM_end;
    if (in_wmem == ((conf & NEUREKA_CONF_WMEM) != 0)) return;
    printf("NPU job: weights at %p %s the weight memory, but the job's weight-memory bit is %s\n", (const void *)w,
           in_wmem ? "in" : "outside", in_wmem ? "clear" : "set");
    deeploy_exit(3);
}

/* The functional model of the job in context ``id``. */
static void neureka_run_job(const uint32_t *r) {
    static int32_t acc[NEUREKA_ARRAY * NEUREKA_ARRAY];
    const uint32_t conf = r[NEUREKA_REG_CONF0], mode = conf & NEUREKA_CONF_MODE_MASK;
    const uint32_t dw = mode == NEUREKA_CONF_MODE_DW, k = mode == NEUREKA_CONF_MODE_1X1 ? 1 : 3;
    const uint32_t ko_sub = dw ? NEUREKA_KI_3X3 : NEUREKA_KO_SUBTILE;
    const uint32_t ki_sub = mode == NEUREKA_CONF_MODE_1X1 ? NEUREKA_KI_1X1 : NEUREKA_KI_3X3;
    const uint32_t n0 = r[NEUREKA_REG_NUMBER_KO_KI], r0 = r[NEUREKA_REG_REMAINDER_KO_KI];
    const uint32_t n1 = r[NEUREKA_REG_NUMBER_HO_WO], r1 = r[NEUREKA_REG_REMAINDER_HO_WO];
    const uint32_t Ko = ((n0 >> 16) - 1) * ko_sub + (r0 >> 16), Ki = ((n0 & 0xffff) - 1) * ki_sub + (r0 & 0xffff);
    const uint32_t Ho = ((n1 >> 16) - 1) * NEUREKA_ARRAY + (r1 >> 16);
    const uint32_t Wo = ((n1 & 0xffff) - 1) * NEUREKA_ARRAY + (r1 & 0xffff);
    const uint32_t pad = r[NEUREKA_REG_PADDING];
    const uint32_t pt = pad >> 28, pr = (pad >> 24) & 15, pb = (pad >> 20) & 15, pl = (pad >> 16) & 15;
    const uint32_t Hi = Ho + k - 1 - pt - pb, Wi = Wo + k - 1 - pl - pr;
    const uintptr_t in = r[NEUREKA_REG_INFEAT_PTR]; /* moved back by the padding (the engine's convention) */
    const uint32_t in_px = r[NEUREKA_REG_INFEAT_D0_STRIDE], in_row = r[NEUREKA_REG_INFEAT_D1_STRIDE];
    const uint32_t out_px = r[NEUREKA_REG_OUTFEAT_D0_STRIDE], out_row = r[NEUREKA_REG_OUTFEAT_D1_STRIDE];
    const uint8_t *w = (const uint8_t *)(uintptr_t)r[NEUREKA_REG_WEIGHTS_PTR];
    neureka_check_weight_source(conf, w);
    const uint32_t w_row = r[NEUREKA_REG_WEIGHTS_D0_STRIDE], w_ki = r[NEUREKA_REG_WEIGHTS_D1_STRIDE];
    const uint32_t w_ko = r[NEUREKA_REG_WEIGHTS_D2_STRIDE];
    const int32_t offset = (int32_t)r[NEUREKA_REG_WEIGHT_OFFSET];
    const uintptr_t scale = r[NEUREKA_REG_SCALE_PTR];   /* uint8 or int32 per channel (config word) */
    const int32_t *bias = (const int32_t *)(uintptr_t)r[NEUREKA_REG_SCALE_BIAS_PTR];
    const uint32_t shift = (conf >> 16) & 31, out32 = (conf & NEUREKA_CONF_OUT_32BIT) != 0;
    const uint32_t relu = !(conf & NEUREKA_CONF_NO_RELU), is_signed = (conf & NEUREKA_CONF_SIGNED_IN) != 0;
    uint8_t *out = (uint8_t *)(uintptr_t)r[NEUREKA_REG_OUTFEAT_PTR];
    const uint32_t n_out = Ho * Wo;

    for (uint32_t p0 = 0; p0 < n_out; p0 += NEUREKA_ARRAY * NEUREKA_ARRAY) {     /* spatial subtiles */
        const uint32_t np = n_out - p0 < NEUREKA_ARRAY * NEUREKA_ARRAY ? n_out - p0 : NEUREKA_ARRAY * NEUREKA_ARRAY;
        for (uint32_t ko = 0; ko < Ko; ko++) {
            for (uint32_t p = 0; p < np; p++) acc[p] = 0;
            const uint32_t c_first = dw ? ko : 0, c_count = dw ? 1 : Ki;
            for (uint32_t c = c_first; c < c_first + c_count; c++) {
                const uint8_t *rows = dw ? w + (c / ki_sub) * w_ki : w + ko * w_ko + (c / ki_sub) * w_ki;
                for (uint32_t t = 0; t < k * k; t++) {
                    const int32_t wt = (int32_t)((uint32_t)neureka_weight(rows, mode, c % ki_sub, t, w_row) + (uint32_t)offset);
                    const uint32_t dy = t / k, dx = t % k;
                    for (uint32_t p = 0; p < np; p++) {
                        const uint32_t i = (p0 + p) / Wo, j = (p0 + p) % Wo;
                        const uint32_t yy = i + dy, xx = j + dx;  /* in the padded frame */
                        if (yy < pt || yy >= pt + Hi || xx < pl || xx >= pl + Wi) continue;
                        const uint8_t *px = (const uint8_t *)(in + yy * in_row + xx * in_px);
                        const int32_t v = is_signed ? (int32_t)(int8_t)px[c] : (int32_t)px[c];
                        acc[p] = (int32_t)((uint32_t)acc[p] + (uint32_t)(v * wt));   /* wrapping */
                    }
                }
            }
            for (uint32_t p = 0; p < np; p++) {
                const uint32_t i = (p0 + p) / Wo, j = (p0 + p) % Wo;
                uint8_t *o = out + i * out_row + j * out_px;
                if (out32) {
                    ((int32_t *)o)[ko] = acc[p];
                    continue;
                }
                int32_t v = acc[p];
                if (conf & NEUREKA_CONF_NORMQUANT) {
                    const uint32_t m = (conf & NEUREKA_CONF_SCALE_32BIT) ? (uint32_t)((const int32_t *)scale)[ko]
                                                                         : (uint32_t)((const uint8_t *)scale)[ko];
                    v = (int32_t)((uint32_t)v * m);
                    if (conf & NEUREKA_CONF_BIAS) v = npu_sat32((int64_t)v + bias[ko]);
                    if (relu && v < 0) v = 0;
                    v >>= shift;
                }
                if (relu) o[ko] = (uint8_t)(v > 255 ? 255 : v);
                else ((int8_t *)o)[ko] = (int8_t)(v > 127 ? 127 : (v < -128 ? -128 : v));
            }
        }
    }
}

/* The job's modelled cycles (specs/neureka.md "Throughput", rough model; the same formula as
 * NeurekaParams.job_cycles in Deeploy/targets/siracusa_w_neureka/params.py): per output-channel
 * and spatial subtile, every input-channel subtile loads its activations (one 32-byte access per
 * input pixel + 6) and sets up the matrix-vector unit (6), then streams the weights (1 cycle per
 * output channel in 1x1, 8 in 3x3 modes); then normquant (30) and one store per output pixel
 * (x4 for 32-bit outputs). */
static uint32_t neureka_job_cycles(const uint32_t *r) {
    const uint32_t conf = r[NEUREKA_REG_CONF0], mode = conf & NEUREKA_CONF_MODE_MASK;
    const uint32_t n_ko = r[NEUREKA_REG_NUMBER_KO_KI] >> 16, n_ki = r[NEUREKA_REG_NUMBER_KO_KI] & 0xffff;
    const uint32_t rem_ko = r[NEUREKA_REG_REMAINDER_KO_KI] >> 16;
    const uint32_t spatial = (r[NEUREKA_REG_NUMBER_HO_WO] >> 16) * (r[NEUREKA_REG_NUMBER_HO_WO] & 0xffff);
    const uint32_t ko_sub = mode == NEUREKA_CONF_MODE_DW ? NEUREKA_KI_3X3 : NEUREKA_KO_SUBTILE;
    const uint32_t load = (mode == NEUREKA_CONF_MODE_1X1 ? 36 : 64) + 6, setup = 6;
    const uint32_t tail = 30 + NEUREKA_ARRAY * NEUREKA_ARRAY * ((conf & NEUREKA_CONF_OUT_32BIT) ? 4 : 1);
    uint32_t cycles = 0;
    for (uint32_t k = 0; k < n_ko; k++) {
        const uint32_t here = k + 1 < n_ko ? ko_sub : rem_ko;
        const uint32_t per = mode == NEUREKA_CONF_MODE_DW ? load + setup + here * 8
                             : n_ki * (load + setup + here * (mode == NEUREKA_CONF_MODE_1X1 ? 1 : 8));
        cycles += spatial * (per + tail);
    }
    return cycles;
}

/* The job's multiply-accumulates (for the utilisation in the profiles). */
static uint32_t neureka_job_macs(const uint32_t *r) {
    const uint32_t mode = r[NEUREKA_REG_CONF0] & NEUREKA_CONF_MODE_MASK, dw = mode == NEUREKA_CONF_MODE_DW;
    const uint32_t ko_sub = dw ? NEUREKA_KI_3X3 : NEUREKA_KO_SUBTILE;
    const uint32_t ki_sub = mode == NEUREKA_CONF_MODE_1X1 ? NEUREKA_KI_1X1 : NEUREKA_KI_3X3;
    const uint32_t n0 = r[NEUREKA_REG_NUMBER_KO_KI], r0 = r[NEUREKA_REG_REMAINDER_KO_KI];
    const uint32_t n1 = r[NEUREKA_REG_NUMBER_HO_WO], r1 = r[NEUREKA_REG_REMAINDER_HO_WO];
    const uint32_t Ko = ((n0 >> 16) - 1) * ko_sub + (r0 >> 16), Ki = ((n0 & 0xffff) - 1) * ki_sub + (r0 & 0xffff);
    const uint32_t Ho = ((n1 >> 16) - 1) * NEUREKA_ARRAY + (r1 >> 16);
    const uint32_t Wo = ((n1 & 0xffff) - 1) * NEUREKA_ARRAY + (r1 & 0xffff);
    const uint32_t taps = mode == NEUREKA_CONF_MODE_1X1 ? 1 : 9;
    return Ho * Wo * Ko * taps * (dw ? 1 : Ki);
}

#define NPU_ENGINE neureka      /* deeploy_npu_jobs.h defines neureka_trigger(id) */
#include "deeploy_npu_jobs.h"

#endif /* NEUREKA_H */
