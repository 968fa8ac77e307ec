/* Deeploy timing plugin for qemu-system-riscv32 (TCG plugin API version 1, QEMU 7.2).
 *
 * Counts exactly, per hart (vCPU): executed instructions and data memory accesses (loads and
 * stores separately) per address region; at every marker instruction `slti x0, x0, ID` (except
 * the DMA-internal ones, DEEPLOY_RT_DMA_INNER_FIRST..LAST) it appends a record with the hart's
 * counters to the output file. Counting stops after a runtime marker with an even id in
 * DEEPLOY_RT_WAIT_FIRST..LAST (a wait region opens) and resumes after an odd one (see
 * TargetLibraries/Siracusa/inc/deeploy_runtime.h); marker instructions are never counted. DMA
 * transfers and waits get records of their own (below). Marker ids: deeploy_markers.h, generated
 * from Deeploy/runtime/abi.py.
 *
 *   qemu-system-riscv32 ... -plugin libdeeploy_timing.so,out=records.txt,region=L2:0x80000000:0x200000,...
 *
 * Arguments: out=FILE (required), region=NAME:BASE:SIZE (repeatable, up to 8, in column order;
 * an access goes to the first region containing its address, else to "other"), emu=START:END and
 * emu_mem=START:END (the PULP emulator's code and access helpers, below; default: none), sites=FILE
 * and stubs=START:END (the PULP stubs of a rewritten image, below), and optionally
 * l1map=CORES:BANKS:BANK_BYTES:BANKS_PER_TILE:CORES_PER_TILE:TILES_PER_GROUP:LOCAL_BASE:LOCAL_END for
 * a banked, possibly hierarchical L1 (MemPool, Snitch): CORES harts take part in forks, the L1
 * region is interleaved over BANKS banks of BANK_BYTES, a tile holds
 * BANKS_PER_TILE banks and CORES_PER_TILE cores (hart h in tile h / CORES_PER_TILE), a group
 * TILES_PER_GROUP tiles; accesses in [LOCAL_BASE, LOCAL_END) (the core stacks, each in its core's
 * own tile: the hardware's sequential region) are tile-local and in no shared bank.
 *
 * Output (text, one record per line, deterministic under -icount):
 *   # deeploy-vp-records 3
 *   # regions L2:0x80000000:0x200000 L1:0x90000000:0x40000 ...
 *   # columns hart seq marker insns L2_ld L2_st L1_ld L1_st ... other_ld other_st CLASSES... bank0..bank15
 *   # dma-columns dma hart seq engine index commands rows L2_rd L2_wr L1_rd L1_wr ... other_rd other_wr
 *   # wait-columns wait hart seq engine transfer retired
 *   <hart> <seq> <marker> <insns> <ld> <st> ...
 *   dma <hart> <seq> <engine> <index> <commands> <rows> <bytes read> <bytes written> ...
 *   wait <hart> <seq> <engine> <transfer> <retired>
 * CLASSES (instruction classes the cycle model costs, Deeploy/targets/siracusa/timing.py), counted
 * exactly like insns: taken (conditional branches taken: the next block executed is not the
 * fall-through), jump (jal, jalr and their compressed forms), mulh (mulh, mulhsu, mulhu), div
 * (div, divu, rem, remu), loaduse (a load whose destination the next instruction of the same block
 * reads), misaligned (data accesses not aligned to their size), fpu (RV32F arithmetic, fused
 * multiply-add, conversions, compares, moves), fdivsqrt (fdiv.s, fsqrt.s), the CORE-V PULP
 * extension (TargetLibraries/Siracusa/inc/deeploy_xpulp.h): simd (packed SIMD, opcode 0x7b), postinc
 * (post-increment loads and stores), hwloop (hardware-loop setup), mac (cv.mac/msu, 16-bit
 * multiply(-accumulate)), target32 (a taken branch or a jump to a 32-bit instruction at an address
 * of 2 mod 4), jrdep (jalr and its compressed forms right after the instruction that writes their
 * address register; twice when the jump also links into that register, as the far call
 * `auipc ra; jalr ra`), fsqrt (fsqrt.s, also counted in fdivsqrt); bank0..bank15: core accesses
 * to the region named L1 by TCDM bank ((address - base) / 4 mod 16).
 *
 * The PULP extension runs through the runtime's trap-and-emulate (deeploy_xpulp_emu.c): a cv.*
 * word traps and ends its block, so it is counted there as one instruction of its class. Blocks
 * in the emulator's code (emu=START:END) are not counted at all (instructions, accesses, taken
 * branches: the state carries across them, so a hardware loop's return to its start costs
 * nothing); blocks in its access helpers (emu_mem=START:END) count only their data accesses, as
 * the core's own. A cv load's use by the first instruction after it (the next block) is a
 * load-use stall.
 * A rewritten image (Deeploy/targets/pulp/stubs.py) runs most cv.* words as RV32I stubs instead:
 * sites=FILE lists "ADDRESS WORD CHAIN" (hex) per rewritten site: its original word, which is
 * decoded and counted in place of the `jal` (or nop) there, and the chain entry of its stub (0:
 * none), where a stub continues straight into the next site's stub: a block starting there counts
 * as the site's block (the one-instruction block of its `jal`). Blocks in the stubs (stubs=START:END) are
 * counted like the emulator's access helpers (data accesses only; taken-branch and load-use state
 * cross them unchanged, so loop-backs cost nothing), except the accesses through tp: the stubs'
 * per-hart scratch area.
 * With l1map, two more columns follow: l1_group_ld l1_remote_ld (L1 loads from a bank in another tile
 * of the hart's group / in another group), and a line closes every phase of a fork (all CORES
 * harts have arrived at a barrier or ended their task):
 *   phase <seq> <max bank> <accesses>
 * seq = hart 0's arrival record, max bank = the most accesses any one shared bank received from
 * all harts in the phase, accesses = all harts' shared-bank accesses in the phase (in tasks only).
 * hart = vCPU index (= mhartid on virt); seq = the record's index among that hart's records;
 * marker = the id as 0x%03x, or "end" for the final record of every hart that ran (written at
 * exit); counters are cumulative since reset, excluding wait regions, counted up to (not
 * including) the marker.
 *
 * DMA (protocol in TargetLibraries/Siracusa/inc/deeploy_dma.h): an issue window (ISSUE_BEGIN ..
 * ISSUE_END) or a wait window (WAIT_BEGIN .. WAIT_END) is a wait region like the runtime's others,
 * and its two markers write ordinary records. Inside it, the DMA-internal markers write no record:
 * ENGINE(e) (ENGINE_BASE + e) names the engine, CMD counts a hardware command, the accesses
 * between ROW_BEGIN and ROW_END are the transfer's bytes (per region, loads = bytes read, stores =
 * bytes written, sizes from the access width) and count one row, RETIRE retires the hart's
 * oldest not yet retired transfer on the engine. After the record of ISSUE_END (seq) comes a
 * "dma" line for that record: index = the transfer's number among the hart's transfers on that
 * engine (0, 1, ...; an issue window without CMD is no transfer and writes no line). After the
 * record of WAIT_END comes a "wait" line: transfer = index of the newest transfer it retired
 * (the one waited for; earlier ones of the same engine end before it), -1 if it retired none
 * (already complete), retired = how many it retired. A marker out of protocol writes
 *   # plugin error: hart H record SEQ: WHAT
 * and the record reader rejects the file.
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

#include "deeploy_markers.h"
#include "qemu_plugin_api.h"

DEEPLOY_PLUGIN_EXPORT int qemu_plugin_version = DEEPLOY_QEMU_PLUGIN_API_VERSION;

#define MAX_HARTS 512 /* QEMU virt's limit */
#define MAX_REGIONS 8
#define MARKER_MASK 0x000fffffu  /* rd, funct3, rs1, opcode of `slti x0, x0, imm` */
#define MARKER_MATCH 0x00002013u /* opcode OP-IMM (0x13), funct3 SLTI (2), rd = rs1 = x0 */
#define RT_FIRST DEEPLOY_RT_WAIT_FIRST
#define RT_LAST DEEPLOY_RT_WAIT_LAST
/* DMA markers (TargetLibraries/Siracusa/inc/deeploy_dma.h) */
#define DMA_ISSUE_BEGIN DEEPLOY_RT_DMA_ISSUE_BEGIN
#define DMA_ISSUE_END DEEPLOY_RT_DMA_ISSUE_END
#define DMA_WAIT_BEGIN DEEPLOY_RT_DMA_WAIT_BEGIN
#define DMA_WAIT_END DEEPLOY_RT_DMA_WAIT_END
#define DMA_INNER_FIRST DEEPLOY_RT_DMA_INNER_FIRST /* inside a window, no record */
#define DMA_INNER_LAST DEEPLOY_RT_DMA_INNER_LAST
#define DMA_ENGINE_FIRST DEEPLOY_RT_DMA_ENGINE_BASE
#define MAX_ENGINES DEEPLOY_RT_DMA_MAX_ENGINES
#define DMA_CMD DEEPLOY_RT_DMA_CMD
#define DMA_ROW_BEGIN DEEPLOY_RT_DMA_ROW_BEGIN
#define DMA_ROW_END DEEPLOY_RT_DMA_ROW_END
#define DMA_RETIRE DEEPLOY_RT_DMA_RETIRE

