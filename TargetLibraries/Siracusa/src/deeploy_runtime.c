/* Cluster runtime of the Siracusa target on the QEMU virtual platform
 * (qemu-system-riscv32 -machine virt -smp DEEPLOY_NUM_CORES, semihosting; see
 * Deeploy/targets/siracusa/linker.py for the memory map).
 *
 * Boot: every hart starts at the ELF entry (_deeploy_entry, first in L2). Hart 0 (fabric
 * controller and cluster core 0) checks that QEMU's RAM holds the memory map (else it prints why
 * and exits with 1 instead of faulting on a missing level), then runs picolibc's start-up (crt0-semihost: data, bss, TLS,
 * constructors) and main. The constructor below clears .l1_bss/.l2_bss/.l3_bss, checks that QEMU has
 * the harts the build expects, then sets the boot flag (.noinit) and wakes the workers.
 * Worker harts 1..DEEPLOY_NUM_CORES-1 (and the data-mover core DEEPLOY_DM_CORE, when built with
 * one) set gp, mtvec, the FPU state (mstatus.FS, when built with
 * F), their stack (L1) and a TLS block at its top, wait for the boot flag and then sleep in the worker loop. Harts beyond
 * DEEPLOY_NUM_CORES (or beyond the stacks the linker script reserves) are parked, except the
 * data-mover core.
 *
 * Data-mover core (Snitch, DEEPLOY_DM_CORE = its hart): a hart beyond the compute cores that runs
 * what hart 0 hands it (deeploy_dm_call: the tile loop, which alone programs the DMA) while hart 0
 * computes as one of the compute cores. It forks the kernels without taking part
 * (deeploy_cluster_fork_begin) and works on (next tile's transfers) until it joins them
 * (deeploy_cluster_join).
 *
 * Waiting never spins: a waiting hart clears its own CLINT msip, re-checks its condition and
 * sleeps in wfi; mie.MSIE is set and mstatus.MIE stays 0, so a software interrupt (msip = 1,
 * written by the hart that changed the condition) only ends the wfi: no trap handler.
 * Every wait is inside runtime markers (deeploy_runtime.h) so that the timing plugin does not
 * count it.
 *
 * Synchronisation needs no atomics (the cluster cores have no A extension): as with the event
 * unit, every core signals its own arrival in a word only it writes (a fork's done flag, a
 * barrier's arrival count), with plain loads and stores ordered by fences, and the waiting cores
 * read all the flags. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <picotls.h>

#include "deeploy_runtime.h"

#if DEEPLOY_NUM_CORES < 1 || DEEPLOY_NUM_CORES > 512
#error "DEEPLOY_NUM_CORES must be 1..512 (QEMU virt's harts)"
#endif
#if defined(DEEPLOY_DM_CORE) && (DEEPLOY_DM_CORE < DEEPLOY_NUM_CORES || DEEPLOY_DM_CORE > 511)
#error "DEEPLOY_DM_CORE must be a hart beyond the compute cores (DEEPLOY_NUM_CORES..511)"
#endif

#define DEEPLOY_STR_(x) #x
#define DEEPLOY_STR(x) DEEPLOY_STR_(x)

#define CLINT_MSIP ((volatile uint32_t *)0x02000000u) /* QEMU virt ACLINT: msip of hart h at +4h */
#define MIE_MSIE (1u << 3)
#define BOOT_MAGIC 0xB007F1A6u

/* From the generated linker script. */
extern char __deeploy_max_harts[];
extern char __deeploy_l1_bss_start[], __deeploy_l1_bss_end[];
extern char __deeploy_l2_bss_start[], __deeploy_l2_bss_end[];
extern char __deeploy_l3_bss_start[], __deeploy_l3_bss_end[];
extern char __deeploy_stacks_start[], __deeploy_worker_stack_base[];
extern char __deeploy_main_stack_size[], __deeploy_worker_stack_size[];

