# A cluster of RV32 cores on the QEMU virtual platform (Siracusa, GAP9, MemPool, Snitch): bare-metal
# cross build with picolibc (semihosting start-up, printf and exit), the Siracusa family's cluster
# runtime and a generated linker script. Included by the platform's own file (cmake/Siracusa.cmake,
# cmake/GAP9.cmake, cmake/MemPool.cmake, cmake/Snitch.cmake), which sets first:
#   VIRT_CLUSTER_ARCH              -march/-mabi of the cores
#   VIRT_CLUSTER_DEFAULT_CORES     default NUM_CORES; VIRT_CLUSTER_MAX_CORES its maximum
#   VIRT_CLUSTER_RUNTIME           the runtime library (folder of TargetLibraries/) and
#   VIRT_CLUSTER_RUNTIME_SOURCES   its sources (file names in its src/)
#   VIRT_CLUSTER_SYMBOLS           NAME=VALUE absolute symbols the QEMU runner reads from the ELF:
#                                  harts beyond the cores (__deeploy_num_harts), the L1 geometry
#                                  (Deeploy/targets/siracusa/qemu.py); empty: Siracusa's
#   VIRT_CLUSTER_LINKER            the Python module writing the default linker script
# Cache variables: NUM_CORES (cores forked on) and LINKER_SCRIPT (default: a compiled output's
# link.ld, in the repository the platform's levels). After the targets exist,
# deeploy_platform_setup(LIBRARIES <libs> EXECUTABLES <exes>) adds the runtime, the linker script,
# the symbols and a map file.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR riscv32)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

find_program(VIRT_CLUSTER_CC riscv64-unknown-elf-gcc)
if(NOT VIRT_CLUSTER_CC)
  message(FATAL_ERROR "riscv64-unknown-elf-gcc not found: install the RISC-V bare-metal toolchain (Debian: apt-get install gcc-riscv64-unknown-elf picolibc-riscv64-unknown-elf; in a Deeploy checkout: bash toolchain/install.sh)")
endif()
set(CMAKE_C_COMPILER ${VIRT_CLUSTER_CC})
# -misa-spec=2.2 keeps csr instructions without the _zicsr suffix that would break picolibc's
# multilib lookup.
set(CMAKE_C_FLAGS_INIT "${VIRT_CLUSTER_ARCH} -misa-spec=2.2 --specs=picolibc.specs")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--crt0=semihost --oslib=semihost")
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_BUILD_TYPE Release CACHE STRING "" FORCE)
# picolibc's memcpy and memset move one byte per loop trip: short copy loops (the tile loop's
# boxes, a kernel's row) must not become calls to them.
set(CMAKE_C_FLAGS_RELEASE "-O2 -fno-tree-loop-distribute-patterns" CACHE STRING "" FORCE)
add_compile_options(-Wall -Wno-unused-function)

set(NUM_CORES ${VIRT_CLUSTER_DEFAULT_CORES} CACHE STRING "Cores forked on (DEEPLOY_NUM_CORES, 1..${VIRT_CLUSTER_MAX_CORES}); run QEMU with -smp NUM_CORES")
if(NOT NUM_CORES MATCHES "^[1-9][0-9]*$" OR NUM_CORES GREATER VIRT_CLUSTER_MAX_CORES)
  message(FATAL_ERROR "NUM_CORES must be 1..${VIRT_CLUSTER_MAX_CORES} (got '${NUM_CORES}')")
endif()
add_compile_definitions(DEEPLOY_NUM_CORES=${NUM_CORES})

get_filename_component(VIRT_CLUSTER_BASE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
list(GET VIRT_CLUSTER_RUNTIME_SOURCES 0 first_source)
if(EXISTS ${VIRT_CLUSTER_BASE_DIR}/runtime/${first_source})
  set(VIRT_CLUSTER_RUNTIME_SOURCE_DIR ${VIRT_CLUSTER_BASE_DIR}/runtime)
  set(VIRT_CLUSTER_RUNTIME_INCLUDE_DIR ${VIRT_CLUSTER_BASE_DIR}/include)
  set(VIRT_CLUSTER_DEFAULT_LINKER_SCRIPT ${VIRT_CLUSTER_BASE_DIR}/link.ld)
else()
  set(VIRT_CLUSTER_RUNTIME_SOURCE_DIR ${VIRT_CLUSTER_BASE_DIR}/TargetLibraries/${VIRT_CLUSTER_RUNTIME}/src)
  set(VIRT_CLUSTER_RUNTIME_INCLUDE_DIR ${VIRT_CLUSTER_BASE_DIR}/TargetLibraries/${VIRT_CLUSTER_RUNTIME}/inc)
  set(VIRT_CLUSTER_DEFAULT_LINKER_SCRIPT "")
endif()
set(LINKER_SCRIPT "${VIRT_CLUSTER_DEFAULT_LINKER_SCRIPT}" CACHE FILEPATH
    "Generated linker script (empty: the platform's default memory levels)")
list(TRANSFORM VIRT_CLUSTER_RUNTIME_SOURCES PREPEND ${VIRT_CLUSTER_RUNTIME_SOURCE_DIR}/
     OUTPUT_VARIABLE DEEPLOY_PLATFORM_RUNTIME_SOURCES)
set(DEEPLOY_PLATFORM_INCLUDE_DIRS ${VIRT_CLUSTER_RUNTIME_INCLUDE_DIR})
set(DEEPLOY_RUNTIME_OBJECTS "" CACHE STRING "Prebuilt runtime objects linked instead of compiling the runtime sources")

function(deeploy_platform_setup)
  cmake_parse_arguments(ARG "" "" "LIBRARIES;EXECUTABLES" ${ARGN})
  set(script ${LINKER_SCRIPT})
  if(NOT script)
    set(script ${CMAKE_BINARY_DIR}/virt_cluster_default.ld)
    find_package(Python3 REQUIRED COMPONENTS Interpreter)
    execute_process(COMMAND ${Python3_EXECUTABLE} -m ${VIRT_CLUSTER_LINKER} -o ${script}
                    WORKING_DIRECTORY ${VIRT_CLUSTER_BASE_DIR} RESULT_VARIABLE rc ERROR_VARIABLE err)
    if(rc)
      message(FATAL_ERROR "could not generate the default linker script (${VIRT_CLUSTER_LINKER}): ${err}")
    endif()
  elseif(NOT EXISTS ${script})
    message(FATAL_ERROR "LINKER_SCRIPT ${script} does not exist")
  endif()
  foreach(t IN LISTS ARG_LIBRARIES)
    target_include_directories(${t} PUBLIC ${VIRT_CLUSTER_RUNTIME_INCLUDE_DIR})
  endforeach()
  foreach(t IN LISTS ARG_EXECUTABLES)
    target_include_directories(${t} PRIVATE ${VIRT_CLUSTER_RUNTIME_INCLUDE_DIR})
    if(DEEPLOY_RUNTIME_OBJECTS)
      target_sources(${t} PRIVATE ${DEEPLOY_RUNTIME_OBJECTS})
    else()
      target_sources(${t} PRIVATE ${DEEPLOY_PLATFORM_RUNTIME_SOURCES})
    endif()
    target_link_options(${t} PRIVATE "SHELL:-T ${script}" "-Wl,-Map=$<TARGET_FILE:${t}>.map")
    foreach(symbol IN LISTS VIRT_CLUSTER_SYMBOLS)
      target_link_options(${t} PRIVATE "-Wl,--defsym=${symbol}")
    endforeach()
    set_property(TARGET ${t} APPEND PROPERTY LINK_DEPENDS ${script})
  endforeach()
endfunction()
