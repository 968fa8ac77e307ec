/* GAP9's NE16: driver API and functional model (specs/gap9.md §3).
 *
 * Programmed as the hardware is (the queue, markers and waits every NPU shares: deeploy_npu.h):
 * acquire a job slot, write the 24 job registers, trigger, wait. The virtual platform has no NE16
 * device: triggering runs the functional model of the job on the triggering hart between the NPU
 * job markers (not core work) and passes its modelled cycles (ne16_job_cycles, the same formula
 * as Ne16Params.job_cycles in Deeploy/targets/gap9_w_ne16/params.py) to the cycle model. The model
 * is bit-exact with the engine's arithmetic: uint8 activations (NE16 has no signed-input mode),
 * weights decoded from the offline layout (per output channel, 16-channel groups, bit planes,
 * taps, a 16-bit mask each; layer-wise weight offset), 32-bit wrapping accumulators, normquant
 *   y = sat_out(relu?(sat_i32(wrap_i32(acc * scale) + bias)) >> shift)
 * with 8-bit (unsigned) or 32-bit scales, without rounding (a rounding term is part of the bias).
 * NE16 is a HWPE on the cluster's TCDM: a job whose weights, inputs or outputs are not in L1 stops
 * the program (exit 3). */
#ifndef NE16_H
#define NE16_H

#include <stdint.h>
#include <stdio.h>

#include "deeploy_npu.h"

extern const uint8_t __deeploy_region_L1_start[] __attribute__((weak));
extern const uint8_t __deeploy_region_L1_end[] __attribute__((weak));

#define NE16_ARRAY 3            /* output subtile 3x3 pixels */
#define NE16_KO_SUBTILE 32      /* output channels per subtile (TP_OUT) */
#define NE16_KI_SUBTILE 16      /* input channels per weight group (TP_IN; a depthwise subtile's channels) */
#define NE16_MASK_BYTES 2       /* one bit plane of one tap over 16 channels */
#define NE16_WEIGHT_BITS 8

/* Job registers (NPU_JOB_REGS words, spec §3: pointers, d0..d2 strides, subtiles, padding, offset, mask, CONF0). */
enum {
    NE16_REG_WEIGHTS_PTR = 0,
    NE16_REG_INFEAT_PTR = 1,
    NE16_REG_OUTFEAT_PTR = 2,
    NE16_REG_SCALE_PTR = 3,
    NE16_REG_SCALE_SHIFT_PTR = 4,
    NE16_REG_SCALE_BIAS_PTR = 5,
    NE16_REG_INFEAT_D0_STRIDE = 6,   /* bytes per input pixel (channels) */
    NE16_REG_INFEAT_D1_STRIDE = 7,   /* bytes per input row */
    NE16_REG_INFEAT_D2_STRIDE = 8,
    NE16_REG_OUTFEAT_D0_STRIDE = 9,  /* bytes per output pixel */
    NE16_REG_OUTFEAT_D1_STRIDE = 10, /* bytes per output row */
    NE16_REG_OUTFEAT_D2_STRIDE = 11,
    NE16_REG_WEIGHTS_D0_STRIDE = 12, /* bytes per mask (one bit plane of one tap: 2) */
    NE16_REG_WEIGHTS_D1_STRIDE = 13, /* bytes per 16-channel group (bits x taps x 2) */
    NE16_REG_WEIGHTS_D2_STRIDE = 14, /* bytes per output channel (0 depthwise) */
    NE16_REG_REMAINDER_KO_KI = 15,   /* [31:16] Ko, [15:0] Ki of the last subtile */
    NE16_REG_REMAINDER_HO_WO = 16,
    NE16_REG_REMAINDER_HI_WI = 17,
    NE16_REG_NUMBER_KO_KI = 18,      /* [31:16] Ko, [15:0] Ki subtiles */
    NE16_REG_NUMBER_HO_WO = 19,
    NE16_REG_PADDING = 20,           /* [31:28] top, [27:24] right, [23:20] bottom, [19:16] left, [7:0] value */
    NE16_REG_WEIGHT_OFFSET = 21,
    NE16_REG_FILTER_MASK = 22,
    NE16_REG_CONF0 = 23
};

/* CONF0 bits (spec §3). */
#define NE16_CONF_MODE_3X3 (0u << 5)
#define NE16_CONF_MODE_DW (1u << 5)
#define NE16_CONF_MODE_1X1 (2u << 5)
#define NE16_CONF_MODE_MASK (3u << 5)
#define NE16_CONF_NORMQUANT (1u << 4)
#define NE16_CONF_NORM_32BIT (2u << 12)
#define NE16_CONF_LAYER_OFFSET (1u << 15)
#define NE16_CONF_SHIFT(s) (((uint32_t)(s) & 31u) << 16)
#define NE16_CONF_OUT_32BIT (2u << 21)
#define NE16_CONF_NO_RELU (1u << 23)
#define NE16_CONF_BIAS (1u << 25)

static inline uint32_t ne16_ceil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }

/* One stored weight of a 16-channel group: channel c, tap t, its bit planes LSB first. */
static inline uint32_t ne16_weight(const uint8_t *group, uint32_t c, uint32_t t, uint32_t taps, uint32_t mask_bytes) {
    uint32_t u = 0;
    for (uint32_t b = 0; b < NE16_WEIGHT_BITS; b++) {
        const uint8_t *mask = group + (b * taps + t) * mask_bytes;
        u |= (uint32_t)((mask[c >> 3] >> (c & 7)) & 1u) << b;
    }
    return u;
}

/* NE16 reads and writes the TCDM only: a job naming memory elsewhere stops the program (exit 3). */
static void ne16_check_tcdm(const char *what, uintptr_t p) {
    if (p >= (uintptr_t)__deeploy_region_L1_start && p < (uintptr_t)__deeploy_region_L1_end) return;
    printf("NE16 job: its %s at %p are not in the TCDM (L1): tile the network (--l1)\n", what, (const void *)p);
    deeploy_exit(3);
}

/* The job's output subtiles' geometry from its registers. */
typedef struct {
    uint32_t mode, dw, k, Ko, Ki, Ho, Wo;
} ne16_geometry_t;

static ne16_geometry_t ne16_geometry(const uint32_t *r) {
    ne16_geometry_t g;
    g.mode = r[NE16_REG_CONF0] & NE16_CONF_MODE_MASK;
    g.dw = g.mode == NE16_CONF_MODE_DW;
    g.k = g.mode == NE16_CONF_MODE_1X1 ? 1 : 3;
    const uint32_t ko_sub = g.dw ? NE16_KI_SUBTILE : NE16_KO_SUBTILE;
    const uint32_t n0 = r[NE16_REG_NUMBER_KO_KI], r0 = r[NE16_REG_REMAINDER_KO_KI];
    const uint32_t n1 = r[NE16_REG_NUMBER_HO_WO], r1 = r[NE16_REG_REMAINDER_HO_WO];
    g.Ko = ((n0 >> 16) - 1) * ko_sub + (r0 >> 16);
    g.Ki = ((n0 & 0xffff) - 1) * NE16_KI_SUBTILE + (r0 & 0xffff);
    g.Ho = ((n1 >> 16) - 1) * NE16_ARRAY + (r1 >> 16);
    g.Wo = ((n1 & 0xffff) - 1) * NE16_ARRAY + (r1 & 0xffff);
    return g;
}

/* The functional model of one job. */
static void ne16_run_job(const uint32_t *r) {
    static int32_t acc[NE16_ARRAY * NE16_ARRAY];
    const uint32_t conf = r[NE16_REG_CONF0];
    const ne16_geometry_t g = ne16_geometry(r);
    const uint32_t pad = r[NE16_REG_PADDING];
    const uint32_t pt = pad >> 28, pr = (pad >> 24) & 15, pb = (pad >> 20) & 15, pl = (pad >> 16) & 15;
    const int32_t pad_value = (int32_t)(pad & 0xff);   /* what a padded pixel reads */
    const uint32_t Hi = g.Ho + g.k - 1 - pt - pb, Wi = g.Wo + g.k - 1 - pl - pr, taps = g.k * g.k;
    const uintptr_t in = r[NE16_REG_INFEAT_PTR]; /* moved back by the padding (the engine's convention) */
    const uint32_t in_px = r[NE16_REG_INFEAT_D0_STRIDE], in_row = r[NE16_REG_INFEAT_D1_STRIDE];
    const uint32_t out_px = r[NE16_REG_OUTFEAT_D0_STRIDE], out_row = r[NE16_REG_OUTFEAT_D1_STRIDE];
    const uint8_t *w = (const uint8_t *)(uintptr_t)r[NE16_REG_WEIGHTS_PTR];
    const uint32_t w_mask = r[NE16_REG_WEIGHTS_D0_STRIDE], w_group = r[NE16_REG_WEIGHTS_D1_STRIDE];
    const uint32_t w_ko = r[NE16_REG_WEIGHTS_D2_STRIDE];
    const int32_t offset = (int32_t)r[NE16_REG_WEIGHT_OFFSET];
    const uintptr_t scale = r[NE16_REG_SCALE_PTR];   /* uint8 or int32 per channel (CONF0 norm mode) */
    const int32_t *bias = (const int32_t *)(uintptr_t)r[NE16_REG_SCALE_BIAS_PTR];
    const uint32_t shift = (conf >> 16) & 31, out32 = (conf & NE16_CONF_OUT_32BIT) != 0;
    const uint32_t relu = !(conf & NE16_CONF_NO_RELU);
    uint8_t *out = (uint8_t *)(uintptr_t)r[NE16_REG_OUTFEAT_PTR];
    ne16_check_tcdm("weights", (uintptr_t)w);
    ne16_check_tcdm("inputs", in + pt * in_row + pl * in_px);
    ne16_check_tcdm("outputs", (uintptr_t)out);

    for (uint32_t i0 = 0; i0 < g.Ho; i0 += NE16_ARRAY) {           /* spatial subtiles of 3x3 pixels */
        for (uint32_t j0 = 0; j0 < g.Wo; j0 += NE16_ARRAY) {
            const uint32_t hs = g.Ho - i0 < NE16_ARRAY ? g.Ho - i0 : NE16_ARRAY;
            const uint32_t ws = g.Wo - j0 < NE16_ARRAY ? g.Wo - j0 : NE16_ARRAY;
            for (uint32_t ko = 0; ko < g.Ko; ko++) {
                for (uint32_t p = 0; p < hs * ws; p++) acc[p] = 0;
                const uint32_t c_first = g.dw ? ko : 0, c_count = g.dw ? 1 : g.Ki;
                for (uint32_t c = c_first; c < c_first + c_count; c++) {
                    const uint8_t *group = w + (g.dw ? 0 : ko * w_ko) + (c / NE16_KI_SUBTILE) * w_group;
                    for (uint32_t t = 0; t < taps; t++) {
                        const int32_t wt = (int32_t)(ne16_weight(group, c % NE16_KI_SUBTILE, t, taps, w_mask) + (uint32_t)offset);
                        const uint32_t dy = t / g.k, dx = t % g.k;
                        for (uint32_t p = 0; p < hs * ws; p++) {
                            const uint32_t yy = i0 + p / ws + dy, xx = j0 + p % ws + dx;  /* in the padded frame */
                            const int32_t v = (yy < pt || yy >= pt + Hi || xx < pl || xx >= pl + Wi)
                                                  ? pad_value : ((const uint8_t *)(in + yy * in_row + xx * in_px))[c];
                            acc[p] = (int32_t)((uint32_t)acc[p] + (uint32_t)(v * wt));   /* wrapping */
                        }
                    }
                }
                for (uint32_t p = 0; p < hs * ws; p++) {
                    uint8_t *o = out + (i0 + p / ws) * out_row + (j0 + p % ws) * out_px;
                    if (out32) {
                        ((int32_t *)o)[ko] = acc[p];
                        continue;
                    }
                    int32_t v = acc[p];
                    if (conf & NE16_CONF_NORMQUANT) {
                        const uint32_t m = (conf & NE16_CONF_NORM_32BIT) ? (uint32_t)((const int32_t *)scale)[ko]
                                                                        : (uint32_t)((const uint8_t *)scale)[ko];
                        v = (int32_t)((uint32_t)v * m);
                        if (conf & NE16_CONF_BIAS) v = npu_sat32((int64_t)v + bias[ko]);
                        if (relu && v < 0) v = 0;
                        v >>= shift;
                    }
                    if (relu) o[ko] = (uint8_t)(v > 255 ? 255 : v);
                    else ((int8_t *)o)[ko] = (int8_t)(v > 127 ? 127 : (v < -128 ? -128 : v));
                }
            }
        }
    }
}

