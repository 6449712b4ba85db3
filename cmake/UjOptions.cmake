# Build options: warnings (as errors with UJ_WERROR=ON, which CI sets) and
# the sanitizer build (UJ_SANITIZE=ON: AddressSanitizer + UBSan + LeakSanitizer).
option(UJ_WERROR "Treat warnings as errors" OFF)
option(UJ_SANITIZE "Build with AddressSanitizer, UBSan and LeakSanitizer" OFF)

if(UJ_SANITIZE)
  set(UJ_SAN_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=undefined
      -fno-omit-frame-pointer)
  add_compile_options(${UJ_SAN_FLAGS})
  add_link_options(${UJ_SAN_FLAGS})
  add_compile_definitions(UJ_SANITIZE=1)
endif()

function(uj_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow
    -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter)
  if(UJ_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