/* ---- entry: every hart, a0 = hart id ------------------------------------------------------- */
__asm__(
    ".pushsection .text.deeploy_entry, \"ax\", @progbits\n"
    ".globl _deeploy_entry\n"
    ".type _deeploy_entry, @function\n"
    ".weak _trap\n"
    ".globl __deeploy_num_cores\n" /* absolute symbol: lets the QEMU runner check -smp */
    ".equ __deeploy_num_cores, " DEEPLOY_STR(DEEPLOY_NUM_CORES) "\n"
    "_deeploy_entry:\n"
    "  csrr a0, mhartid\n"
    "  bnez a0, 1f\n"
    "  lui t0, %hi(__deeploy_ram_needed)\n" /* QEMU passes in a1 the device tree's address, */
    "  addi t0, t0, %lo(__deeploy_ram_needed)\n" /* just below the end of its RAM (-m) */
    "  bltu a1, t0, 4f\n"
    "  j _start\n" /* hart 0: picolibc start-up, constructors, main, exit */
    "1:\n"
    "  slti x0, x0, " DEEPLOY_STR(DEEPLOY_RT_BOOT) "\n"
    ".option push\n"
    ".option norelax\n"
    "  la gp, __global_pointer$\n"
    ".option pop\n"
#ifdef DEEPLOY_XPULP
    "  la t0, deeploy_xpulp_trap\n" /* PULP extension emulation, else picolibc's trap report */
    "  csrw mtvec, t0\n"
#endif
#ifdef __riscv_flen
    "  lui t0, 0x2\n" /* mstatus.FS = Initial: the FPU is off at reset (hart 0: picolibc) */
    "  csrs mstatus, t0\n"
    "  csrw fcsr, zero\n"
#endif
#ifdef DEEPLOY_DM_CORE
    "  li t0, " DEEPLOY_STR(DEEPLOY_DM_CORE) "\n" /* the data-mover core: a stack, then its loop */
    "  beq a0, t0, 5f\n"
#endif
    "  li t0, " DEEPLOY_STR(DEEPLOY_NUM_CORES) "\n"
    "  bgeu a0, t0, 2f\n"
    "5:\n"
    "  lui t0, %hi(__deeploy_max_harts)\n"
    "  addi t0, t0, %lo(__deeploy_max_harts)\n"
    "  bgeu a0, t0, 2f\n"
    "  lui t0, %hi(__deeploy_worker_stack_size)\n"
    "  addi t0, t0, %lo(__deeploy_worker_stack_size)\n"
    "  mul t0, t0, a0\n"
    "  la sp, __deeploy_worker_stack_base\n"
    "  add sp, sp, t0\n" /* top of this hart's stack */
    "  lui t1, %hi(__tls_size)\n"
    "  addi t1, t1, %lo(__tls_size)\n"
    "  addi t1, t1, 15\n"
    "  andi t1, t1, -16\n"
    "  sub sp, sp, t1\n" /* the TLS block sits at the top of the stack */
    "  mv tp, sp\n"
    "  j deeploy_worker_main\n"
    "2:\n"
    "  slti x0, x0, " DEEPLOY_STR(DEEPLOY_RT_PARK) "\n"
    "  csrw mie, zero\n"
    "3:\n"
    "  wfi\n"
    "  j 3b\n"
    "4:\n" /* too little RAM for the memory map (nothing above L2's start is usable): say so, exit 1 */
    "  li a0, 0x04\n" /* semihosting SYS_WRITE0 */
    "  la a1, deeploy_ram_message\n"
    ".option push\n"
    ".option norvc\n"
    ".balign 16\n"
    "  slli x0, x0, 0x1f\n"
    "  ebreak\n"
    "  srai x0, x0, 7\n"
    "  li a0, 0x18\n" /* SYS_EXIT, ADP_Stopped_RunTimeErrorUnknown: exit code 1 */
    "  li a1, 0x20023\n"
    "  slli x0, x0, 0x1f\n"
    "  ebreak\n"
    "  srai x0, x0, 7\n"
    ".option pop\n"
    "  j 3b\n"
    "deeploy_ram_message:\n"
    "  .asciz \"deeploy runtime error: QEMU's RAM (-m) ends below this program's memory; run it with the -m "
    "of `cmake --build <build> --target run`, which prints the QEMU command\\n\"\n"
    ".size _deeploy_entry, . - _deeploy_entry\n"
    ".popsection\n");