enum { WINDOW_NONE, WINDOW_ISSUE, WINDOW_WAIT };

typedef struct {
  int window;                         /* WINDOW_* */
  int engine;                         /* -1 until the window's ENGINE marker */
  int in_row;                         /* between ROW_BEGIN and ROW_END */
  uint64_t cmds, rows;                /* of the transfer being issued */
  uint64_t bytes[MAX_REGIONS + 1][2]; /* [region or other][0 = read, 1 = written] */
  int64_t wait_last;                  /* newest transfer retired by the current wait, -1: none */
  uint64_t wait_count;                /* transfers retired by the current wait */
  uint64_t issued[MAX_ENGINES], retired[MAX_ENGINES];
} dma_t;

/* instruction classes (static ones are counted per block segment at translation) */
enum { C_TAKEN, C_JUMP, C_MULH, C_DIV, C_LOADUSE, C_MISALIGNED, C_FPU, C_FDIVSQRT,
       C_SIMD, C_POSTINC, C_HWLOOP, C_MAC, C_TARGET32, C_JRDEP, C_FSQRT, N_CLASSES };
static const char *const class_names[N_CLASSES] = {"taken",    "jump",    "mulh",   "div",      "loaduse",
                                                   "misaligned", "fpu",   "fdivsqrt", "simd",   "postinc",
                                                   "hwloop",   "mac",     "target32", "jrdep",  "fsqrt"};
