# DEEPLOY_SANITIZE=ON: compile and link everything with AddressSanitizer and UndefinedBehaviorSanitizer,
# stopping at the first error (-fno-sanitize-recover=all), so an out-of-bounds access, overflow of a
# signed type or misaligned load in a kernel fails the test run. Host platforms only (Generic).
option(DEEPLOY_SANITIZE "Build with -fsanitize=address,undefined -fno-sanitize-recover=all" OFF)
if(DEEPLOY_SANITIZE)
  if(CMAKE_CROSSCOMPILING)
    message(FATAL_ERROR "DEEPLOY_SANITIZE needs a host platform (Generic); ${CMAKE_SYSTEM_PROCESSOR} has no sanitizer runtime")
  endif()
  set(DEEPLOY_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_compile_options(${DEEPLOY_SANITIZE_FLAGS} -g)
  add_link_options(${DEEPLOY_SANITIZE_FLAGS})
endif()
