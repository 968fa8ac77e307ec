# Siracusa on the QEMU virtual platform: 8 cluster cores with the PULP DSP extension, the Siracusa
# cluster runtime (fork, barrier, cluster and L3 DMA engines, the tile loop, the extension's QEMU
# emulation) and a generated linker script, on the body shared by the cluster family
# (cmake/VirtCluster.cmake: cross build with picolibc, NUM_CORES, LINKER_SCRIPT,
# deeploy_platform_setup). Loaded before project() by the top-level CMakeLists.txt, by
# TargetLibraries/Siracusa/examples/CMakeLists.txt and, as its copy in cmake/, by a compiled
# output's own CMakeLists.txt (or a firmware project that includes that copy). Facts behind the
# flags: specs/qemu-riscv.md.
#
# rv32imfc/ilp32f: the cluster cores' ISA, single-precision FPU and no A extension (no atomics:
# the runtime synchronises with plain loads and stores); picolibc has no rv32imfc multilib, gcc
# takes its rv32imf one (no atomics either), and QEMU's default rv32 cpu has F. Every hart enables
# its FPU at boot (mstatus.FS).
set(VIRT_CLUSTER_ARCH "-march=rv32imfc -mabi=ilp32f")
set(VIRT_CLUSTER_DEFAULT_CORES 8)
set(VIRT_CLUSTER_MAX_CORES 8)
set(VIRT_CLUSTER_RUNTIME Siracusa)
set(VIRT_CLUSTER_RUNTIME_SOURCES deeploy_runtime.c deeploy_dma.c deeploy_tiling.c deeploy_xpulp_emu.c)
set(VIRT_CLUSTER_SYMBOLS "")
set(VIRT_CLUSTER_LINKER Deeploy.targets.siracusa.linker)
include(${CMAKE_CURRENT_LIST_DIR}/VirtCluster.cmake)
add_compile_definitions(DEEPLOY_XPULP=1)   # the cores have the PULP DSP extension (kernels use deeploy_xpulp.h)