#define N_BANKS 16
#define MAX_L1MAP_BANKS 4096

/* hierarchical L1 (l1map=) */
typedef struct {
  int on;
  uint64_t cores, banks, bank_bytes, banks_per_tile, cores_per_tile, tiles_per_group, local_base, local_end;
  uint64_t bank[MAX_L1MAP_BANKS]; /* accesses of the open phase per bank (all harts) */
  uint64_t arrived;               /* harts that ended the open phase */
  uint64_t h0_seq;                /* hart 0's arrival record in the open phase */
} l1map_t;
static l1map_t l1map;

typedef struct {
  uint32_t id;               /* marker id (segments after a marker) */
  uint32_t n;                /* instructions */
  uint32_t cls[N_CLASSES];   /* static class counts (taken and misaligned stay 0) */
} seg_t;

typedef struct {
  uint64_t fallthrough; /* pc after the block's final conditional branch, 0: none */
  uint64_t vaddr;
  uint64_t first_reads; /* registers the block's first instruction reads */
  int last_load_rd;     /* the block ends with a PULP load (it traps) to this register, else -1 */
  int ends_jump;        /* the block's last instruction is a jump */
  int target32;         /* its first instruction is 32-bit at an address of 2 mod 4 */
  seg_t first;          /* the instructions before the block's first marker */
} tb_info_t;

typedef struct {
  uint64_t insns;
  uint64_t cls[N_CLASSES];
  uint64_t bank[N_BANKS];
  uint64_t l1_group_ld, l1_remote_ld; /* l1map: loads from another tile of the group / another group */
  int in_task;                        /* l1map: between TASK_BEGIN and TASK_END */
  uint64_t pending;                 /* fall-through pc of the last block's branch, 0: none */
  int pending_load;                 /* destination of the PULP load that ended the last block, -1 */
  int jumped;                       /* the last block ended with a jump */
  uint64_t acc[MAX_REGIONS + 1][2]; /* [region or other][0 = load, 1 = store] */
  uint64_t seq;
  int excluded;
  int ran;
  dma_t dma;
} __attribute__((aligned(64))) hart_t;

typedef struct {
  char name[32];
  uint64_t base, size;
} region_t;

static hart_t harts[MAX_HARTS];
static region_t regions[MAX_REGIONS];
static uint64_t emu_range[2], emu_mem_range[2]; /* [start, end) of the PULP emulator's code, access helpers */
static uint64_t stub_range[2];                   /* [start, end) of the PULP stubs */
static uint64_t *site_addr;                      /* rewritten sites, ascending, and their original words */
static uint32_t *site_word;
static size_t n_sites;
static uint64_t *chain_addr;                     /* chain entries, ascending, and their sites' indices */
static size_t *chain_site;
static size_t n_chains;
static int n_regions;
static int l1_region = -1; /* index of the region named L1 (banked), -1: none */
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static inline hart_t *hart(unsigned vcpu) { return &harts[vcpu < MAX_HARTS ? vcpu : MAX_HARTS - 1]; }

static void write_line(const char *line, size_t n) {
  pthread_mutex_lock(&out_lock);
  if (out) fwrite(line, 1, n, out);
  pthread_mutex_unlock(&out_lock);
}

static int region_of(uint64_t vaddr) {
  int r = 0;
  while (r < n_regions && vaddr - regions[r].base >= regions[r].size) r++;
  return r;
}

static void write_record(unsigned vcpu, hart_t *h, int marker) {
  char line[64 + 21 * (2 * MAX_REGIONS + 2 + N_CLASSES + N_BANKS + 2)];
  int n = marker >= 0 ? snprintf(line, sizeof line, "%u %" PRIu64 " 0x%03x %" PRIu64, vcpu, h->seq, marker, h->insns)
                      : snprintf(line, sizeof line, "%u %" PRIu64 " end %" PRIu64, vcpu, h->seq, h->insns);
  for (int r = 0; r <= n_regions; r++)
    n += snprintf(line + n, sizeof line - n, " %" PRIu64 " %" PRIu64, h->acc[r][0], h->acc[r][1]);
  for (int c = 0; c < N_CLASSES; c++) n += snprintf(line + n, sizeof line - n, " %" PRIu64, h->cls[c]);
  for (int b = 0; b < N_BANKS; b++) n += snprintf(line + n, sizeof line - n, " %" PRIu64, h->bank[b]);
  if (l1map.on) n += snprintf(line + n, sizeof line - n, " %" PRIu64 " %" PRIu64, h->l1_group_ld, h->l1_remote_ld);
  line[n++] = '\n';
  h->seq++;
  write_line(line, (size_t)n);
}

/* ---- DMA windows --------------------------------------------------------------------------- */
static void dma_error(unsigned vcpu, hart_t *h, const char *what) {
  char line[256];
  int n = snprintf(line, sizeof line, "# plugin error: hart %u record %" PRIu64 ": %s\n", vcpu, h->seq, what);
  write_line(line, (size_t)n);
}

