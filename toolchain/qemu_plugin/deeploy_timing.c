/* Deeploy timing plugin for qemu-system-riscv32 (TCG plugin API version 1, QEMU 7.2).
 *
 * Counts exactly, per hart (vCPU): executed instructions and data memory accesses (loads and
 * stores separately) per address region; at every marker instruction `slti x0, x0, ID` it
 * appends a record with the hart's counters to the output file. Counting stops after a runtime
 * marker with an even id in 0x10-0x3f (a wait region opens) and resumes after an odd one (see
 * TargetLibraries/PULPOpen/inc/deeploy_runtime.h); marker instructions are never counted.
 *
 *   qemu-system-riscv32 ... -plugin libdeeploy_timing.so,out=records.txt,region=L2:0x80000000:0x200000,...
 *
 * Arguments: out=FILE (required), region=NAME:BASE:SIZE (repeatable, up to 8, in column order;
 * an access goes to the first region containing its address, else to "other").
 *
 * Output (text, one record per line, deterministic under -icount):
 *   # deeploy-vp-records 1
 *   # regions L2:0x80000000:0x200000 L1:0x90000000:0x40000 ...
 *   # columns hart seq marker insns L2_ld L2_st L1_ld L1_st ... other_ld other_st
 *   <hart> <seq> <marker> <insns> <ld> <st> ...
 * hart = vCPU index (= mhartid on virt); seq = the record's index among that hart's records;
 * marker = the id as 0x%03x, or "end" for the final record of every hart that ran (written at
 * exit); counters are cumulative since reset, excluding wait regions, counted up to (not
 * including) the marker.
 *
 * How counting works: at translation each block is cut at its marker instructions. The
 * instructions before the first marker are added by a block-entry callback, those after each
 * marker by that marker's callback (after it has written its record), each only if the hart is
 * not in a wait region at that point. Blocks are only left early by traps, wfi and MMIO
 * re-translation under -icount, which the runtime confines to wait regions. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qemu_plugin_api.h"

DEEPLOY_PLUGIN_EXPORT int qemu_plugin_version = DEEPLOY_QEMU_PLUGIN_API_VERSION;

#define MAX_HARTS 64
#define MAX_REGIONS 8
#define MARKER_MASK 0x000fffffu  /* rd, funct3, rs1, opcode of `slti x0, x0, imm` */
#define MARKER_MATCH 0x00002013u /* opcode OP-IMM (0x13), funct3 SLTI (2), rd = rs1 = x0 */
#define RT_FIRST 0x10
#define RT_LAST 0x3f

typedef struct {
  uint64_t insns;
  uint64_t acc[MAX_REGIONS + 1][2]; /* [region or other][0 = load, 1 = store] */
  uint64_t seq;
  int excluded;
  int ran;
} __attribute__((aligned(64))) hart_t;

typedef struct {
  char name[32];
  uint64_t base, size;
} region_t;

static hart_t harts[MAX_HARTS];
static region_t regions[MAX_REGIONS];
static int n_regions;
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static inline hart_t *hart(unsigned vcpu) { return &harts[vcpu < MAX_HARTS ? vcpu : MAX_HARTS - 1]; }

static void write_record(unsigned vcpu, hart_t *h, int marker) {
  char line[64 + 2 * 21 * (MAX_REGIONS + 2)];
  int n = marker >= 0 ? snprintf(line, sizeof line, "%u %" PRIu64 " 0x%03x %" PRIu64, vcpu, h->seq, marker, h->insns)
                      : snprintf(line, sizeof line, "%u %" PRIu64 " end %" PRIu64, vcpu, h->seq, h->insns);
  for (int r = 0; r <= n_regions; r++)
    n += snprintf(line + n, sizeof line - n, " %" PRIu64 " %" PRIu64, h->acc[r][0], h->acc[r][1]);
  line[n++] = '\n';
  h->seq++;
  pthread_mutex_lock(&out_lock);
  fwrite(line, 1, (size_t)n, out);
  pthread_mutex_unlock(&out_lock);
}

/* udata: number of instructions of the block's first segment */
static void on_block(unsigned vcpu, void *udata) {
  hart_t *h = hart(vcpu);
  h->ran = 1;
  if (!h->excluded) h->insns += (uintptr_t)udata;
}

/* udata: marker id in bits 0-11, instructions of the segment after the marker above */
static void on_marker(unsigned vcpu, void *udata) {
  uintptr_t v = (uintptr_t)udata;
  int id = (int)(v & 0xfff);
  hart_t *h = hart(vcpu);
  h->ran = 1;
  write_record(vcpu, h, id);
  if (id >= RT_FIRST && id <= RT_LAST) h->excluded = !(id & 1);
  if (!h->excluded) h->insns += v >> 12;
}

