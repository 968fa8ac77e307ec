/* Cluster runtime of the MemPool target on the QEMU virtual platform
 * (qemu-system-riscv32 -machine virt -smp DEEPLOY_NUM_CORES, semihosting). The memory map is
 * relocated into virt's DRAM (MemPool's L1 at 0x0 clashes with virt's ROM and devices): L2 at
 * 0x80000000, L1 at 0x90000000, by the Siracusa family's generated linker script
 * (Deeploy/targets/siracusa/linker.py, with MemPool's stacks); the cycle model classifies L1
 * addresses into banks, tiles and groups (geometry symbols from cmake/VirtCluster.cmake).
 *
 * Boot: every hart starts at _deeploy_entry. Hart 0 runs picolibc's start-up and main; the
 * constructor clears .l1_bss/.l2_bss, checks the harts, sets the boot flag and wakes the others.
 * Harts 1..DEEPLOY_NUM_CORES-1 take their stack (each core's own, in its tile's sequential region
 * on the hardware) and sleep in the worker loop; the rest are parked. Waits sleep in wfi (mie.MSIE
 * set, interrupts off: the ACLINT's msip, MemPool's wake-up register here, only ends the wfi)
 * inside runtime markers, so they are not counted. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <picotls.h>

#include "mempool_runtime.h"

#if DEEPLOY_NUM_CORES < 1 || DEEPLOY_NUM_CORES > 256
#error "DEEPLOY_NUM_CORES must be 1..256"
#endif

#define STR_(x) #x
#define STR(x) STR_(x)

#define CLINT_MSIP ((volatile uint32_t *)0x02000000u) /* QEMU virt ACLINT: msip of hart h at +4h */
#define MIE_MSIE (1u << 3)
#define BOOT_MAGIC 0xB007F1A6u

extern char __deeploy_max_harts[];
extern char __deeploy_l1_bss_start[], __deeploy_l1_bss_end[];
extern char __deeploy_l2_bss_start[], __deeploy_l2_bss_end[];
extern char __deeploy_l3_bss_start[], __deeploy_l3_bss_end[];
extern char __deeploy_stacks_start[], __deeploy_worker_stack_base[];
extern char __deeploy_main_stack_size[], __deeploy_worker_stack_size[];

__asm__(".pushsection .text.deeploy_entry, \"ax\", @progbits\n"
        ".globl _deeploy_entry\n"
        ".weak _trap\n"
        ".globl __deeploy_num_cores\n" /* absolute symbols the QEMU runner reads */
        ".equ __deeploy_num_cores, " STR(DEEPLOY_NUM_CORES) "\n"
        "_deeploy_entry:\n"
        "  csrr a0, mhartid\n"
        "  bnez a0, 1f\n"
        "  j _start\n"
        "1:\n"
        "  slti x0, x0, " STR(DEEPLOY_RT_BOOT) "\n"
        ".option push\n.option norelax\n  la gp, __global_pointer$\n.option pop\n"
        "  la t0, _trap\n"
        "  csrw mtvec, t0\n"
        "  li t0, " STR(DEEPLOY_NUM_CORES) "\n"
        "  bgeu a0, t0, 2f\n"
        "  lui t0, %hi(__deeploy_max_harts)\n"
        "  addi t0, t0, %lo(__deeploy_max_harts)\n"
        "  bgeu a0, t0, 2f\n"
        "  lui t0, %hi(__deeploy_worker_stack_size)\n"
        "  addi t0, t0, %lo(__deeploy_worker_stack_size)\n"
        "  mul t0, t0, a0\n"
        "  la sp, __deeploy_worker_stack_base\n"
        "  add sp, sp, t0\n"
        "  lui t1, %hi(__tls_size)\n"
        "  addi t1, t1, %lo(__tls_size)\n"
        "  addi t1, t1, 15\n"
        "  andi t1, t1, -16\n"
        "  sub sp, sp, t1\n" /* the TLS block at the top of the stack */
        "  mv tp, sp\n"
        "  j deeploy_worker_main\n"
        "2:\n"
        "  slti x0, x0, " STR(DEEPLOY_RT_PARK) "\n"
        "  csrw mie, zero\n"
        "3:\n"
        "  wfi\n"
        "  j 3b\n"
        ".popsection\n");

typedef struct {
  void (*fn)(void *);
  void *arg;
  uint32_t gen, done, in_fork, bar_count, bar_gen;
} rt_t;

static rt_t rt DEEPLOY_L1;
static volatile uint32_t boot_flag __attribute__((section(".noinit"), used));

static inline uint32_t hart_id(void) {
  uint32_t id;
  __asm__ volatile("csrr %0, mhartid" : "=r"(id));
  return id;
}
uint32_t deeploy_core_id(void) { return hart_id(); }