static void dma_open(unsigned vcpu, hart_t *h, int window) {
  dma_t *d = &h->dma;
  if (d->window != WINDOW_NONE) dma_error(vcpu, h, "DMA window opened inside another one");
  d->window = window;
  d->engine = -1;
  d->in_row = 0;
  d->cmds = d->rows = 0;
  memset(d->bytes, 0, sizeof d->bytes);
  d->wait_last = -1;
  d->wait_count = 0;
}

/* after the record of ISSUE_END / WAIT_END (seq = h->seq - 1) */
static void dma_close(unsigned vcpu, hart_t *h, int window) {
  dma_t *d = &h->dma;
  char line[160 + 2 * 21 * (MAX_REGIONS + 2)]; /* 6 numbers, then 2 per region and other */
  int n;
  if (d->window != window || d->engine < 0 || d->in_row) {
    dma_error(vcpu, h, d->window != window ? "DMA window closed by the wrong marker (or never opened)"
                                           : d->engine < 0 ? "DMA window without an ENGINE marker"
                                                           : "DMA window closed inside a row");
    d->window = WINDOW_NONE;
    return;
  }
  d->window = WINDOW_NONE;
  if (window == WINDOW_ISSUE) {
    if (!d->cmds) {
      if (d->rows) dma_error(vcpu, h, "DMA rows without a command");
      return; /* a 0-byte copy: no transfer */
    }
    n = snprintf(line, sizeof line, "dma %u %" PRIu64 " %d %" PRIu64 " %" PRIu64 " %" PRIu64, vcpu, h->seq - 1,
                 d->engine, d->issued[d->engine]++, d->cmds, d->rows);
    for (int r = 0; r <= n_regions; r++)
      n += snprintf(line + n, sizeof line - n, " %" PRIu64 " %" PRIu64, d->bytes[r][0], d->bytes[r][1]);
  } else {
    n = snprintf(line, sizeof line, "wait %u %" PRIu64 " %d %" PRId64 " %" PRIu64, vcpu, h->seq - 1, d->engine,
                 d->wait_last, d->wait_count);
  }
  line[n++] = '\n';
  write_line(line, (size_t)n);
}

/* DMA-internal markers (DMA_INNER_FIRST..LAST): no record */
static void dma_inner(unsigned vcpu, hart_t *h, int id) {
  dma_t *d = &h->dma;
  if (d->window == WINDOW_NONE) {
    dma_error(vcpu, h, "DMA marker outside an issue or wait window");
    return;
  }
  if (id >= DMA_ENGINE_FIRST && id < DMA_ENGINE_FIRST + MAX_ENGINES) {
    if (d->engine >= 0) dma_error(vcpu, h, "second ENGINE marker in one DMA window");
    d->engine = id - DMA_ENGINE_FIRST;
    return;
  }
  if (d->engine < 0) {
    dma_error(vcpu, h, "DMA marker before the window's ENGINE marker");
    return;
  }
  switch (id) {
  case DMA_CMD:
    if (d->window != WINDOW_ISSUE || d->in_row) dma_error(vcpu, h, "CMD outside an issue window or inside a row");
    d->cmds++;
    break;
  case DMA_ROW_BEGIN:
    if (d->window != WINDOW_ISSUE || d->in_row || !d->cmds) dma_error(vcpu, h, "ROW_BEGIN out of place");
    d->in_row = 1;
    d->rows++;
    break;
  case DMA_ROW_END:
    if (!d->in_row) dma_error(vcpu, h, "ROW_END without ROW_BEGIN");
    d->in_row = 0;
    break;
  case DMA_RETIRE:
    if (d->window != WINDOW_WAIT || d->retired[d->engine] >= d->issued[d->engine]) {
      dma_error(vcpu, h, "RETIRE outside a wait window or of a transfer never issued");
      break;
    }
    d->wait_last = (int64_t)d->retired[d->engine]++;
    d->wait_count++;
    break;
  default:
    dma_error(vcpu, h, "unknown DMA marker");
  }
}

static inline void add_seg(hart_t *h, const seg_t *g) {
  if (h->excluded) return;
  h->insns += g->n;
  for (int c = 0; c < N_CLASSES; c++) h->cls[c] += g->cls[c];
}

/* udata: the block's tb_info_t. The previous block ended with a conditional branch if
 * h->pending: it was taken unless this block starts at its fall-through. */
static void on_block(unsigned vcpu, void *udata) {
  const tb_info_t *t = udata;
  hart_t *h = hart(vcpu);
  h->ran = 1;
  int taken = h->pending && h->pending != t->vaddr;
  if (taken && !h->excluded) h->cls[C_TAKEN]++;
  if ((taken || h->jumped) && t->target32 && !h->excluded) h->cls[C_TARGET32]++;
  if (h->pending_load >= 0 && (t->first_reads >> h->pending_load) & 1 && !h->excluded) h->cls[C_LOADUSE]++;
  h->pending = t->fallthrough;
  h->pending_load = t->last_load_rd;
  h->jumped = t->ends_jump;
  add_seg(h, &t->first);
}

/* l1map: a hart reached a runtime marker (after its record). Under -icount the vCPUs run one at a
 * time (round robin), so the phase state needs no lock. */