/* ---- shared state (cluster-local: L1) ------------------------------------------------------ */
typedef struct {
  void (*fn)(void *);
  void *arg;
  uint32_t gen;                         /* fork generation: workers run when it changes */
  uint32_t in_fork;                     /* a fork is running (its forker has not joined yet) */
  uint32_t done[DEEPLOY_NUM_CORES];     /* per core: the last fork generation it finished */
  uint32_t arrived[DEEPLOY_NUM_CORES];  /* per core: barriers it has arrived at (wraps) */
#ifdef DEEPLOY_DM_CORE
  uint32_t forker;                      /* the hart that forked (0, or the data-mover core) */
  void (*dm_fn)(const void *);          /* hart 0's call to the data-mover core */
  const void *dm_arg;
  uint32_t dm_gen, dm_done;             /* calls handed / returned */
#endif
} deeploy_rt_t;

static deeploy_rt_t deeploy_rt DEEPLOY_L1;
#ifdef DEEPLOY_DM_CORE
#define FORKER deeploy_rt.forker
#else
#define FORKER 0u /* only hart 0 forks */
#endif
static volatile uint32_t deeploy_boot_flag __attribute__((section(".noinit"), used));

static inline uint32_t hart_id(void) {
  uint32_t id;
  __asm__ volatile("csrr %0, mhartid" : "=r"(id));
  return id;
}

uint32_t deeploy_core_id(void) { return hart_id(); }

static inline void fence(void) { __asm__ volatile("fence iorw, iorw" ::: "memory"); }
static inline void wake(uint32_t hart) { CLINT_MSIP[hart] = 1; }
static inline void sleep_prepare(uint32_t me) {
  CLINT_MSIP[me] = 0; /* a wake-up sent after this point leaves msip set: wfi returns at once */
  fence();
}
static inline void sleep_once(void) { __asm__ volatile("wfi" ::: "memory"); }
/* Plain word accesses with fences: no read-modify-write atomics. */
static inline uint32_t load_acquire(const volatile uint32_t *p) {
  uint32_t v = *p;
  __asm__ volatile("fence r, rw" ::: "memory");
  return v;
}
static inline void store_release(volatile uint32_t *p, uint32_t v) {
  __asm__ volatile("fence rw, w" ::: "memory");
  *p = v;
}
/* Whether every core's flag has reached n (flags count up: a core is at most one ahead). */
static inline int all_reached(const volatile uint32_t *flags, uint32_t first, uint32_t n) {
  for (uint32_t h = first; h < DEEPLOY_NUM_CORES; h++)
    if ((int32_t)(load_acquire(&flags[h]) - n) < 0) return 0;
  return 1;
}

/* Sleep until cond holds; never spins: each failed check is followed by a wfi. */
#define DEEPLOY_SLEEP_UNTIL(me, cond) \
  do {                                \
    for (;;) {                        \
      sleep_prepare(me);              \
      if (cond) break;                \
      sleep_once();                   \
    }                                 \
  } while (0)

void deeploy_exit(int n) { exit(n); }

/* Stack overflow check: a canary word at the bottom of every core's stack, set at boot and
 * checked after each fork (outside the counted regions). Core h's stack sits right above core
 * h-1's, so an overflow would silently corrupt a neighbour's frames. */
