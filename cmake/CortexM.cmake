# Cortex-M on QEMU's Arm boards: a bare-metal cross build with gcc-arm-none-eabi and picolibc
# (semihosting start-up, printf and exit; specs/cortexm.md). Loaded before project() by the
# top-level CMakeLists.txt and, as its copy in cmake/, by a compiled output's own CMakeLists.txt.
#
# Cache variables:
#   CORTEXM_CPU    cortex-m4 (DSP extension, FPv4-SP) or cortex-m55 (Helium); default: the core a
#                  compiled output's link.ld names, else cortex-m4
#   LINKER_SCRIPT  the generated linker script (Deeploy.targets.cortexm.platform: the board's
#                  flash and SRAM for picolibc's picolibc.ld); default: a compiled output's link.ld
#
# deeploy_platform_setup(LIBRARIES <libs> EXECUTABLES <exes>) adds the runtime include folder to
# every target and the linker script and a map file to the executables.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

find_program(CORTEXM_CC arm-none-eabi-gcc)
if(NOT CORTEXM_CC)
  message(FATAL_ERROR "arm-none-eabi-gcc not found: install the Arm bare-metal toolchain (Debian: apt-get install gcc-arm-none-eabi picolibc-arm-none-eabi qemu-system-arm; in a Deeploy checkout: bash toolchain/install.sh)")
endif()
set(CMAKE_C_COMPILER ${CORTEXM_CC})

# the folder above this file: the repository, or a compiled output folder with its include/ and
# link.ld, whose first line names the core it was compiled for
get_filename_component(CORTEXM_BASE_DIR ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
set(CORTEXM_DEFAULT_CPU cortex-m4)
if(EXISTS ${CORTEXM_BASE_DIR}/link.ld)
  file(STRINGS ${CORTEXM_BASE_DIR}/link.ld cpu_line LIMIT_COUNT 1 REGEX "Deeploy CortexM cpu: ")
  string(REGEX REPLACE ".*cpu: ([a-z0-9-]+).*" "\\1" CORTEXM_DEFAULT_CPU "${cpu_line}")
endif()
set(CORTEXM_CPU ${CORTEXM_DEFAULT_CPU} CACHE STRING "Cortex-M core: cortex-m4 or cortex-m55")
if(CORTEXM_CPU STREQUAL "cortex-m4")
  set(CORTEXM_ARCH_FLAGS "-mcpu=cortex-m4 -mfpu=fpv4-sp-d16 -mfloat-abi=hard")
elseif(CORTEXM_CPU STREQUAL "cortex-m55")
  set(CORTEXM_ARCH_FLAGS "-mcpu=cortex-m55 -mfloat-abi=hard")
else()
  message(FATAL_ERROR "CORTEXM_CPU must be cortex-m4 or cortex-m55 (got '${CORTEXM_CPU}')")
endif()
set(CMAKE_C_FLAGS_INIT "${CORTEXM_ARCH_FLAGS} -mthumb --specs=picolibc.specs")
set(CMAKE_EXE_LINKER_FLAGS_INIT "--crt0=semihost --oslib=semihost")
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_STANDARD_REQUIRED ON)
set(CMAKE_BUILD_TYPE Release CACHE STRING "" FORCE)
# picolibc's memcpy and memset are byte loops: short copy loops must not become calls to them
set(CMAKE_C_FLAGS_RELEASE "-O2 -fno-tree-loop-distribute-patterns" CACHE STRING "" FORCE)
add_compile_options(-Wall -Wno-unused-function)
add_compile_definitions(DEEPLOY_NUM_CORES=1)

if(EXISTS ${CORTEXM_BASE_DIR}/include/deeploy_cortexm.h)
  set(CORTEXM_INCLUDE_DIR ${CORTEXM_BASE_DIR}/include)
  set(CORTEXM_DEFAULT_LINKER_SCRIPT ${CORTEXM_BASE_DIR}/link.ld)
else()
  set(CORTEXM_INCLUDE_DIR ${CORTEXM_BASE_DIR}/TargetLibraries/CortexM/inc)
  set(CORTEXM_DEFAULT_LINKER_SCRIPT "")
endif()
set(LINKER_SCRIPT "${CORTEXM_DEFAULT_LINKER_SCRIPT}" CACHE FILEPATH "Generated linker script (link.ld of a compiled output)")
set(DEEPLOY_PLATFORM_INCLUDE_DIRS ${CORTEXM_INCLUDE_DIR})

function(deeploy_platform_setup)
  cmake_parse_arguments(ARG "" "" "LIBRARIES;EXECUTABLES" ${ARGN})
  set(script ${LINKER_SCRIPT})
  if(NOT script OR NOT EXISTS ${script})
    message(FATAL_ERROR "LINKER_SCRIPT '${script}' does not exist: give the link.ld of a compiled output")
  endif()
  foreach(t IN LISTS ARG_LIBRARIES)
    target_include_directories(${t} PUBLIC ${CORTEXM_INCLUDE_DIR})
  endforeach()
  foreach(t IN LISTS ARG_EXECUTABLES)
    target_include_directories(${t} PRIVATE ${CORTEXM_INCLUDE_DIR})
    target_link_options(${t} PRIVATE "SHELL:-T ${script}" "-Wl,-Map=$<TARGET_FILE:${t}>.map")
    set_property(TARGET ${t} APPEND PROPERTY LINK_DEPENDS ${script})
  endforeach()
endfunction()