static void l1map_marker(unsigned vcpu, hart_t *h, int id) {
  if (id == DEEPLOY_RT_TASK_BEGIN) h->in_task = 1;
  if (!h->in_task || (id != DEEPLOY_RT_BARRIER_ENTER && id != DEEPLOY_RT_TASK_END)) return;
  if (id == DEEPLOY_RT_TASK_END) h->in_task = 0;
  if (vcpu == 0) l1map.h0_seq = h->seq - 1;
  if (++l1map.arrived < l1map.cores) return;
  uint64_t most = 0, total = 0;
  for (uint64_t b = 0; b < l1map.banks; b++) {
    total += l1map.bank[b];
    if (l1map.bank[b] > most) most = l1map.bank[b];
    l1map.bank[b] = 0;
  }
  l1map.arrived = 0;
  char line[96];
  int n = snprintf(line, sizeof line, "phase %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", l1map.h0_seq, most, total);
  write_line(line, (size_t)n);
}

/* udata: the seg_t of the instructions after the marker */
static void on_marker(unsigned vcpu, void *udata) {
  const seg_t *g = udata;
  int id = (int)g->id;
  hart_t *h = hart(vcpu);
  h->ran = 1;
  if (id >= DMA_INNER_FIRST && id <= DMA_INNER_LAST) {
    dma_inner(vcpu, h, id);
  } else {
    write_record(vcpu, h, id);
    if (id == DMA_ISSUE_BEGIN || id == DMA_WAIT_BEGIN)
      dma_open(vcpu, h, id == DMA_ISSUE_BEGIN ? WINDOW_ISSUE : WINDOW_WAIT);
    else if (id == DMA_ISSUE_END || id == DMA_WAIT_END)
      dma_close(vcpu, h, id == DMA_ISSUE_END ? WINDOW_ISSUE : WINDOW_WAIT);
    if (id >= RT_FIRST && id <= RT_LAST) h->excluded = !(id & 1);
    if (l1map.on) l1map_marker(vcpu, h, id);
  }
  add_seg(h, g);
}

static void on_mem(unsigned vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr, void *udata) {
  (void)udata;
  hart_t *h = hart(vcpu);
  if (h->dma.in_row) { /* a DMA transfer's data: bytes, not core accesses */
    h->dma.bytes[region_of(vaddr)][qemu_plugin_mem_is_store(info) ? 1 : 0] += 1u << qemu_plugin_mem_size_shift(info);
    return;
  }
  if (h->excluded) return;
  int r = region_of(vaddr);
  unsigned shift = qemu_plugin_mem_size_shift(info);
  h->acc[r][qemu_plugin_mem_is_store(info) ? 1 : 0]++;
  if (vaddr & ((1u << shift) - 1)) h->cls[C_MISALIGNED]++;
  if (r == l1_region) {
    h->bank[((vaddr - regions[r].base) >> 2) % N_BANKS]++;
    if (l1map.on && vaddr - l1map.local_base >= l1map.local_end - l1map.local_base) {
      uint64_t bank = (vaddr - regions[r].base) / l1map.bank_bytes % l1map.banks;
      uint64_t tile = bank / l1map.banks_per_tile, own = vcpu / l1map.cores_per_tile;
      if (h->in_task) l1map.bank[bank]++;
      if (tile != own && !qemu_plugin_mem_is_store(info)) {
        if (tile / l1map.tiles_per_group == own / l1map.tiles_per_group) h->l1_group_ld++;
        else h->l1_remote_ld++;
      }
    }
  }
}

/* ---- instruction decoding (RV32IMFC) ------------------------------------------------------- */
typedef struct {
  int size;       /* 2 or 4 bytes */
  uint64_t reads; /* registers read: bit r = xr, bit 32 + r = fr */
  int load_rd;    /* destination of a load (x: 0..31, f: 32..63), -1: not a load or x0 */
  int cls;        /* C_JUMP, C_MULH, C_DIV, C_FPU, C_FDIVSQRT, or -1 */
  int branch;     /* conditional branch */
  int pulp;       /* a CORE-V PULP instruction (emulated: it ends its block) */
  int wr;         /* x register written (1..31), -1: none */
  int jr;         /* address register of jalr, c.jr, c.jalr, -1: not one of them */
} insn_t;

#define X(r) (1ull << (r))
#define F(r) (1ull << (32 + (r)))