static void on_mem(unsigned vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
  (void)udata;
  hart_t *h = hart(vcpu);
  if (h->excluded) return;
  int r = 0;
  while (r < n_regions && vaddr - regions[r].base >= regions[r].size) r++;
  h->acc[r][qemu_plugin_mem_is_store(info) ? 1 : 0]++;
}

static int marker_id(struct qemu_plugin_insn *insn) {
  if (qemu_plugin_insn_size(insn) != 4) return -1;
  uint32_t w;
  memcpy(&w, qemu_plugin_insn_data(insn), 4);
  if ((w & MARKER_MASK) != MARKER_MATCH) return -1;
  return (int)(w >> 20); /* the 12-bit immediate (ids are 0..0x7ff) */
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  struct qemu_plugin_insn *marker = NULL;
  int marker_imm = 0;
  uintptr_t seg = 0;
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    int m = marker_id(insn);
    if (m < 0) {
      seg++;
      qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
      continue;
    }
    if (marker)
      qemu_plugin_register_vcpu_insn_exec_cb(marker, on_marker, QEMU_PLUGIN_CB_NO_REGS,
                                             (void *)((seg << 12) | (uintptr_t)marker_imm));
    else if (seg)
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void *)seg);
    marker = insn;
    marker_imm = m;
    seg = 0;
  }
  if (marker)
    qemu_plugin_register_vcpu_insn_exec_cb(marker, on_marker, QEMU_PLUGIN_CB_NO_REGS,
                                           (void *)((seg << 12) | (uintptr_t)marker_imm));
  else if (seg)
    qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, (void *)seg);
}

static void on_atexit(qemu_plugin_id_t id, void *udata) {
  (void)id;
  (void)udata;
  for (unsigned v = 0; v < MAX_HARTS; v++)
    if (harts[v].ran) write_record(v, &harts[v], -1);
  pthread_mutex_lock(&out_lock);
  fclose(out);
  out = NULL;
  pthread_mutex_unlock(&out_lock);
}

static int fail(const char *msg, const char *arg) {
  char buf[512];
  snprintf(buf, sizeof buf, "deeploy_timing plugin: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
  qemu_plugin_outs(buf);
  fputs(buf, stderr);
  return -1;
}

static int parse_region(const char *spec) {
  if (n_regions == MAX_REGIONS) return fail("too many regions (at most 8)", spec);
  region_t *r = &regions[n_regions];
  const char *c1 = strchr(spec, ':');
  const char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
  if (!c1 || !c2 || c1 == spec || (size_t)(c1 - spec) >= sizeof r->name)
    return fail("region must be NAME:BASE:SIZE", spec);
  memcpy(r->name, spec, (size_t)(c1 - spec));
  r->name[c1 - spec] = 0;
  char *end;
  r->base = strtoull(c1 + 1, &end, 0);
  if (end != c2) return fail("bad region base", spec);
  r->size = strtoull(c2 + 1, &end, 0);
  if (*end || !r->size) return fail("bad region size", spec);
  n_regions++;
  return 0;
}

DEEPLOY_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                                              char **argv) {
  const char *path = NULL;
  for (int i = 0; i < argc; i++) {
    if (!strncmp(argv[i], "out=", 4))
      path = argv[i] + 4;
    else if (!strncmp(argv[i], "region=", 7)) {
      if (parse_region(argv[i] + 7)) return -1;
    } else
      return fail("unknown argument (expected out=FILE, region=NAME:BASE:SIZE)", argv[i]);
  }
  if (!path || !*path) return fail("missing out=FILE", NULL);
  if (info->system_emulation && info->system.max_vcpus > MAX_HARTS) return fail("more than 64 vCPUs", NULL);
  out = fopen(path, "w");
  if (!out) return fail("cannot open the output file", path);
  setvbuf(out, NULL, _IOFBF, 1 << 16);
  fprintf(out, "# deeploy-vp-records 1\n# regions");
  for (int r = 0; r < n_regions; r++)
    fprintf(out, " %s:0x%" PRIx64 ":0x%" PRIx64, regions[r].name, regions[r].base, regions[r].size);
  fprintf(out, "\n# columns hart seq marker insns");
  for (int r = 0; r < n_regions; r++) fprintf(out, " %s_ld %s_st", regions[r].name, regions[r].name);
  fprintf(out, " other_ld other_st\n");
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
