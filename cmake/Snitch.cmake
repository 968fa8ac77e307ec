# The Snitch cluster on the QEMU virtual platform (specs/snitch.md): 8 compute cores and the
# data-mover core (hart 8, DEEPLOY_DM_CORE: it runs the tile loop and alone programs the DMA),
# RV32IMAFD (picolibc's rv32imafd/ilp32d libraries), the cluster runtime of the Siracusa family
# (TargetLibraries/Siracusa: fork, barrier, DMA engines, the tile loop); the TCDM's 32 banks of 64
# bits in one tile. Loaded before project() by the top-level CMakeLists.txt or, as its copy in
# cmake/, by a compiled output's own CMakeLists.txt.
set(VIRT_CLUSTER_ARCH "-march=rv32imafd -mabi=ilp32d")
set(VIRT_CLUSTER_DEFAULT_CORES 8)
set(VIRT_CLUSTER_MAX_CORES 8)
set(VIRT_CLUSTER_RUNTIME Siracusa)
set(VIRT_CLUSTER_RUNTIME_SOURCES deeploy_runtime.c deeploy_dma.c deeploy_tiling.c)
set(VIRT_CLUSTER_SYMBOLS __deeploy_num_harts=9 __deeploy_l1_banks=32 __deeploy_l1_bank_bytes=8
    __deeploy_banks_per_tile=32 __deeploy_cores_per_tile=9 __deeploy_tiles_per_group=1)
set(VIRT_CLUSTER_LINKER Deeploy.targets.snitch.linker)
include(${CMAKE_CURRENT_LIST_DIR}/VirtCluster.cmake)
add_compile_definitions(DEEPLOY_DM_CORE=8)