static insn_t decode(uint32_t w, int size) {
  insn_t d = {size, 0, -1, -1, 0, 0, -1, -1};
  if (size == 2) {
    unsigned op = w & 3, f3 = (w >> 13) & 7, r1 = (w >> 7) & 31, r2 = (w >> 2) & 31;
    unsigned p1 = 8 + ((w >> 7) & 7), p2 = 8 + ((w >> 2) & 7);
    if (op == 0) {
      if (f3 == 0) { d.reads = X(2); d.wr = (int)p2; }                    /* c.addi4spn */
      else if (f3 == 2) { d.reads = X(p1); d.load_rd = d.wr = (int)p2; }  /* c.lw */
      else if (f3 == 3) { d.reads = X(p1); d.load_rd = 32 + (int)p2; }    /* c.flw */
      else if (f3 == 6) d.reads = X(p1) | X(p2);                          /* c.sw */
      else if (f3 == 7) d.reads = X(p1) | F(p2);                          /* c.fsw */
    } else if (op == 1) {
      if (f3 == 0 || (f3 == 3 && r1 == 2)) d.reads = X(r1);               /* c.addi, c.addi16sp */
      else if (f3 == 1 || f3 == 5) d.cls = C_JUMP;                        /* c.jal, c.j */
      else if (f3 == 4) d.reads = X(p1) | (((w >> 10) & 3) == 3 ? X(p2) : 0);
      if (f3 == 1) d.wr = 1;                                              /* c.jal: ra */
      else if (f3 <= 3) d.wr = (int)r1;                                   /* c.addi, c.li, c.lui */
      else if (f3 == 4) d.wr = (int)p1;
      else if (f3 >= 6) { d.reads = X(p1); d.branch = 1; }                /* c.beqz, c.bnez */
    } else if (op == 2) {
      if (f3 == 0) { d.reads = X(r1); d.wr = (int)r1; }                   /* c.slli */
      else if (f3 == 2) { d.reads = X(2); d.load_rd = d.wr = (int)r1; }   /* c.lwsp */
      else if (f3 == 3) { d.reads = X(2); d.load_rd = 32 + (int)r1; }     /* c.flwsp */
      else if (f3 == 4) {
        if (r2 == 0) {                                                    /* c.jr, c.jalr */
          d.reads = X(r1);
          d.cls = r1 ? C_JUMP : -1;
          d.jr = r1 ? (int)r1 : -1;
          d.wr = (w >> 12) & 1 ? 1 : -1;
        } else {                                                          /* c.mv, c.add */
          d.reads = X(r2) | ((w >> 12) & 1 ? X(r1) : 0);
          d.wr = (int)r1;
        }
      } else if (f3 == 6) d.reads = X(2) | X(r2);                         /* c.swsp */
      else if (f3 == 7) d.reads = X(2) | F(r2);                           /* c.fswsp */
    }
  } else {
    unsigned op = w & 0x7f, f3 = (w >> 12) & 7, f7 = w >> 25;
    unsigned rd = (w >> 7) & 31, r1 = (w >> 15) & 31, r2 = (w >> 20) & 31, r3 = w >> 27;
    if (op == 0x03 || op == 0x13 || op == 0x17 || op == 0x33 || op == 0x37 || op == 0x67 || op == 0x6f ||
        (op == 0x73 && f3) || (op == 0x53 && (f7 == 0x50 || f7 == 0x60 || f7 == 0x70)))
      d.wr = (int)rd;                                                     /* x destinations */
    switch (op) {
    case 0x03: d.reads = X(r1); d.load_rd = (int)rd; break;               /* lb .. lhu */
    case 0x07: d.reads = X(r1); d.load_rd = 32 + (int)rd; break;          /* flw */
    case 0x13: case 0x73: d.reads = X(r1); break;                         /* op-imm, system */
    case 0x23: d.reads = X(r1) | X(r2); break;                            /* stores */
    case 0x27: d.reads = X(r1) | F(r2); break;                            /* fsw */
    case 0x2f: d.reads = X(r1) | X(r2); break;                            /* amo */
    case 0x33:
      d.reads = X(r1) | X(r2);
      if (f7 == 1 && f3 >= 1 && f3 <= 3) d.cls = C_MULH;
      else if (f7 == 1 && f3 >= 4) d.cls = C_DIV;
      break;
    case 0x63: d.reads = X(r1) | X(r2); d.branch = 1; break;
    case 0x67: d.reads = X(r1); d.cls = C_JUMP; d.jr = (int)r1; break;    /* jalr */
    case 0x6f: d.cls = C_JUMP; break;                                     /* jal */
    case 0x43: case 0x47: case 0x4b: case 0x4f:                           /* fmadd .. fnmadd */
      d.reads = F(r1) | F(r2) | F(r3); d.cls = C_FPU; break;
    case 0x0b: d.reads = X(r1); d.load_rd = (int)rd; d.cls = C_POSTINC; d.pulp = 1; break; /* cv.l* (rs1), imm */
    case 0x2b:                                                                          /* custom-1 */
      d.pulp = 1;
      d.reads = X(r1) | X(r2);
      if (f3 <= 2) d.cls = C_POSTINC;                                   /* cv.s* (rs1), imm */
      else if (f3 == 4) { d.reads = X(r1); d.cls = C_HWLOOP; }          /* hardware-loop setup */
      else if (f3 == 3 && f7 < 0x10) {                                  /* loads: post-inc, rs2(rs1) */
        d.load_rd = (int)rd;
        d.cls = f7 & 4 ? -1 : C_POSTINC;
      } else if (f3 == 3 && f7 < 0x18) {                                /* stores: rs3 in the rd field */
        d.reads |= X(rd);
        d.cls = f7 & 4 ? -1 : C_POSTINC;
      } else if (f3 == 3 && (f7 == 0x48 || f7 == 0x49)) { d.reads |= X(rd); d.cls = C_MAC; }
      else if (f3 == 3 && f7 == 0x1a) d.reads |= X(rd);                 /* cv.insertr */
      else if (f3 == 3 && (f7 == 0x40 || f7 == 0x41)) d.reads |= X(rd); /* cv.addNr, cv.adduNr */
      break;
    case 0x5b:                                    /* custom-2: bit fields, addN/subN, 16-bit mul/mac */
      d.pulp = 1;
      d.reads = X(r1) | X(r2) | X(rd);
      if (f3 >= 4) d.cls = C_MAC;
      break;
    case 0x7b: d.reads = X(r1) | X(r2) | X(rd); d.cls = C_SIMD; d.pulp = 1; break; /* custom-3: SIMD */
    case 0x53:
      if (f7 == 0x68 || f7 == 0x78) d.reads = X(r1);                      /* fcvt.s.w[u], fmv.w.x */
      else if (f7 == 0x2c || (f7 >> 2) == 0x18 || (f7 >> 2) == 0x1c) d.reads = F(r1); /* fsqrt, fcvt.w, fmv/fclass */
      else d.reads = F(r1) | F(r2);
      d.cls = (f7 == 0x0c || f7 == 0x2c) ? C_FDIVSQRT : C_FPU;
      break;
    }
  }
  if (d.load_rd == 0) d.load_rd = -1; /* a load to x0 has no consumer */
  if (d.wr == 0) d.wr = -1;
  d.reads &= ~1ull;                   /* x0 never stalls */
  return d;
}


