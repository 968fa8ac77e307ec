"""The GAP9 cluster's cycle model: the Siracusa family's model (``Deeploy.targets.siracusa.timing``:
the timing plugin's exact per-core counts, forks as barrier-separated phases lasting as long as
their slowest core, busiest TCDM bank or busiest shared FPU, DMA transfers queued on their engine)
with GAP9's parameters. Sources in ``specs/gap9.md`` ([GS] the public gap_sdk GAP9 config, [PS]
pulp-sdk, [GV] GVSoC, [L] Linley, [CV] the CV32E40P pipeline); "not found" marks a value no public
source gives, taken from the same PULP cluster as Siracusa's.

The cluster cores are the same RI5CY class as Siracusa's (``ri5ky_v2_6_sfloat_single_regfile``
[GS, PS]), so every per-instruction cost is Siracusa's (CV32E40P pipeline [CV]: taken branch 2,
jump 1, load-use 1 extra cycles; XpulpV2 SIMD 4 int8 MACs per instruction [L]). FP operands live in
the integer registers on GAP9; the virtual platform runs RV32IMFC (GCC 12 accepts
``-march=rv32imc_zfinx`` but emits soft-float calls, and picolibc has no Zfinx multilib), so the
model charges FP arithmetic as GAP9 executes it and counts flw/fsw as the word loads/stores GAP9
does instead.
"""

from __future__ import annotations

from Deeploy.targets.siracusa.timing import TimingModel

__all__ = ["GAP9_TIMING"]

# What GAP9's model sets, and why (every other parameter: Siracusa's, see above):
#   fpus 4: GAP9's cores share their FPUs (``--shared-fpu`` of the core model [PS core json]); their
#       number is not found: 4 for the 8 workers, core i on FPU i % 4, as GVSoC's shared-FPU cluster
#       ("share fpu at cluster level") and the pulp_cluster RTL's shared option model it
#       (specs/pulp-core.md); one div/sqrt unit for the cluster (fdivsqrt_cycles 14, Siracusa's RTL value).
#   l1_banks 16: the TCDM's ``banking_factor: 2`` [GS] over the 8 worker cores (derived; the bank
#       count itself is not found), word-interleaved, one access per bank and cycle.
#   l2_latency 14, l2_path_cycles 1: not found for GAP9 (spec §2): the PULP cluster-to-SoC path of
#       Siracusa's model (cluster interconnect 2 + SoC router 12, GVSoC).
#   fork_cycles 50, barrier_cycles 11: GAP9 has the same event unit v3 [GS, GV eu_v3.h]; fork cost
#       not found (Siracusa's GUESS), hardware barrier 11 cycles (Glaser et al., DATE 2019).
#   dma_*: the cluster DMA is MCHAN v7 as on Siracusa [GS, GV mchan_v7.py]: 8 B/cycle per direction
#       (4 TCDM ports, 2 per direction), 14 cycles set-up, 3 command words for 1-D, 5 for 2-D
#       (``mchan.h``: command word, local, external address, row length, row stride).
#   l3_*: L3 is OctaSPI PSRAM behind the SoC's uDMA, copied with the blocking ``pi_cl_ram_copy_2d``
#       [D GAP9/DMA]; bandwidth 2 B/cycle: 8 data lines at double data rate (derived, peripheral
#       clock = cluster clock, GUESS); per transaction 4 cycles of command and address (2 command
#       + 4 address bytes over 8 DDR lines, plus chip select: derived) and a 12-cycle initial
#       latency (GUESS, PSRAM latency not found); set-up 14 and 14 cycles per programmed register word
#       (SoC peripheral stores, as on Siracusa: GUESS).
GAP9_TIMING = TimingModel(fpus=4, l1_banks=16, l2_latency=14.0, l2_path_cycles=1.0, fork_cycles=50.0,
                          barrier_cycles=11.0, dma_setup_cycles=14.0, dma_bandwidth=8.0, dma_issue_word_cycles=1.0,
                          l3_dma_setup_cycles=14.0, l3_dma_bandwidth=2.0, l3_dma_command_cycles=4.0,
                          l3_dma_latency_cycles=12.0, l3_dma_issue_word_cycles=14.0)
