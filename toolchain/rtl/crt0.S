/* Start-up of a bare-metal program on the CV32E40P simulator (toolchain/rtl/tb.cpp, memory map
 * in link.ld): stack, FPU on, .bss cleared (the testbench loads .data in place), the event
 * counters mhpmcounter3..16 set to events 2..15 and every counter enabled, then main; main's
 * return value is the exit code. A trap ends the run with exit code 0x80 | mcause. */
  .section .text.init, "ax"
  .globl _start
_start:
  .option push
  .option norelax
  la gp, __global_pointer$
  .option pop
  la sp, __stack_top
  la t0, trap
  csrw mtvec, t0
  li t0, 0x2000            /* mstatus.FS = initial */
  csrs mstatus, t0
  csrw fcsr, zero
  la a0, __bss_start
  la a1, __bss_end
1:bgeu a0, a1, 2f
  sw zero, 0(a0)
  addi a0, a0, 4
  j 1b
2:li t0, 1 << 2
  .irp n, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
  csrw mhpmevent\n, t0
  slli t0, t0, 1
  .endr
  csrw mcountinhibit, zero
  li a0, 0
  li a1, 0
  call main
exit:
  li t0, 0x20000004
  sw a0, 0(t0)
3:j 3b

  .align 2
trap:
  csrr a0, mcause
  andi a0, a0, 0x7f
  ori a0, a0, 0x80
  j exit