#define STACK_CANARY 0x57AC4ED5u
static inline volatile uint32_t *stack_bottom(uint32_t h) {
  return (volatile uint32_t *)(h == 0 ? __deeploy_stacks_start
                                      : __deeploy_worker_stack_base + (h - 1) * (uintptr_t)__deeploy_worker_stack_size);
}
static void check_stack(uint32_t h);

static void deeploy_fatal(const char *msg, unsigned a, unsigned b) {
  printf("deeploy runtime error: ");
  printf(msg, a, b);
  printf("\n");
  exit(3);
}

static void check_stack(uint32_t h) {
  if (*stack_bottom(h) != STACK_CANARY)
    deeploy_fatal("core %u overflowed its stack (%u bytes): generate the linker script with bigger stacks", h,
                  (unsigned)(uintptr_t)(h ? __deeploy_worker_stack_size : __deeploy_main_stack_size));
}

#ifdef DEEPLOY_XPULP
void deeploy_xpulp_trap(void); /* deeploy_xpulp_emu.c: the cores of the platform have the PULP extension */
#endif

/* ---- hart 0: before main ------------------------------------------------------------------- */
static void __attribute__((constructor)) deeploy_runtime_init(void) {
  DEEPLOY_MARKER(DEEPLOY_RT_INIT_ENTER); /* start-up is not counted (and touches the CLINT) */
  memset(__deeploy_l1_bss_start, 0, (size_t)(__deeploy_l1_bss_end - __deeploy_l1_bss_start));
  memset(__deeploy_l2_bss_start, 0, (size_t)(__deeploy_l2_bss_end - __deeploy_l2_bss_start));
  memset(__deeploy_l3_bss_start, 0, (size_t)(__deeploy_l3_bss_end - __deeploy_l3_bss_start));
  if ((uintptr_t)__deeploy_max_harts < DEEPLOY_NUM_CORES)
    deeploy_fatal("built for %u cores but the linker script reserves stacks for %u harts",
                  DEEPLOY_NUM_CORES, (unsigned)(uintptr_t)__deeploy_max_harts);
  /* A hart QEMU does not have reads back msip = 0: fail instead of hanging in the first fork. */
  for (uint32_t h = 1; h < DEEPLOY_NUM_CORES; h++) {
    CLINT_MSIP[h] = 1;
    uint32_t present = CLINT_MSIP[h];
    CLINT_MSIP[h] = 0;
    if (!present)
      deeploy_fatal("built for %u cores (DEEPLOY_NUM_CORES) but QEMU has only %u harts: run with -smp "
                    DEEPLOY_STR(DEEPLOY_NUM_CORES), DEEPLOY_NUM_CORES, (unsigned)h);
  }
#ifdef DEEPLOY_DM_CORE
  if ((uintptr_t)__deeploy_max_harts <= DEEPLOY_DM_CORE)
    deeploy_fatal("the data-mover core is hart %u but the linker script reserves stacks for %u harts",
                  DEEPLOY_DM_CORE, (unsigned)(uintptr_t)__deeploy_max_harts);
  CLINT_MSIP[DEEPLOY_DM_CORE] = 1;
  if (!CLINT_MSIP[DEEPLOY_DM_CORE])
    deeploy_fatal("the data-mover core is hart %u but QEMU has fewer harts: run with -smp %u", DEEPLOY_DM_CORE,
                  DEEPLOY_DM_CORE + 1);
  CLINT_MSIP[DEEPLOY_DM_CORE] = 0;
#endif
  *stack_bottom(0) = STACK_CANARY;
#ifdef DEEPLOY_XPULP
  __asm__ volatile("csrw mtvec, %0" ::"r"(deeploy_xpulp_trap)); /* as the workers (entry above) */
#endif
  __asm__ volatile("csrs mie, %0" ::"r"(MIE_MSIE));
  fence();
  deeploy_boot_flag = BOOT_MAGIC;
  fence();
  for (uint32_t h = 1; h < DEEPLOY_NUM_CORES; h++) wake(h);
#ifdef DEEPLOY_DM_CORE
  wake(DEEPLOY_DM_CORE);
#endif
  DEEPLOY_MARKER(DEEPLOY_RT_INIT_LEAVE);
}

