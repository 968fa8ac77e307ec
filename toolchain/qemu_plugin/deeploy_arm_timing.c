/* Deeploy instruction-class counter for qemu-system-arm on Cortex-M (Thumb-2), TCG plugin API
 * version 1 (QEMU 7.2); one vCPU.
 *
 * Counts exactly the executed instructions by the classes the CortexM cycle model weighs
 * (Deeploy/targets/cortexm/cycles.py); at every marker instruction `pld [pc, #ID]` (encoding
 * 0xf89f 0xfIII: a preload hint, no effect; TargetLibraries/CortexM/inc/deeploy_cortexm.h) it
 * appends a record with the counters to the output file. Markers are never counted.
 *
 *   qemu-system-arm ... -plugin libdeeploy_arm_timing.so,out=records.txt
 *
 * Output (text):
 *   # deeploy-arm-records 1
 *   # columns seq marker insns CLASSES...
 *   <seq> <marker> <insns> <class counts>
 * marker = the id as 0x%03x, or "end" at exit; counters are cumulative since reset, up to (not
 * including) the marker. CLASSES: taken (conditional branches taken: the next block executed is
 * not the fall-through; B<c>, CBZ, CBNZ), branch (unconditional B, BL, BX, BLX, TBB/TBH, writes
 * of pc by POP, LDM, LDR, MOV or ADD), ldst (single loads and stores, LDR..STRB, VLDR, VSTR),
 * pipelined (those of them directly after another in the same block), multi (LDM, STM, PUSH,
 * POP, LDRD, STRD, VLDM, VSTM, VPUSH, VPOP), words (the words those move), mac (multiplies and
 * multiply-accumulates, SMLAD and the other DSP multiplies included), div (SDIV, UDIV), fpu
 * (VFP data processing), fdivsqrt (VDIV, VSQRT), mve (Helium vector instructions, M55), lob
 * (low-overhead loop instructions DLS, WLS, LE, and VCTP of the same encoding group; M55). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

DEEPLOY_PLUGIN_EXPORT int qemu_plugin_version = DEEPLOY_QEMU_PLUGIN_API_VERSION;

enum { C_TAKEN, C_BRANCH, C_LDST, C_PIPELINED, C_MULTI, C_WORDS, C_MAC, C_DIV, C_FPU, C_FDIVSQRT, C_MVE, C_LOB,
       N_CLASSES };
static const char *const class_names[N_CLASSES] = {"taken", "branch", "ldst", "pipelined", "multi", "words",
                                                   "mac",   "div",    "fpu",  "fdivsqrt",  "mve",   "lob"};

typedef struct {
  uint32_t id;             /* marker id (segments after a marker) */
  uint32_t n;              /* instructions */
  uint32_t cls[N_CLASSES]; /* static class counts (taken stays 0) */
} seg_t;

typedef struct {
  uint64_t fallthrough; /* pc after the block's final conditional branch, 0: none */
  uint64_t vaddr;
  seg_t first;          /* the instructions before the block's first marker */
} tb_info_t;

static struct {
  uint64_t insns, cls[N_CLASSES], pending, seq;
} cpu;
static FILE *out;

static void write_record(int marker) {
  if (!out) return;
  if (marker < 0) fprintf(out, "%" PRIu64 " end %" PRIu64, cpu.seq, cpu.insns);
  else fprintf(out, "%" PRIu64 " 0x%03x %" PRIu64, cpu.seq, marker, cpu.insns);
  for (int c = 0; c < N_CLASSES; c++) fprintf(out, " %" PRIu64, cpu.cls[c]);
  fputc('\n', out);
  cpu.seq++;
}

static void add_seg(const seg_t *g) {
  cpu.insns += g->n;
  for (int c = 0; c < N_CLASSES; c++) cpu.cls[c] += g->cls[c];
}

static void on_block(unsigned vcpu, void *udata) {
  (void)vcpu;
  const tb_info_t *t = udata;
  if (cpu.pending && cpu.pending != t->vaddr) cpu.cls[C_TAKEN]++;
  cpu.pending = t->fallthrough;
  add_seg(&t->first);
}

