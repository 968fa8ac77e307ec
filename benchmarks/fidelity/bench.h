/* The measured region of a calibration program (benchmarks/fidelity.py), built twice:
 *  - for the CV32E40P simulator (BENCH_RTL, toolchain/rtl/crt0.S + link.ld): BENCH_BEGIN/END read
 *    mcycle, minstret and mhpmcounter3..16; bench_done prints the differences, less those of an
 *    empty region, as "rtl <counter> <value>" lines on the print device;
 *  - for the QEMU cluster with one core (Siracusa runtime): BENCH_BEGIN/END are the layer 0
 *    markers the timing plugin delimits the region by; bench_done prints nothing.
 * bench_done(ok) returns main's exit code: 0 if the program's own check passed.
 * KERNEL: the measured function, out of line and 16-byte aligned so that its branch targets have
 * the same alignment in both builds. */
#ifndef BENCH_H
#define BENCH_H
#include <stdint.h>

#define KERNEL __attribute__((noinline, aligned(16)))

/* deterministic test data (a 32-bit LCG) */
static uint32_t bench_seed = 12345u;
static inline uint32_t bench_rand(void) { return bench_seed = bench_seed * 1664525u + 1013904223u; }
static inline int8_t bench_rand_i8(void) { return (int8_t)(bench_rand() >> 24); }
static inline float bench_rand_f(void) { return (float)(int32_t)(bench_rand() >> 20) * (1.0f / 2048.0f) - 1.0f; }

#ifdef BENCH_RTL
#define BENCH_COUNTERS 16 /* mcycle, minstret, mhpmcounter3..16 (events 2..15) */
static uint32_t bench_t0[BENCH_COUNTERS], bench_t1[BENCH_COUNTERS];
#define BENCH_CSR(dst, i, csr) __asm__ volatile("csrr %0, " #csr : "=r"(dst[i])::"memory")
#define BENCH_EVENTS(dst)                                                                                      \
  do {                                                                                                         \
    BENCH_CSR(dst, 2, 0xb03); BENCH_CSR(dst, 3, 0xb04); BENCH_CSR(dst, 4, 0xb05); BENCH_CSR(dst, 5, 0xb06);      \
    BENCH_CSR(dst, 6, 0xb07); BENCH_CSR(dst, 7, 0xb08); BENCH_CSR(dst, 8, 0xb09); BENCH_CSR(dst, 9, 0xb0a);      \
    BENCH_CSR(dst, 10, 0xb0b); BENCH_CSR(dst, 11, 0xb0c); BENCH_CSR(dst, 12, 0xb0d); BENCH_CSR(dst, 13, 0xb0e);  \
    BENCH_CSR(dst, 14, 0xb0f); BENCH_CSR(dst, 15, 0xb10);                                                     \
  } while (0)
#define BENCH_BEGIN()                                                                                          \
  do {                                                                                                         \
    BENCH_EVENTS(bench_t0);                                                                                    \
    BENCH_CSR(bench_t0, 1, 0xb02);                                                                             \
    BENCH_CSR(bench_t0, 0, 0xb00);                                                                             \
  } while (0)
#define BENCH_END()                                                                                            \
  do {                                                                                                         \
    BENCH_CSR(bench_t1, 0, 0xb00);                                                                             \
    BENCH_CSR(bench_t1, 1, 0xb02);                                                                             \
    BENCH_EVENTS(bench_t1);                                                                                    \
  } while (0)

static void bench_puts(const char *s) {
  while (*s) *(volatile uint32_t *)0x10000000u = (uint8_t)*s++;
}

static void bench_putu(uint32_t v) {
  char buf[12], *p = buf + sizeof buf;
  *--p = 0;
  do *--p = (char)('0' + v % 10); while (v /= 10);
  bench_puts(p);
}

static int bench_done(int ok) {
  static const char *const names[BENCH_COUNTERS] = {
      "cycles", "instret", "ld_stall", "jmp_stall", "imiss", "ld", "st", "jump",
      "branch", "branch_taken", "comp_instr", "pipe_stall", "apu_type", "apu_cont", "apu_dep", "apu_wb"};
  uint32_t d[BENCH_COUNTERS];
  for (int i = 0; i < BENCH_COUNTERS; i++) d[i] = bench_t1[i] - bench_t0[i];
  BENCH_BEGIN(); /* the empty region: what the counter reads themselves add */
  BENCH_END();
  for (int i = 0; i < BENCH_COUNTERS; i++) {
    bench_puts("rtl ");
    bench_puts(names[i]);
    bench_puts(" ");
    bench_putu(d[i] - (bench_t1[i] - bench_t0[i]));
    bench_puts("\n");
  }
  bench_puts(ok ? "rtl check pass\n" : "rtl check FAIL\n");
  return ok ? 0 : 1;
}
#else
#include "deeploy_runtime.h"
#define BENCH_BEGIN() DEEPLOY_MARK_LAYER(0)
#define BENCH_END() DEEPLOY_MARK_LAYER_END()
static int bench_done(int ok) { return ok ? 0 : 1; }
#endif

#endif