/* ---- worker harts -------------------------------------------------------------------------- */
/* Runs fork generation gen's task on core me, then reports it done to the forker. */
static void run_task(uint32_t me, uint32_t gen) {
  void (*fn)(void *) = deeploy_rt.fn;
  void *arg = deeploy_rt.arg;
  DEEPLOY_MARKER(DEEPLOY_RT_TASK_BEGIN);
  fn(arg);
  DEEPLOY_MARKER(DEEPLOY_RT_TASK_END);
  check_stack(me);
  store_release(&deeploy_rt.done[me], gen);
  fence();
  wake(FORKER); /* every core wakes the forker: the same instructions whoever finishes last */
}

#ifdef DEEPLOY_DM_CORE
static void __attribute__((noreturn)) dm_main(uint32_t me);
#endif

void deeploy_worker_main(uint32_t me) __attribute__((noreturn, used));
void deeploy_worker_main(uint32_t me) {
  /* still inside the BOOT wait region (not counted) */
  void *tls;
  __asm__ volatile("mv %0, tp" : "=r"(tls)); /* set by the entry code */
  _init_tls(tls);
  *stack_bottom(me) = STACK_CANARY;
  __asm__ volatile("csrs mie, %0" ::"r"(MIE_MSIE));
  DEEPLOY_SLEEP_UNTIL(me, deeploy_boot_flag == BOOT_MAGIC);
#ifdef DEEPLOY_DM_CORE
  if (me == DEEPLOY_DM_CORE) dm_main(me);
#endif
  uint32_t seen = 0; /* generation of the last fork run; the forker cannot start the next one
                        before every worker has finished this one */
  for (;;) {
    uint32_t gen;
    DEEPLOY_SLEEP_UNTIL(me, (gen = load_acquire(&deeploy_rt.gen)) != seen);
    seen = gen;
    run_task(me, gen);
  }
}

/* ---- fork / barrier ------------------------------------------------------------------------ */
void deeploy_cluster_fork(void (*fn)(void *), void *arg) {
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_ENTER);
  if (hart_id() != 0 || deeploy_rt.in_fork)
    deeploy_fatal("deeploy_cluster_fork called from core %u (in a fork: %u); only core 0 outside a fork may fork",
                  (unsigned)hart_id(), (unsigned)deeploy_rt.in_fork);
  deeploy_rt.in_fork = 1;
#ifdef DEEPLOY_DM_CORE
  deeploy_rt.forker = 0;
#endif
#if DEEPLOY_NUM_CORES > 1
  deeploy_rt.fn = fn;
  deeploy_rt.arg = arg;
  store_release(&deeploy_rt.gen, deeploy_rt.gen + 1);
  fence();
  for (uint32_t h = 1; h < DEEPLOY_NUM_CORES; h++) wake(h);
#endif
  DEEPLOY_MARKER(DEEPLOY_RT_TASK_BEGIN);
  fn(arg);
  DEEPLOY_MARKER(DEEPLOY_RT_TASK_END);
#if DEEPLOY_NUM_CORES > 1
  DEEPLOY_SLEEP_UNTIL(0, all_reached(deeploy_rt.done, 1, deeploy_rt.gen));
#endif
  check_stack(0);
  deeploy_rt.in_fork = 0;
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_LEAVE);
}