static void on_marker(unsigned vcpu, void *udata) {
  (void)vcpu;
  const seg_t *g = udata;
  write_record((int)g->id);
  add_seg(g);
}

/* ---- instruction decoding (Thumb-2, ARMv7E-M and ARMv8.1-M) --------------------------------- */
typedef struct {
  int cls;      /* C_* of the instruction, -1: none */
  int words;    /* words moved by a multiple load/store */
  int branch;   /* 1: conditional branch (its fall-through is recorded), 2: unconditional */
} insn_t;

static int popcount16(unsigned v) { return __builtin_popcount(v & 0xffffu); }

static insn_t decode16(unsigned h) {
  insn_t d = {-1, 0, 0};
  if ((h >> 12) == 0x5 || (h >> 12) == 0x6 || (h >> 12) == 0x7 || (h >> 12) == 0x8 || (h >> 12) == 0x9 ||
      (h >> 11) == 0x9)
    d.cls = C_LDST;                                                     /* LDR/STR forms, LDR literal */
  else if ((h & 0xfe00) == 0xb400 || (h & 0xfe00) == 0xbc00) {          /* PUSH, POP */
    d.cls = C_MULTI;
    d.words = popcount16(h & 0x1ff);
    if ((h & 0xff00) == 0xbd00) d.branch = 2;                           /* POP {.., pc} */
  } else if ((h >> 11) == 0x18 || (h >> 11) == 0x19) {                  /* STM, LDM */
    d.cls = C_MULTI;
    d.words = popcount16(h & 0xff);
  } else if ((h >> 12) == 0xd && ((h >> 9) & 7) != 7) d.branch = 1;     /* B<c> (not UDF, SVC) */
  else if ((h >> 11) == 0x1c) d.branch = 2;                             /* B */
  else if ((h & 0xf500) == 0xb100) d.branch = 1;                        /* CBZ, CBNZ */
  else if ((h & 0xff00) == 0x4700) d.branch = 2;                        /* BX, BLX */
  else if (((h & 0xff00) == 0x4400 || (h & 0xff00) == 0x4600) && ((h & 7) | ((h >> 4) & 8)) == 15)
    d.branch = 2;                                                       /* ADD pc, MOV pc */
  else if ((h & 0xffc0) == 0x4340) d.cls = C_MAC;                       /* MULS */
  return d;
}

static insn_t decode32(unsigned h1, unsigned h2) {
  insn_t d = {-1, 0, 0};
  if ((h1 & 0xfe40) == 0xe800) {                                        /* LDM, STM, PUSH.W, POP.W */
    d.cls = C_MULTI;
    d.words = popcount16(h2);
    if ((h1 & 0x0010) && (h2 & 0x8000)) d.branch = 2;
  } else if ((h1 & 0xfe40) == 0xe840) {
    if ((h1 & 0xfff0) == 0xe8d0 && (h2 & 0xffe0) == 0xf000) d.branch = 2; /* TBB, TBH */
    else if (h1 & 0x0120) { d.cls = C_MULTI; d.words = 2; }           /* LDRD, STRD (P or W) */
    else d.cls = C_LDST;                                                /* LDREX, STREX */
  } else if ((h1 & 0xfe00) == 0xf800) {                                 /* single loads and stores */
    d.cls = C_LDST;
    if (((h1 & 0xfff0) == 0xf850 || (h1 & 0xfff0) == 0xf8d0 || (h1 & 0xff7f) == 0xf85f) && (h2 & 0xf000) == 0xf000)
      d.branch = 2;                                                     /* LDR pc */
  } else if ((h1 & 0xf800) == 0xf000 && (h2 & 0x8000)) {                /* branches, misc control */
    if ((h2 & 0xd001) == 0xc001 && ((h1 & 0xffc0) == 0xf000 || (h1 & 0xffc0) == 0xf040 || (h1 & 0xffdf) == 0xf00f))
      d.cls = C_LOB;                                                    /* LE, WLS, DLS, VCTP */
    else if ((h2 & 0x5000) == 0 && ((h1 >> 7) & 7) != 7) d.branch = 1;  /* B<c>.W */
    else if (h2 & 0x5000) d.branch = 2;                                 /* B.W, BL, BLX */
  } else if ((h1 & 0xff80) == 0xfb00 || (h1 & 0xff80) == 0xfb80) {     /* multiplies, divides */
    d.cls = ((h1 & 0xffd0) == 0xfb90 && (h2 & 0x00f0) == 0x00f0) ? C_DIV : C_MAC;
  } else if ((h1 & 0xec00) == 0xec00) {                                 /* coprocessor space: VFP, MVE */
    int vfp = (h2 & 0x0e00) == 0x0a00;
    if ((h1 & 0xef00) == 0xef00 || !vfp) d.cls = C_MVE;
    else if ((h1 & 0xfe00) == 0xec00 || (h1 & 0xff00) == 0xed00) {
      if ((h1 & 0xffe0) == 0xec40) d.cls = -1;                          /* VMOV two core registers */
      else if ((h1 & 0xff20) == 0xed00) d.cls = C_LDST;                 /* VLDR, VSTR */
      else { d.cls = C_MULTI; d.words = (int)(h2 & 0xff); }             /* VLDM, VSTM, VPUSH, VPOP */
    } else if ((h1 & 0xff00) == 0xee00 && !(h2 & 0x0010)) {             /* VFP data processing */
      int div = (h1 & 0xffb0) == 0xee80 && (h2 & 0x0e50) == 0x0a00;
      int sqrt = (h1 & 0xffbf) == 0xeeb1 && (h2 & 0x0ed0) == 0x0ac0;
      d.cls = (div || sqrt) ? C_FDIVSQRT : C_FPU;
    }
  }
  return d;
}

