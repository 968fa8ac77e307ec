# MemPool on the QEMU virtual platform: RV32IMA bare-metal cross build (as the peer compiles
# MemPool: no C, no F, no Xpulpimg) with picolibc (semihosting start-up, printf and exit), the
# MemPool cluster runtime and a generated linker script. Loaded before project() like
# cmake/Siracusa.cmake (by the top-level CMakeLists.txt or, as its copy in cmake/, by a compiled
# output's own CMakeLists.txt).
#
# Cache variables:
#   NUM_CORES      cores used (DEEPLOY_NUM_CORES, 1..256; the peer runs 16); QEMU runs -smp NUM_CORES
#   LINKER_SCRIPT  the generated linker script (Deeploy.targets.mempool.linker); default: a compiled
#                  output's link.ld, in the repository MemPool's default levels
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

find_program(MEMPOOL_CC riscv64-unknown-elf-gcc)
if(NOT MEMPOOL_CC)
  message(FATAL_ERROR "riscv64-unknown-elf-gcc not found: install the RISC-V bare-metal toolchain (Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf; in a Deeploy checkout: bash toolchain/install.sh)")
endif()
set(CMAKE_C_COMPILER ${MEMPOOL_CC})
# picolibc has no rv32ima multilib: its rv32im libraries are taken (no atomics needed there)
set(CMAKE_C_FLAGS_INIT "-march=rv32ima -mabi=ilp32 -misa-spec=2.2 --specs=picolibc.specs")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--crt0=semihost --oslib=semihost")
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_BUILD_TYPE Release CACHE STRING "" FORCE)
set(CMAKE_C_FLAGS_RELEASE "-O2 -fno-tree-loop-distribute-patterns" CACHE STRING "" FORCE)
add_compile_options(-Wall -Wno-unused-function)

set(NUM_CORES 16 CACHE STRING "Cores used (DEEPLOY_NUM_CORES, 1..256); run QEMU with -smp NUM_CORES")
if(NOT NUM_CORES MATCHES "^[1-9][0-9]*$" OR NUM_CORES GREATER 256)
  message(FATAL_ERROR "NUM_CORES must be 1..256 (got '${NUM_CORES}')")
endif()
add_compile_definitions(DEEPLOY_NUM_CORES=${NUM_CORES})

get_filename_component(MEMPOOL_BASE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
if(EXISTS ${MEMPOOL_BASE_DIR}/runtime/mempool_runtime.c)
  set(MEMPOOL_RUNTIME_SOURCE_DIR ${MEMPOOL_BASE_DIR}/runtime)
  set(MEMPOOL_RUNTIME_INCLUDE_DIR ${MEMPOOL_BASE_DIR}/include)
  set(MEMPOOL_DEFAULT_LINKER_SCRIPT ${MEMPOOL_BASE_DIR}/link.ld)
else()
  set(MEMPOOL_RUNTIME_SOURCE_DIR ${MEMPOOL_BASE_DIR}/TargetLibraries/MemPool/src)
  set(MEMPOOL_RUNTIME_INCLUDE_DIR ${MEMPOOL_BASE_DIR}/TargetLibraries/MemPool/inc)
  set(MEMPOOL_DEFAULT_LINKER_SCRIPT "")
endif()
set(LINKER_SCRIPT "${MEMPOOL_DEFAULT_LINKER_SCRIPT}" CACHE FILEPATH
    "Generated linker script (empty: MemPool's default memory levels)")
set(DEEPLOY_PLATFORM_RUNTIME_SOURCES ${MEMPOOL_RUNTIME_SOURCE_DIR}/mempool_runtime.c)
set(DEEPLOY_PLATFORM_INCLUDE_DIRS ${MEMPOOL_RUNTIME_INCLUDE_DIR})
set(DEEPLOY_RUNTIME_OBJECTS "" CACHE STRING "Prebuilt runtime objects linked instead of compiling the runtime sources")

function(deeploy_platform_setup)
  cmake_parse_arguments(ARG "" "" "LIBRARIES;EXECUTABLES" ${ARGN})
  set(script ${LINKER_SCRIPT})
  if(NOT script)
    set(script ${CMAKE_BINARY_DIR}/mempool_default.ld)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    execute_process(COMMAND ${Python3_EXECUTABLE} -m Deeploy.targets.mempool.linker -o ${script}
                    WORKING_DIRECTORY ${MEMPOOL_BASE_DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(rc)
      message(FATAL_ERROR "could not generate the default MemPool linker script: ${err}")
    endif()
  elseif(NOT EXISTS ${script})
    message(FATAL_ERROR "LINKER_SCRIPT ${script} does not exist")
  endif()
  foreach(t IN LISTS ARG_LIBRARIES)
    target_include_directories(${t} PUBLIC ${MEMPOOL_RUNTIME_INCLUDE_DIR})
  endforeach()
  foreach(t IN LISTS ARG_EXECUTABLES)
    target_include_directories(${t} PRIVATE ${MEMPOOL_RUNTIME_INCLUDE_DIR})
    if(DEEPLOY_RUNTIME_OBJECTS)
      target_sources(${t} PRIVATE ${DEEPLOY_RUNTIME_OBJECTS})
    else()
      target_sources(${t} PRIVATE ${DEEPLOY_PLATFORM_RUNTIME_SOURCES})
    endif()
    target_link_options(${t} PRIVATE "SHELL:-T ${script}" "-Wl,-Map=$<TARGET_FILE:${t}>.map")
    set_property(TARGET ${t} APPEND PROPERTY LINK_DEPENDS ${script})
  endforeach()
endfunction()