static int marker_id(struct qemu_plugin_insn *insn) {
  if (qemu_plugin_insn_size(insn) != 4) return -1;
  uint32_t w;
  memcpy(&w, qemu_plugin_insn_data(insn), 4);
  if ((w & MARKER_MASK) != MARKER_MATCH) return -1;
  return (int)(w >> 20); /* the 12-bit immediate (ids are 0..0x7ff) */
}

static inline int in_range(const uint64_t *r, uint64_t a) { return a - r[0] < r[1] - r[0]; }

/* index of vaddr in the ascending a[0..n), n if absent */
static size_t find(const uint64_t *a, size_t n, uint64_t vaddr) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (a[mid] < vaddr) lo = mid + 1;
    else hi = mid;
  }
  return lo < n && a[lo] == vaddr ? lo : n;
}

/* the original word of a rewritten site at vaddr, else w */
static uint32_t site_original(uint64_t vaddr, uint32_t w) {
  size_t k = find(site_addr, n_sites, vaddr);
  return k < n_sites ? site_word[k] : w;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
  (void)id;
  size_t n = qemu_plugin_tb_n_insns(tb);
  uint64_t vaddr = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, 0));
  if (in_range(emu_range, vaddr)) return; /* the PULP emulator: not counted */
  int stub = in_range(stub_range, vaddr);
  if (stub || in_range(emu_mem_range, vaddr)) { /* the core's data accesses */
    for (size_t i = 0; i < n; i++) {
      struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
      uint32_t w = 0;
      memcpy(&w, qemu_plugin_insn_data(insn), qemu_plugin_insn_size(insn) < 4 ? 2 : 4);
      if (stub && ((w >> 15) & 31) == 4) continue; /* through tp: the stubs' scratch area */
      qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
    }
    size_t c = stub ? find(chain_addr, n_chains, vaddr) : n_chains;
    if (c < n_chains) { /* a chain entry: the block of the site's jal */
      size_t k = chain_site[c];
      insn_t d = decode(site_word[k], 4);
      tb_info_t *t = calloc(1, sizeof *t);
      t->vaddr = site_addr[k];
      t->first_reads = d.reads;
      t->last_load_rd = d.pulp ? d.load_rd : -1;
      t->first.n = 1;
      if (d.cls >= 0) t->first.cls[d.cls]++;
      qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, t);
    }
    return;
  }
  tb_info_t *t = calloc(1, sizeof *t); /* lives as long as the translation (never freed) */
  seg_t *seg = &t->first;
  insn_t prev = {0, 0, -1, -1, 0, 0, -1, -1};
  t->vaddr = vaddr;
  t->last_load_rd = -1;
  for (size_t i = 0; i < n; i++) {
    struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
    int m = marker_id(insn);
    if (m >= 0) {
      seg = calloc(1, sizeof *seg);
      seg->id = (uint32_t)m;
      qemu_plugin_register_vcpu_insn_exec_cb(insn, on_marker, QEMU_PLUGIN_CB_NO_REGS, seg);
      continue; /* markers are not counted and do not separate a load from its use */
    }
    size_t size = qemu_plugin_insn_size(insn);
    uint32_t w = 0;
    memcpy(&w, qemu_plugin_insn_data(insn), size < 4 ? size : 4);
    if (size == 4) w = site_original(qemu_plugin_insn_vaddr(insn), w);
    insn_t d = decode(w, (int)size);
    if (i == 0) t->first_reads = d.reads;
    t->last_load_rd = d.pulp ? d.load_rd : -1;
    seg->n++;
    if (d.cls >= 0) seg->cls[d.cls]++;
    if (prev.load_rd >= 0 && (d.reads >> prev.load_rd) & 1) seg->cls[C_LOADUSE]++;
    if (d.jr > 0 && prev.wr == d.jr) seg->cls[C_JRDEP] += 1 + (d.wr == d.jr);
    if (size == 4 && (w & 0x7f) == 0x53 && (w >> 25) == 0x2c) seg->cls[C_FSQRT]++;
    prev = d;
    t->fallthrough = d.branch ? qemu_plugin_insn_vaddr(insn) + size : 0;
    t->ends_jump = d.cls == C_JUMP;
    if (i == 0) t->target32 = size == 4 && (t->vaddr & 3) == 2;
    qemu_plugin_register_vcpu_mem_cb(insn, on_mem, QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, NULL);
  }
  qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, t);
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