/* The id of a marker `pld [pc, #ID]`, else -1. */
static int marker_id(unsigned h1, unsigned h2, size_t size) {
  if (size != 4 || h1 != 0xf89f || (h2 & 0xf000) != 0xf000) return -1;
  return (int)(h2 & 0xfff);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  tb_info_t *t = calloc(1, sizeof *t); /* lives as long as the translation (never freed) */
  seg_t *seg = &t->first;
  int prev_ldst = 0;
  t->vaddr = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    size_t size = qemu_plugin_insn_size(insn);
    const uint8_t *b = qemu_plugin_insn_data(insn);
    unsigned h1 = b[0] | (unsigned)b[1] << 8, h2 = size == 4 ? (b[2] | (unsigned)b[3] << 8) : 0;
    int m = marker_id(h1, h2, size);
    if (m >= 0) {
      seg = calloc(1, sizeof *seg);
      seg->id = (uint32_t)m;
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS, seg);
      continue;
    }
    insn_t d = size == 4 ? decode32(h1, h2) : decode16(h1);
    seg->n++;
    if (d.cls >= 0) seg->cls[d.cls]++;
    if (d.cls == C_LDST && prev_ldst) seg->cls[C_PIPELINED]++;
    seg->cls[C_WORDS] += (uint32_t)d.words;
    if (d.branch == 2) seg->cls[C_BRANCH]++;
    prev_ldst = d.cls == C_LDST;
    t->fallthrough = d.branch == 1 ? qemu_plugin_insn_vaddr(insn) + size : 0;
  }
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void on_atexit(qemu_plugin_id_t id, void *udata) {
  (void)id;
  (void)udata;
  write_record(-1);
  fclose(out);
  out = NULL;
}

DEEPLOY_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                              char **argv) {
  (void)info;
  const char *path = NULL;
  for (int i = 0; i < argc; i++) {
    if (strncmp(argv[i], "out=", 4)) {
      fprintf(stderr, "deeploy_arm_timing plugin: unknown argument (expected out=FILE): %s\n", argv[i]);
      return -1;
    }
    path = argv[i] + 4;
  }
  out = path && *path ? fopen(path, "w") : NULL;
  if (!out) {
    fprintf(stderr, "deeploy_arm_timing plugin: cannot open the output file (out=FILE)\n");
    return -1;
  }
  setvbuf(out, NULL, _IOFBF, 1 << 16);
  fprintf(out, "# deeploy-arm-records 1\n# columns seq marker insns");
  for (int c = 0; c < N_CLASSES; c++) fprintf(out, " %s", class_names[c]);
  fputc('\n', out);
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
