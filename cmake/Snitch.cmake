# The Snitch cluster on the QEMU virtual platform (specs/snitch.md): 8 compute cores and the
# data-mover core (hart 8, which takes no part in forks), RV32IMAFD with double-precision FPU
# (picolibc's rv32imafd/ilp32d libraries), the TCDM's 32 banks of 64 bits, one tile. Loaded before
# project() by the top-level CMakeLists.txt or, as its copy in cmake/, by a compiled output's own
# CMakeLists.txt.
set(VIRT_CLUSTER_ARCH "-march=rv32imafd -mabi=ilp32d")
set(VIRT_CLUSTER_DEFAULT_CORES 8)
set(VIRT_CLUSTER_MAX_CORES 8)
set(VIRT_CLUSTER_DEFINITIONS DEEPLOY_DM_HARTS=1 DEEPLOY_L1_BANKS=32 DEEPLOY_L1_BANK_BYTES=8)
set(VIRT_CLUSTER_LINKER Deeploy.targets.snitch.linker)
include(${CMAKE_CURRENT_LIST_DIR}/VirtCluster.cmake)