static int parse_range(const char *spec, uint64_t *r) {
  char *end;
  r[0] = strtoull(spec, &end, 0);
  if (*end != ':') return fail("range must be START:END", spec);
  r[1] = strtoull(end + 1, &end, 0);
  if (*end || r[1] < r[0]) return fail("bad range end", spec);
  return 0;
}

/* sites=FILE: lines "ADDRESS WORD CHAIN" (hex), addresses and non-zero chain entries ascending */
static int parse_sites(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return fail("cannot open the site table", path);
  unsigned long long a, ch;
  unsigned w;
  size_t cap = 0;
  while (fscanf(f, "%llx %x %llx", &a, &w, &ch) == 3) {
    if (n_sites == cap) {
      cap = cap ? 2 * cap : 256;
      site_addr = realloc(site_addr, cap * sizeof *site_addr);
      site_word = realloc(site_word, cap * sizeof *site_word);
      chain_addr = realloc(chain_addr, cap * sizeof *chain_addr);
      chain_site = realloc(chain_site, cap * sizeof *chain_site);
      if (!site_addr || !site_word || !chain_addr || !chain_site)
        return fail("out of memory reading the site table", path);
    }
    if ((n_sites && a <= site_addr[n_sites - 1]) || (ch && n_chains && ch <= chain_addr[n_chains - 1]))
      return fail("site table not in ascending address order", path);
    if (ch) {
      chain_addr[n_chains] = ch;
      chain_site[n_chains++] = n_sites;
    }
    site_addr[n_sites] = a;
    site_word[n_sites++] = w;
  }
  int bad = !feof(f);
  fclose(f);
  return bad ? fail("malformed site table (expected lines ADDRESS WORD)", path) : 0;
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
    } else if (!strncmp(argv[i], "emu=", 4)) {
      if (parse_range(argv[i] + 4, emu_range)) return -1;
    } else if (!strncmp(argv[i], "emu_mem=", 8)) {
      if (parse_range(argv[i] + 8, emu_mem_range)) return -1;
    } else if (!strncmp(argv[i], "stubs=", 6)) {
      if (parse_range(argv[i] + 6, stub_range)) return -1;
    } else if (!strncmp(argv[i], "sites=", 6)) {
      if (parse_sites(argv[i] + 6)) return -1;
    } else if (!strncmp(argv[i], "l1map=", 6)) {
      uint64_t *v[8] = {&l1map.cores, &l1map.banks, &l1map.bank_bytes, &l1map.banks_per_tile, &l1map.cores_per_tile,
                        &l1map.tiles_per_group, &l1map.local_base, &l1map.local_end};
      char *p = argv[i] + 6, *end;
      for (int k = 0; k < 8; k++, p = end + 1) {
        *v[k] = strtoull(p, &end, 0);
        if (end == p || *end != (k < 7 ? ':' : 0))
          return fail("l1map must be CORES:BANKS:BANK_BYTES:BANKS_PER_TILE:CORES_PER_TILE:TILES_PER_GROUP:LOCAL_BASE:"
                      "LOCAL_END", argv[i]);
      }
      if (!l1map.cores || !l1map.banks || l1map.banks > MAX_L1MAP_BANKS || !l1map.bank_bytes ||
          !l1map.banks_per_tile || !l1map.cores_per_tile || !l1map.tiles_per_group || l1map.local_end < l1map.local_base)
        return fail("l1map: bad values (at most 4096 banks, no zero)", argv[i]);
      l1map.on = 1;
    } else
      return fail("unknown argument (expected out=FILE, region=NAME:BASE:SIZE, emu=START:END, emu_mem=START:END, "
                  "sites=FILE, stubs=START:END, l1map=...)", argv[i]);
  }
  if (!path || !*path) return fail("missing out=FILE", NULL);
  if (info->system_emulation && info->system.max_vcpus > MAX_HARTS) return fail("more than 512 vCPUs", NULL);
  out = fopen(path, "w");
  if (!out) return fail("cannot open the output file", path);
  setvbuf(out, NULL, _IOFBF, 1 << 16);
  for (int r = 0; r < n_regions; r++)
    if (!strcmp(regions[r].name, "L1")) l1_region = r;
  for (int v = 0; v < MAX_HARTS; v++) harts[v].pending_load = -1;
  fprintf(out, "# deeploy-vp-records 3\n# regions");
  for (int r = 0; r < n_regions; r++)
    fprintf(out, " %s:0x%" PRIx64 ":0x%" PRIx64, regions[r].name, regions[r].base, regions[r].size);
  fprintf(out, "\n# columns hart seq marker insns");
  for (int r = 0; r < n_regions; r++) fprintf(out, " %s_ld %s_st", regions[r].name, regions[r].name);
  fprintf(out, " other_ld other_st");
  for (int c = 0; c < N_CLASSES; c++) fprintf(out, " %s", class_names[c]);
  for (int b = 0; b < N_BANKS; b++) fprintf(out, " bank%d", b);
  if (l1map.on) fprintf(out, " l1_group_ld l1_remote_ld");
  fprintf(out, "\n# dma-columns dma hart seq engine index commands rows");
  for (int r = 0; r < n_regions; r++) fprintf(out, " %s_rd %s_wr", regions[r].name, regions[r].name);
  fprintf(out, " other_rd other_wr\n# wait-columns wait hart seq engine transfer retired\n");
  qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
  qemu_plugin_register_atexit_cb(id, on_atexit, NULL);
  return 0;
}
