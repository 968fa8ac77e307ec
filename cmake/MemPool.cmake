# MemPool on the QEMU virtual platform (specs/mempool.md): RV32IMA as the peer compiles it (no C,
# no F, no Xpulpimg; picolibc has no rv32ima multilib, its rv32im libraries are taken), up to 256
# cores (the peer runs 16), the L1's 1024 banks in 64 tiles of 16 banks and 4 cores, 16 tiles per
# group. Loaded before project() by the top-level CMakeLists.txt or, as its copy in cmake/, by a
# compiled output's own CMakeLists.txt.
set(VIRT_CLUSTER_ARCH "-march=rv32ima -mabi=ilp32")
set(VIRT_CLUSTER_DEFAULT_CORES 16)
set(VIRT_CLUSTER_MAX_CORES 256)
set(VIRT_CLUSTER_DEFINITIONS DEEPLOY_L1_BANKS=1024 DEEPLOY_BANKS_PER_TILE=16 DEEPLOY_CORES_PER_TILE=4
    DEEPLOY_TILES_PER_GROUP=16)
set(VIRT_CLUSTER_LINKER Deeploy.targets.mempool.linker)
include(${CMAKE_CURRENT_LIST_DIR}/VirtCluster.cmake)
