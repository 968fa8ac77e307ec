# MemPool on the QEMU virtual platform (specs/mempool.md): RV32IMA as the peer compiles it (no C,
# no F, no Xpulpimg; picolibc has no rv32ima multilib, its rv32im libraries are taken), up to 256
# cores (the peer runs 16), the cluster runtime of the Siracusa family (TargetLibraries/Siracusa:
# fork, atomic barrier, sleeping waits, the DMA (1-D) and the tile loop; MemPool's wake-up register
# is the ACLINT's msip here); the L1's 1024 banks in 64 tiles of 16 banks and 4 cores, 16 tiles per
# group. Loaded before project() by the top-level CMakeLists.txt or, as its copy in cmake/, by a
# compiled output's own CMakeLists.txt.
set(VIRT_CLUSTER_ARCH "-march=rv32ima -mabi=ilp32")
set(VIRT_CLUSTER_DEFAULT_CORES 16)
set(VIRT_CLUSTER_MAX_CORES 256)
set(VIRT_CLUSTER_RUNTIME Siracusa)
set(VIRT_CLUSTER_RUNTIME_SOURCES deeploy_runtime.c deeploy_dma.c deeploy_tiling.c)
set(VIRT_CLUSTER_SYMBOLS __deeploy_l1_banks=1024 __deeploy_l1_bank_bytes=4 __deeploy_banks_per_tile=16
    __deeploy_cores_per_tile=4 __deeploy_tiles_per_group=16)
set(VIRT_CLUSTER_LINKER Deeploy.targets.mempool.linker)
include(${CMAKE_CURRENT_LIST_DIR}/VirtCluster.cmake)
add_compile_definitions(DEEPLOY_DMA_1D=1)   # the DMA frontend: 1-D transfers only
