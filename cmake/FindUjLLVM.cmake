# FindUjLLVM.cmake — LLVM 19 through llvm-config (Debian: llvm-19-dev).
#
# In: LLVM_CONFIG (cache; default: llvm-config-19, then llvm-config).
# UJ_LLVM_STATIC (option, UjOptions.cmake): LLVM's static libraries, the
# components uopjit uses only, with libstdc++ linked in too, so the shared
# libuopjit runs where no LLVM is installed (the lent GPU machine).
# Out: the imported target uj::llvm (include dirs, defines, libraries) and
# UJ_LLVM_BINDIR (where llc, ld.lld and llvm-readelf live). Configuration
# stops with a message saying how to install LLVM when it is missing or is
# not version 19.
find_program(LLVM_CONFIG NAMES llvm-config-19 llvm-config
  HINTS /usr/lib/llvm-19/bin DOC "llvm-config of LLVM 19")
if(NOT LLVM_CONFIG)
  message(FATAL_ERROR "uopjit needs LLVM 19 and found no llvm-config-19.\n"
    "Install it with: scripts/setup.sh --deps-only (apt-get install llvm-19-dev lld-19),\n"
    "or point -DLLVM_CONFIG=/path/to/llvm-config at an LLVM 19.")
endif()

function(uj_llvm_config out)
  execute_process(COMMAND ${LLVM_CONFIG} ${ARGN} OUTPUT_VARIABLE v
    RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${LLVM_CONFIG} ${ARGN} failed (${rc})")
  endif()
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

uj_llvm_config(UJ_LLVM_VERSION --version)
if(NOT UJ_LLVM_VERSION MATCHES "^19\\.")
  message(FATAL_ERROR "uopjit needs LLVM 19; ${LLVM_CONFIG} is version ${UJ_LLVM_VERSION}.\n"
    "Install llvm-19-dev (scripts/setup.sh --deps-only) or set -DLLVM_CONFIG.")
endif()
uj_llvm_config(UJ_LLVM_INCLUDE --includedir)
uj_llvm_config(UJ_LLVM_LIBDIR --libdir)
uj_llvm_config(UJ_LLVM_BINDIR --bindir)
uj_llvm_config(UJ_LLVM_TARGETS --targets-built)
foreach(t X86 NVPTX AMDGPU)
  if(NOT UJ_LLVM_TARGETS MATCHES "${t}")
    message(FATAL_ERROR "LLVM at ${LLVM_CONFIG} was built without the ${t} target")
  endif()
endforeach()
add_library(uj::llvm INTERFACE IMPORTED)
target_include_directories(uj::llvm SYSTEM INTERFACE ${UJ_LLVM_INCLUDE})
if(UJ_LLVM_STATIC)
  uj_llvm_config(UJ_LLVM_STATIC_LIBS --link-static --libs core orcjit passes x86codegen x86asmparser
    nvptxcodegen amdgpucodegen amdgpuasmparser irreader linker bitwriter native)
  separate_arguments(UJ_LLVM_STATIC_LIBS UNIX_COMMAND "${UJ_LLVM_STATIC_LIBS}")
  # libz stays dynamic, and libzstd: Debian has no static one (LLVM-NOTES)
  target_link_libraries(uj::llvm INTERFACE -L${UJ_LLVM_LIBDIR} -Wl,--start-group ${UJ_LLVM_STATIC_LIBS}
    -Wl,--end-group -Wl,-Bstatic -lstdc++ -Wl,-Bdynamic -static-libgcc -lz -l:libzstd.so.1 -lrt -ldl -lpthread -lm)
  message(STATUS "LLVM ${UJ_LLVM_VERSION}: static, linked into a shared libuopjit")
else()
  find_library(UJ_LLVM_LIBRARY NAMES LLVM-19 LLVM HINTS ${UJ_LLVM_LIBDIR} NO_DEFAULT_PATH)
  if(NOT UJ_LLVM_LIBRARY)
    message(FATAL_ERROR "no libLLVM shared library in ${UJ_LLVM_LIBDIR}")
  endif()
  target_link_libraries(uj::llvm INTERFACE ${UJ_LLVM_LIBRARY})
  message(STATUS "LLVM ${UJ_LLVM_VERSION}: ${UJ_LLVM_LIBRARY}")
endif()