/* The job's modelled cycles (Ne16Params.job_cycles, specs/gap9.md §3 GVSoC constants): per
 * spatial and output-channel subtile, every input subtile loads (19 in 1x1, 31 in 3x3 modes) and
 * multiplies (17 + per output channel 1 cycle in 1x1, 8 in 3x3 modes; depthwise one subtile of its
 * 16 channels), then 4 outputs are quantised per cycle, one 32-byte word stored per output pixel,
 * and 6 cycles of FIFO/control. */
static uint32_t ne16_job_cycles(const uint32_t *r) {
    const ne16_geometry_t g = ne16_geometry(r);
    const uint32_t out_bytes = (r[NE16_REG_CONF0] & NE16_CONF_OUT_32BIT) ? 4 : 1;
    const uint32_t spatial = ne16_ceil(g.Ho, NE16_ARRAY) * ne16_ceil(g.Wo, NE16_ARRAY);
    const uint32_t load = g.mode == NE16_CONF_MODE_1X1 ? 19 : 31;
    const uint32_t per_channel = g.mode == NE16_CONF_MODE_1X1 ? 1 : NE16_WEIGHT_BITS;
    const uint32_t ko_sub = g.dw ? NE16_KI_SUBTILE : NE16_KO_SUBTILE;
    const uint32_t ki_subs = g.dw ? 1 : ne16_ceil(g.Ki, NE16_KI_SUBTILE);
    uint32_t cycles = 0;
    for (uint32_t k0 = 0; k0 < g.Ko; k0 += ko_sub) {
        const uint32_t here = g.Ko - k0 < ko_sub ? g.Ko - k0 : ko_sub;
        const uint32_t body = ki_subs * (load + 17 + here * per_channel);
        const uint32_t tail = ne16_ceil(NE16_ARRAY * NE16_ARRAY * here, 4) + NE16_ARRAY * NE16_ARRAY * ne16_ceil(here * out_bytes, 32);
        cycles += spatial * (body + tail + 6);
    }
    return cycles;
}

/* The job's multiply-accumulates (for the utilisation in the profiles). */
static uint32_t ne16_job_macs(const uint32_t *r) {
    const ne16_geometry_t g = ne16_geometry(r);
    return g.Ho * g.Wo * g.Ko * g.k * g.k * (g.dw ? 1 : g.Ki);
}

#define NPU_ENGINE ne16      /* deeploy_npu_jobs.h defines ne16_trigger(id) */
#include "deeploy_npu_jobs.h"

#endif /* NE16_H */