void deeploy_cluster_barrier(void) {
  DEEPLOY_MARKER(DEEPLOY_RT_BARRIER_ENTER);
#if DEEPLOY_NUM_CORES > 1
  if (deeploy_rt.in_fork) { /* outside a fork only core 0 runs: nothing to wait for */
    /* Arrive (only this core writes its count), then leave once every core has arrived. The
     * core that sees the last arrival (with the fences, at least one does) wakes the others. */
    uint32_t me = hart_id();
    uint32_t n = deeploy_rt.arrived[me] + 1;
    store_release(&deeploy_rt.arrived[me], n);
    fence();
    if (all_reached(deeploy_rt.arrived, 0, n)) {
      for (uint32_t h = 0; h < DEEPLOY_NUM_CORES; h++)
        if (h != me) wake(h);
    } else {
      DEEPLOY_SLEEP_UNTIL(me, all_reached(deeploy_rt.arrived, 0, n));
    }
  }
#endif
  DEEPLOY_MARKER(DEEPLOY_RT_BARRIER_LEAVE);
}

#ifdef DEEPLOY_DM_CORE
/* ---- the data-mover core ------------------------------------------------------------------- */
static void dm_main(uint32_t me) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen;
    DEEPLOY_SLEEP_UNTIL(me, (gen = load_acquire(&deeploy_rt.dm_gen)) != seen);
    seen = gen;
    DEEPLOY_MARKER(DEEPLOY_RT_DM_RUN_BEGIN);
    deeploy_rt.dm_fn(deeploy_rt.dm_arg);
    DEEPLOY_MARKER(DEEPLOY_RT_DM_RUN_END);
    check_stack(me);
    store_release(&deeploy_rt.dm_done, gen);
    fence();
    wake(0);
  }
}

void deeploy_dm_call(void (*fn)(const void *), const void *arg) {
  DEEPLOY_MARKER(DEEPLOY_RT_DM_CALL_ENTER);
  if (hart_id() != 0 || deeploy_rt.in_fork)
    deeploy_fatal("deeploy_dm_call called from core %u (in a fork: %u); only core 0 outside a fork may call",
                  (unsigned)hart_id(), (unsigned)deeploy_rt.in_fork);
  deeploy_rt.dm_fn = fn;
  deeploy_rt.dm_arg = arg;
  const uint32_t call = deeploy_rt.dm_gen + 1;
  store_release(&deeploy_rt.dm_gen, call);
  fence();
  wake(DEEPLOY_DM_CORE);
  /* core 0 computes the data mover's forks, as the other compute cores, until the call returns */
  uint32_t seen = deeploy_rt.gen, gen;
  for (;;) {
    DEEPLOY_SLEEP_UNTIL(0, (gen = load_acquire(&deeploy_rt.gen)) != seen ||
                               load_acquire(&deeploy_rt.dm_done) == call);
    if (gen == seen) break;
    seen = gen;
    run_task(0, gen);
  }
  DEEPLOY_MARKER(DEEPLOY_RT_DM_CALL_LEAVE);
}

void deeploy_cluster_fork_begin(void (*fn)(void *), void *arg) {
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_ENTER);
  if (hart_id() != DEEPLOY_DM_CORE || deeploy_rt.in_fork)
    deeploy_fatal("deeploy_cluster_fork_begin called from core %u (in a fork: %u); only the data mover outside a "
                  "fork may",
                  (unsigned)hart_id(), (unsigned)deeploy_rt.in_fork);
  deeploy_rt.in_fork = 1;
  deeploy_rt.forker = DEEPLOY_DM_CORE;
  deeploy_rt.fn = fn;
  deeploy_rt.arg = arg;
  store_release(&deeploy_rt.gen, deeploy_rt.gen + 1);
  fence();
  for (uint32_t h = 0; h < DEEPLOY_NUM_CORES; h++) wake(h);
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_RUN);
}

void deeploy_cluster_join(void) {
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_JOIN);
  DEEPLOY_SLEEP_UNTIL(DEEPLOY_DM_CORE, all_reached(deeploy_rt.done, 0, deeploy_rt.gen));
  deeploy_rt.in_fork = 0;
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_LEAVE);
}
#endif
