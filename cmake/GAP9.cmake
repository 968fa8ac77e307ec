# The GAP9 cluster on the QEMU virtual platform (specs/gap9.md): 8 worker cores and the cluster
# controller (hart 8: QEMU runs it, the runtime parks it), RV32IMFC as Siracusa (GAP9's FP in the
# integer registers needs a Zfinx toolchain: GCC 12 emits soft-float calls for it and picolibc has no
# such multilib; picolibc's rv32imf libraries are taken), the Siracusa family's cluster runtime with
# its PULP-extension emulation (TargetLibraries/Siracusa: fork, barrier, cluster and L3 DMA engines,
# the tile loop); the TCDM's 16 banks (banking factor 2 x 8 workers) in one tile. Loaded before
# project() by the top-level CMakeLists.txt or, as its copy in cmake/, by a compiled output's own
# CMakeLists.txt.
set(VIRT_CLUSTER_ARCH "-march=rv32imfc -mabi=ilp32f")
set(VIRT_CLUSTER_DEFAULT_CORES 8)
set(VIRT_CLUSTER_MAX_CORES 8)
set(VIRT_CLUSTER_RUNTIME Siracusa)
set(VIRT_CLUSTER_RUNTIME_SOURCES deeploy_runtime.c deeploy_dma.c deeploy_tiling.c deeploy_xpulp_emu.c)
set(VIRT_CLUSTER_SYMBOLS __deeploy_num_harts=9 __deeploy_l1_banks=16 __deeploy_l1_bank_bytes=4
    __deeploy_banks_per_tile=16 __deeploy_cores_per_tile=9 __deeploy_tiles_per_group=1)
set(VIRT_CLUSTER_LINKER Deeploy.targets.gap9.linker)
include(${CMAKE_CURRENT_LIST_DIR}/VirtCluster.cmake)
add_compile_definitions(DEEPLOY_XPULP=1)   # the cores have the PULP DSP extension (kernels use deeploy_xpulp.h)
