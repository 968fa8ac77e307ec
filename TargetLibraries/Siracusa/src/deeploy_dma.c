/* DMA engines of the Siracusa target on the QEMU virtual platform (interface and
 * marker protocol: inc/deeploy_dma.h).
 *
 * Everything here runs inside an issue or wait window (runtime markers), so none of it is counted
 * as core work. A transfer is copied at issue time, row by row, each row by one asm block that
 * carries the ROW_BEGIN/ROW_END markers itself: the timing plugin attributes exactly the loads and
 * stores of those blocks to the transfer. Transfer counts are kept per core and engine; the
 * plugin counts the same way, so a wait's RETIRE markers name transfers deterministically. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "deeploy_dma.h"

#define DMA_STR_(x) #x
#define DMA_STR(x) DMA_STR_(x)

/* Memory regions, from the generated linker script; weak: a map without L3 leaves them 0. */
extern char __deeploy_region_L1_start[] __attribute__((weak)), __deeploy_region_L1_end[] __attribute__((weak));
extern char __deeploy_region_L2_start[] __attribute__((weak)), __deeploy_region_L2_end[] __attribute__((weak));
extern char __deeploy_region_L3_start[] __attribute__((weak)), __deeploy_region_L3_end[] __attribute__((weak));
/* an NPU's weight memory, on platforms that have one: the L3 engine fills it (streamed weights) */
extern char __deeploy_region_WMEM_start[] __attribute__((weak)), __deeploy_region_WMEM_end[] __attribute__((weak));

/* Per core and engine: transfers issued, transfers retired by waits (each core only touches
 * its own row). In .bss (L2), not L1: on silicon this state is the DMA's own counters, and L1 is
 * left to the planner (only accessed inside windows, so never counted). */
static uint32_t dma_issued[DEEPLOY_HARTS][DEEPLOY_DMA_ENGINES];
static uint32_t dma_retired[DEEPLOY_HARTS][DEEPLOY_DMA_ENGINES];

static void dma_fatal(const char *msg, unsigned a, unsigned b, unsigned c) {
  printf("deeploy runtime error: ");
  printf(msg, a, b, c);
  printf("\n");
  exit(3);
}

/* Copies one contiguous row (words when both pointers are word-aligned, then bytes) between the
 * ROW_BEGIN and ROW_END markers: the only accesses the plugin attributes to the transfer. */
static inline void dma_copy_row(uint8_t *dst, const uint8_t *src, uint32_t n) {
  uint32_t t, w;
  __asm__ volatile(
      "slti x0, x0, " DMA_STR(DEEPLOY_RT_DMA_ROW_BEGIN) "\n"
      "  or %[t], %[d], %[s]\n"
      "  andi %[t], %[t], 3\n"
      "  bnez %[t], 2f\n"
      "  srli %[w], %[n], 2\n"
      "  beqz %[w], 2f\n"
      "  andi %[n], %[n], 3\n"
      "1:\n"
      "  lw %[t], 0(%[s])\n"
      "  sw %[t], 0(%[d])\n"
      "  addi %[s], %[s], 4\n"
      "  addi %[d], %[d], 4\n"
      "  addi %[w], %[w], -1\n"
      "  bnez %[w], 1b\n"
      "2:\n"
      "  beqz %[n], 4f\n"
      "3:\n"
      "  lbu %[t], 0(%[s])\n"
      "  sb %[t], 0(%[d])\n"
      "  addi %[s], %[s], 1\n"
      "  addi %[d], %[d], 1\n"
      "  addi %[n], %[n], -1\n"
      "  bnez %[n], 3b\n"
      "4:\n"
      "slti x0, x0, " DMA_STR(DEEPLOY_RT_DMA_ROW_END) "\n"
      : [d] "+r"(dst), [s] "+r"(src), [n] "+r"(n), [t] "=&r"(t), [w] "=&r"(w)
      :
      : "memory");
}

static void dma_engine_marker(uint32_t engine) {
  switch (engine) {
  case DEEPLOY_DMA_CLUSTER:
    DEEPLOY_MARKER(DEEPLOY_RT_DMA_ENGINE(DEEPLOY_DMA_CLUSTER));
    break;
  case DEEPLOY_DMA_L3:
    DEEPLOY_MARKER(DEEPLOY_RT_DMA_ENGINE(DEEPLOY_DMA_L3));
    break;
  default:
    dma_fatal("unknown DMA engine %u (core %u; engines are 0..%u)", engine, (unsigned)deeploy_core_id(),
              DEEPLOY_DMA_ENGINES - 1);
  }
}

static int in_region(uintptr_t lo, uintptr_t hi, const char *start, const char *end) {
  return (uintptr_t)start < (uintptr_t)end && lo >= (uintptr_t)start && hi < (uintptr_t)end;
}

