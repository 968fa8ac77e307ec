# Siracusa on the QEMU virtual platform: RV32 bare-metal cross build with picolibc
# (semihosting start-up, printf and exit), the Siracusa cluster runtime and a generated linker
# script. Loaded before project() by the top-level CMakeLists.txt, by
# TargetLibraries/Siracusa/examples/CMakeLists.txt and, as its copy in cmake/, by a compiled
# output's own CMakeLists.txt (or a firmware project that includes that copy).
#
# Cache variables:
#   NUM_CORES      cluster cores used (DEEPLOY_NUM_CORES, 1..8); run QEMU with -smp NUM_CORES
#   LINKER_SCRIPT  the generated linker script (Deeploy.targets.siracusa.linker.linker_script);
#                  default: a compiled output's link.ld; in the repository empty: Siracusa's
#                  default levels, generated into the build folder
#
# After the targets exist, deeploy_platform_setup(LIBRARIES <libs> EXECUTABLES <exes>) adds the
# runtime include folder to every target and the runtime sources (cluster runtime, DMA engines;
# or the prebuilt objects in DEEPLOY_RUNTIME_OBJECTS), the linker script and a map file to the
# executables. Facts behind the flags: specs/qemu-riscv.md.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)   # no linker script yet at compiler checks

find_program(SIRACUSA_CC riscv64-unknown-elf-gcc)
if(NOT SIRACUSA_CC)
  message(FATAL_ERROR "riscv64-unknown-elf-gcc not found: install the RISC-V bare-metal toolchain (Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf; in a Deeploy checkout: bash toolchain/install.sh)")
endif()
set(CMAKE_C_COMPILER ${SIRACUSA_CC})

# rv32imfc/ilp32f: the cluster cores' ISA, single-precision FPU and no A extension (no atomics:
# the runtime synchronises with plain loads and stores); picolibc has no rv32imfc multilib, gcc
# takes its rv32imf one (no atomics either), and QEMU's default rv32 cpu has F. -misa-spec=2.2
# keeps csr instructions without the _zicsr suffix that would break the multilib lookup. Every
# hart enables its FPU at boot (mstatus.FS).
set(SIRACUSA_ARCH_FLAGS "-march=rv32imfc -mabi=ilp32f -misa-spec=2.2 --specs=picolibc.specs")
set(CMAKE_C_FLAGS_INIT "${SIRACUSA_ARCH_FLAGS}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--crt0=semihost --oslib=semihost")
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_BUILD_TYPE Release CACHE STRING "" FORCE)
# picolibc's memcpy and memset move one byte per loop trip: short copy loops (the tile loop's
# boxes, a kernel's row) must not become calls to them.
set(CMAKE_C_FLAGS_RELEASE "-O2 -fno-tree-loop-distribute-patterns" CACHE STRING "" FORCE)
add_compile_options(-Wall -Wno-unused-function)

set(NUM_CORES 8 CACHE STRING "Cluster cores used (DEEPLOY_NUM_CORES, 1..8); run QEMU with -smp NUM_CORES")
if(NOT NUM_CORES MATCHES "^[1-8]$")
  message(FATAL_ERROR "NUM_CORES must be 1..8 (got '${NUM_CORES}')")
endif()
add_compile_definitions(DEEPLOY_NUM_CORES=${NUM_CORES})
add_compile_definitions(DEEPLOY_XPULP=1)   # the cores have the PULP DSP extension (kernels use deeploy_xpulp.h)

# The folder above this file: the repository, or a compiled output folder (deeploy compile) that
# carries a copy of this file in cmake/, the runtime sources in runtime/, its headers in include/
# and the linker script link.ld.
get_filename_component(SIRACUSA_BASE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
if(EXISTS ${SIRACUSA_BASE_DIR}/runtime/deeploy_runtime.c)
  set(SIRACUSA_RUNTIME_SOURCE_DIR ${SIRACUSA_BASE_DIR}/runtime)
  set(SIRACUSA_RUNTIME_INCLUDE_DIR ${SIRACUSA_BASE_DIR}/include)
  set(SIRACUSA_DEFAULT_LINKER_SCRIPT ${SIRACUSA_BASE_DIR}/link.ld)
else()
  set(SIRACUSA_RUNTIME_SOURCE_DIR ${SIRACUSA_BASE_DIR}/TargetLibraries/Siracusa/src)
  set(SIRACUSA_RUNTIME_INCLUDE_DIR ${SIRACUSA_BASE_DIR}/TargetLibraries/Siracusa/inc)
  set(SIRACUSA_DEFAULT_LINKER_SCRIPT "")
endif()
set(LINKER_SCRIPT "${SIRACUSA_DEFAULT_LINKER_SCRIPT}" CACHE FILEPATH
    "Generated linker script (empty: Siracusa's default memory levels)")
set(SIRACUSA_RUNTIME_SOURCES ${SIRACUSA_RUNTIME_SOURCE_DIR}/deeploy_runtime.c ${SIRACUSA_RUNTIME_SOURCE_DIR}/deeploy_dma.c
    ${SIRACUSA_RUNTIME_SOURCE_DIR}/deeploy_tiling.c ${SIRACUSA_RUNTIME_SOURCE_DIR}/deeploy_xpulp_emu.c)
# what the top-level CMakeLists.txt builds once with DEEPLOY_RUNTIME_ONLY=ON
set(DEEPLOY_PLATFORM_RUNTIME_SOURCES ${SIRACUSA_RUNTIME_SOURCES})
set(DEEPLOY_PLATFORM_INCLUDE_DIRS ${SIRACUSA_RUNTIME_INCLUDE_DIR})
set(DEEPLOY_RUNTIME_OBJECTS "" CACHE STRING "Prebuilt runtime objects linked instead of compiling the runtime sources")

function(deeploy_platform_setup)
  cmake_parse_arguments(ARG "" "" "LIBRARIES;EXECUTABLES" ${ARGN})
  set(script ${LINKER_SCRIPT})
  if(NOT script)
    set(script ${CMAKE_BINARY_DIR}/siracusa_default.ld)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    execute_process(COMMAND ${Python3_EXECUTABLE} -m Deeploy.targets.siracusa.linker -o ${script}
                    WORKING_DIRECTORY ${SIRACUSA_BASE_DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(rc)
      message(FATAL_ERROR "could not generate the default Siracusa linker script: ${err}")
    endif()
  elseif(NOT EXISTS ${script})
    message(FATAL_ERROR "LINKER_SCRIPT ${script} does not exist")
  endif()
  foreach(t IN LISTS ARG_LIBRARIES)
    target_include_directories(${t} PUBLIC ${SIRACUSA_RUNTIME_INCLUDE_DIR})
  endforeach()
  foreach(t IN LISTS ARG_EXECUTABLES)
    target_include_directories(${t} PRIVATE ${SIRACUSA_RUNTIME_INCLUDE_DIR})
    if(DEEPLOY_RUNTIME_OBJECTS)
      target_sources(${t} PRIVATE ${DEEPLOY_RUNTIME_OBJECTS})
    else()
      target_sources(${t} PRIVATE ${SIRACUSA_RUNTIME_SOURCES})
    endif()
    target_link_options(${t} PRIVATE "SHELL:-T ${script}" "-Wl,-Map=$<TARGET_FILE:${t}>.map")
    set_property(TARGET ${t} APPEND PROPERTY LINK_DEPENDS ${script})
  endforeach()
endfunction()