static inline void fence(void) { __asm__ volatile("fence iorw, iorw" ::: "memory"); }
static inline void wake(uint32_t h) { CLINT_MSIP[h] = 1; }
static inline uint32_t load_acq(uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

#define SLEEP_UNTIL(me, cond)                  \
  do {                                         \
    for (;;) {                                 \
      CLINT_MSIP[me] = 0;                      \
      fence();                                 \
      if (cond) break;                         \
      __asm__ volatile("wfi" ::: "memory");    \
    }                                          \
  } while (0)

void deeploy_exit(int n) { exit(n); }

static void fatal(const char *msg, unsigned a, unsigned b) {
  printf("deeploy runtime error: ");
  printf(msg, a, b);
  printf("\n");
  exit(3);
}

/* Stack overflow check: a canary word at the bottom of every core's stack, set at boot and
 * checked after each fork (outside the counted regions). */
#define STACK_CANARY 0x57AC4ED5u
static inline volatile uint32_t *stack_bottom(uint32_t h) {
  return (volatile uint32_t *)(h == 0 ? __deeploy_stacks_start
                                      : __deeploy_worker_stack_base + (h - 1) * (uintptr_t)__deeploy_worker_stack_size);
}

static void check_stack(uint32_t h) {
  if (*stack_bottom(h) != STACK_CANARY)
    fatal("core %u overflowed its stack (%u bytes): generate the linker script with bigger stacks", h,
          (unsigned)(uintptr_t)(h ? __deeploy_worker_stack_size : __deeploy_main_stack_size));
}

static void __attribute__((constructor)) runtime_init(void) {
  DEEPLOY_MARKER(DEEPLOY_RT_INIT_ENTER);
  memset(__deeploy_l1_bss_start, 0, (size_t)(__deeploy_l1_bss_end - __deeploy_l1_bss_start));
  memset(__deeploy_l2_bss_start, 0, (size_t)(__deeploy_l2_bss_end - __deeploy_l2_bss_start));
  memset(__deeploy_l3_bss_start, 0, (size_t)(__deeploy_l3_bss_end - __deeploy_l3_bss_start));
  if ((uintptr_t)__deeploy_max_harts < DEEPLOY_NUM_CORES)
    fatal("built for %u cores but the linker script reserves stacks for %u harts", DEEPLOY_NUM_CORES,
          (unsigned)(uintptr_t)__deeploy_max_harts);
  for (uint32_t h = 1; h < DEEPLOY_NUM_CORES; h++) { /* a missing hart reads back msip = 0 */
    CLINT_MSIP[h] = 1;
    uint32_t present = CLINT_MSIP[h];
    CLINT_MSIP[h] = 0;
    if (!present)
      fatal("built for %u cores (DEEPLOY_NUM_CORES) but QEMU has only %u harts: run with -smp " STR(DEEPLOY_NUM_CORES),
            DEEPLOY_NUM_CORES, (unsigned)h);
  }
  *stack_bottom(0) = STACK_CANARY;
  __asm__ volatile("csrs mie, %0" ::"r"(MIE_MSIE));
  fence();
  boot_flag = BOOT_MAGIC;
  fence();
  for (uint32_t h = 1; h < DEEPLOY_NUM_CORES; h++) wake(h);
  DEEPLOY_MARKER(DEEPLOY_RT_INIT_LEAVE);
}

void deeploy_worker_main(uint32_t me) __attribute__((noreturn, used));
void deeploy_worker_main(uint32_t me) {
  void *tls;
  __asm__ volatile("mv %0, tp" : "=r"(tls));
  _init_tls(tls);
  *stack_bottom(me) = STACK_CANARY;
  __asm__ volatile("csrs mie, %0" ::"r"(MIE_MSIE));
  SLEEP_UNTIL(me, boot_flag == BOOT_MAGIC);
  uint32_t seen = 0;
  for (;;) {
    uint32_t gen;
    SLEEP_UNTIL(me, (gen = load_acq(&rt.gen)) != seen);
    seen = gen;
    DEEPLOY_MARKER(DEEPLOY_RT_TASK_BEGIN);
    rt.fn(rt.arg);
    DEEPLOY_MARKER(DEEPLOY_RT_TASK_END);
    check_stack(me);
    __atomic_fetch_add(&rt.done, 1, __ATOMIC_RELEASE);
    wake(0);
  }
}

void deeploy_cluster_fork(void (*fn)(void *), void *arg) {
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_ENTER);
  if (hart_id() != 0 || rt.in_fork)
    fatal("deeploy_cluster_fork called from core %u (in a fork: %u); only core 0 outside a fork may fork",
          (unsigned)hart_id(), (unsigned)rt.in_fork);
  rt.in_fork = 1;
#if DEEPLOY_NUM_CORES > 1
  rt.fn = fn;
  rt.arg = arg;
  rt.done = 0;
  __atomic_store_n(&rt.gen, rt.gen + 1, __ATOMIC_RELEASE);
  fence();
  for (uint32_t h = 1; h < DEEPLOY_NUM_CORES; h++) wake(h); /* wake_up_all */
#endif
  DEEPLOY_MARKER(DEEPLOY_RT_TASK_BEGIN);
  fn(arg);
  DEEPLOY_MARKER(DEEPLOY_RT_TASK_END);
#if DEEPLOY_NUM_CORES > 1
  SLEEP_UNTIL(0, load_acq(&rt.done) == DEEPLOY_NUM_CORES - 1);
#endif
  check_stack(0);
  rt.in_fork = 0;
  DEEPLOY_MARKER(DEEPLOY_RT_FORK_LEAVE);
}

void deeploy_cluster_barrier(void) {
  DEEPLOY_MARKER(DEEPLOY_RT_BARRIER_ENTER);
#if DEEPLOY_NUM_CORES > 1
  if (rt.in_fork) {
    uint32_t me = hart_id(), gen = load_acq(&rt.bar_gen);
    if (__atomic_fetch_add(&rt.bar_count, 1, __ATOMIC_ACQ_REL) == DEEPLOY_NUM_CORES - 1) {
      rt.bar_count = 0;
      __atomic_store_n(&rt.bar_gen, gen + 1, __ATOMIC_RELEASE);
      fence();
      for (uint32_t h = 0; h < DEEPLOY_NUM_CORES; h++)
        if (h != me) wake(h);
    } else {
      SLEEP_UNTIL(me, load_acq(&rt.bar_gen) != gen);
    }
  }
#endif
  DEEPLOY_MARKER(DEEPLOY_RT_BARRIER_LEAVE);
}