/* 1 = L1, 2 = L2, 3 = L3, 4 = the weight memory when [lo, hi] lies in one level, else 0 */
static unsigned level_of(uintptr_t lo, uintptr_t hi) {
  if (in_region(lo, hi, __deeploy_region_L1_start, __deeploy_region_L1_end)) return 1;
  if (in_region(lo, hi, __deeploy_region_L2_start, __deeploy_region_L2_end)) return 2;
  if (in_region(lo, hi, __deeploy_region_L3_start, __deeploy_region_L3_end)) return 3;
  if (in_region(lo, hi, __deeploy_region_WMEM_start, __deeploy_region_WMEM_end)) return 4;
  return 0;
}

static void dma_check_levels(uint32_t engine, uintptr_t dst, uintptr_t src, uint32_t dst_span, uint32_t src_span) {
  unsigned d = level_of(dst, dst + dst_span - 1), s = level_of(src, src + src_span - 1);
  int has_l3 = (uintptr_t)__deeploy_region_L3_start != (uintptr_t)__deeploy_region_L3_end;
  int ok = engine == DEEPLOY_DMA_CLUSTER ? (d == 1 && s == 2) || (d == 2 && s == 1)
           : d == 4                        ? s == (has_l3 ? 3 : 2)
           : has_l3                        ? (d == 3 && s == 2) || (d == 2 && s == 3)
                                           : d == 2 && s == 2;
  if (!ok)
    dma_fatal(engine == DEEPLOY_DMA_CLUSTER
                  ? "cluster DMA copies between L2 and L1: destination in level %u, source in level %u "
                    "(0 = outside one level), core %u"
                  : "L3 DMA copies between L3 and L2 (or into the weight memory, level 4): destination in "
                    "level %u, source in level %u "
                    "(0 = outside one level), core %u",
              d, s, (unsigned)deeploy_core_id());
}

deeploy_dma_t deeploy_dma_issue_(uint32_t engine, void *dst, const void *src, uint32_t row_bytes, uint32_t rows,
                                 uint32_t dst_stride, uint32_t src_stride, uint32_t planes, uint32_t dst_plane_stride,
                                 uint32_t src_plane_stride) {
  uint32_t me = deeploy_core_id();
  dma_engine_marker(engine);
#ifdef DEEPLOY_DM_CORE
  if (me != DEEPLOY_DM_CORE)
    dma_fatal("core %u programs the DMA, which only the data-mover core (%u) does (engine %u)", (unsigned)me,
              DEEPLOY_DM_CORE, engine);
#endif
  if (!row_bytes || !rows || !planes) return DEEPLOY_DMA_NONE;
  /* Merge contiguous dimensions: fewer rows and commands, as a real driver would program them. */
  if (planes > 1 && dst_stride == row_bytes && src_stride == row_bytes) { /* planes are contiguous rows */
    row_bytes *= rows;
    rows = 1;
  }
  if (rows == 1) { /* one row per plane: a 2-D transfer over the planes */
    rows = planes;
    dst_stride = dst_plane_stride;
    src_stride = src_plane_stride;
    planes = 1;
  }
  if (planes > 1 && dst_plane_stride == rows * dst_stride && src_plane_stride == rows * src_stride) {
    rows *= planes; /* evenly stacked planes: one 2-D transfer */
    planes = 1;
  }
  if (rows > 1 && dst_stride == row_bytes && src_stride == row_bytes) { /* contiguous rows: 1-D */
    row_bytes *= rows;
    rows = 1;
  }
  if (rows == 1) dst_stride = src_stride = row_bytes;
  if (planes == 1) dst_plane_stride = src_plane_stride = 0;
  dma_check_levels(engine, (uintptr_t)dst, (uintptr_t)src,
                   (planes - 1) * dst_plane_stride + (rows - 1) * dst_stride + row_bytes,
                   (planes - 1) * src_plane_stride + (rows - 1) * src_stride + row_bytes);
  for (uint32_t p = 0; p < planes; p++) {
    DEEPLOY_MARKER(DEEPLOY_RT_DMA_CMD); /* one 1-D or 2-D command per plane */
    uint8_t *d = (uint8_t *)dst + p * dst_plane_stride;
    const uint8_t *s = (const uint8_t *)src + p * src_plane_stride;
    for (uint32_t r = 0; r < rows; r++, d += dst_stride, s += src_stride) {
#ifdef DEEPLOY_DMA_1D
      if (r) DEEPLOY_MARKER(DEEPLOY_RT_DMA_CMD); /* a DMA with 1-D commands only: one per row */
#endif
      dma_copy_row(d, s, row_bytes);
    }
  }
  return ++dma_issued[me][engine];
}

void deeploy_dma_wait_(uint32_t engine, deeploy_dma_t handle) {
  uint32_t me = deeploy_core_id();
  dma_engine_marker(engine);
  uint32_t issued = dma_issued[me][engine];
  if (handle == DEEPLOY_DMA_ALL)
    handle = issued;
  else if (handle > issued)
    dma_fatal("core %u waits for DMA transfer %u of engine %u, but has issued fewer (transfers belong to the "
              "core that issued them)",
              (unsigned)me, (unsigned)handle, (unsigned)engine);
  while (dma_retired[me][engine] < handle) {
    dma_retired[me][engine]++;
    DEEPLOY_MARKER(DEEPLOY_RT_DMA_RETIRE);
  }
}
