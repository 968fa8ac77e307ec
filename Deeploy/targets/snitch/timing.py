"""The Snitch cluster's cycle model: the Siracusa family's model (``Deeploy.targets.siracusa.timing``:
the timing plugin's exact per-core counts, forks as barrier-separated phases lasting as long as
their slowest core or their busiest TCDM bank, DMA transfers queued on the engine) with Snitch's
parameters (``specs/snitch.md``).

The plugin runs with ``l1map`` (symbols of cmake/Snitch.cmake: 32 banks of 64 bits, one tile):
each fork phase reports the accesses of its busiest TCDM bank over the 8 compute cores. As on
Snitch, the data-mover core (hart 8) alone programs the DMA: it runs the tile loop, forks each
tile's kernel on the compute cores and, while they compute, prepares the next tile (and prefetches
its inputs when double-buffered); the model runs its work beside the cores' and charges a barrier
for handing it each tiled layer and one for the return.

FREP and the stream registers (SSR) are not executed: an SSR read is an ordinary FP register read,
which QEMU cannot trap, so faithful SSR streams would need a patched QEMU. The kernels are the
portable C ones (explicit loads and stores, loops), correct on any RV32 core; the modelled cycles
are those of Snitch cores running that code without SSR/FREP, i.e. an upper bound of what the SSR
and FREP kernels reach (which issue about one FP operation per cycle and core).
"""

from __future__ import annotations

from Deeploy.targets.siracusa.timing import TimingModel

__all__ = ["SNITCH_TIMING"]

# What differs from Siracusa's TimingModel, and why (sources in specs/snitch.md; [D] the peer's
# repository, [GV] GVSoC's Snitch model, [SC] the snitch_cluster configuration):
#   taken_cycles 1, jump_cycles 1: GUESS (single-issue core, no branch prediction; not found).
#   mulh_cycles 2, div_cycles 2: the peer's Banshee model of the Snitch core charges 3 cycles for
#       mul/mulh*/div/rem ([D] cmake/mempool/mempool.yaml, MemPool's Snitch: the same integer core).
#   load_use_cycles 1: GVSoC's integer load latency 2 [GV].
#   fpu_cycles 2: GVSoC's fmadd/fadd/fmul latency 3 [GV]; charged on every FP operation, i.e. as if
#       each used the previous one's result (an upper bound: independent operations pipeline).
#   fdivsqrt_cycles 10: GVSoC's fdiv latency 11 [GV].
#   fpus 0: every Snitch core has its own FPU (no shared FPU or divider bound) [SC, GV].
#   l1_banks 32: the TCDM's banks [SC] (the phase floor comes from the plugin's l1map lines).
#   l2_latency 8, l2_path_cycles 0.5: GVSoC, the cores reach main memory through the cluster
#       crossbar with latency 8 at 8 bytes per cycle (a word access takes half a cycle) [GV].
#   fork_cycles 50: GUESS (not found). barrier_cycles 5: GUESS, the hardware barrier (CSR 0x7C2)
#       releases the cores a few cycles after the last arrives (not found); also charged for
#       handing a tiled layer to the data-mover core and for its return.
#   dma_bandwidth 64: the 512-bit DMA data path [SC]; dma_setup_cycles 4: Banshee's DRAM latency
#       [SC banshee.yaml] (GVSoC's DMA crossbar adds none); dma_row_cycles 0 (2-D transfers stream
#       their rows); dma_words_1d 3, dma_words_2d 5, dma_issue_word_cycles 1: the data mover
#       programs a copy with one Xdma instruction per word (DMSRC, DMDST, DMCPYI; 2-D adds DMSTR,
#       DMREP) [SC-isa].
# Inherited from Siracusa's core (the CV32E40P) and not found for Snitch, so GUESS here: misaligned
# 1, jrdep 1, fsqrt 18; target32 never applies (RV32IMAFD has no compressed instructions).
SNITCH_TIMING = TimingModel(taken_cycles=1.0, jump_cycles=1.0, mulh_cycles=2.0, div_cycles=2.0, load_use_cycles=1.0,
                            fpu_cycles=2.0, fdivsqrt_cycles=10.0, fpus=0, l1_banks=32, l2_latency=8.0, l2_path_cycles=0.5,
                            fork_cycles=50.0, barrier_cycles=5.0, dma_bandwidth=64.0, dma_setup_cycles=4.0,
                            dma_row_cycles=0.0, dma_issue_word_cycles=1.0, dma_words_1d=3, dma_words_2d=5)
