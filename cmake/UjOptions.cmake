# Build options: warnings (as errors with UJ_WERROR=ON, which CI sets), the
# sanitizer build (UJ_SANITIZE=ON: AddressSanitizer + UBSan + LeakSanitizer)
# the fuzzers (UJ_FUZZ=ON, clang only: docs/fuzz.md), and a libuopjit that
# carries LLVM inside (UJ_LLVM_STATIC=ON: docs/gpu.md).
option(UJ_WERROR "Treat warnings as errors" OFF)
option(UJ_SANITIZE "Build with AddressSanitizer, UBSan and LeakSanitizer" OFF)
option(UJ_LLVM_STATIC "Link LLVM statically into a shared libuopjit, to carry to a machine without LLVM (scripts/gpu-build.sh)" OFF)
option(UJ_FUZZ "Build the libFuzzer targets of test/fuzz and run each as a test (clang)" OFF)

if(UJ_SANITIZE)
  set(UJ_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer)
  # clang's UBSan checks a call through a function pointer by reading a
  # signature just before the callee: JIT-compiled kernels have none, and
  # one at the start of a page faults.
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    list(APPEND UJ_SAN_FLAGS -fno-sanitize=function)
  endif()
  add_compile_options(${UJ_SAN_FLAGS})
  add_link_options(${UJ_SAN_FLAGS})
  add_compile_definitions(UJ_SANITIZE=1)
endif()

# UJ_FUZZ: every file gets libFuzzer's coverage instrumentation
# (-fsanitize=fuzzer-no-link); the fuzz targets alone link libFuzzer and its
# main (-fsanitize=fuzzer, test/fuzz/CMakeLists.txt). Without UJ_FUZZ the
# same targets are built with a replay main instead, with any compiler.
if(UJ_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "UJ_FUZZ=ON needs clang, which has libFuzzer "
      "(${CMAKE_C_COMPILER_ID} has none): configure with CC=clang-19 "
      "(apt-get install clang-19 libclang-rt-19-dev; scripts/setup.sh --deps-only)")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
  add_link_options(-fsanitize=fuzzer-no-link)
endif()

function(uj_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow
    -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter)
  if(UJ_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
