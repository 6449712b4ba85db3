#!/usr/bin/env bash
# test.sh — the second command: builds and runs the whole test suite twice.
#
#   build/      Release, warnings as errors
#   build-san/  AddressSanitizer + UBSan + LeakSanitizer (UJ_SANITIZE=ON),
#               asserts on (Debug at -O1), warnings as errors
#
# Installs what is missing first (scripts/setup.sh --deps-only). Each suite
# runs with `ctest --output-on-failure -j2`; the script exits nonzero when
# any build or test fails, after running both suites.
#
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -R cli_
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${UJ_JOBS:-2}

# run_suite DIR CMAKE-ARGS... -- CTEST-ARGS...
run_suite() {
  local dir=$1; shift
  local cmake_args=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  shift
  echo "== $dir"
  cmake -S . -B "$dir" -DUJ_WERROR=ON "${cmake_args[@]}" >/dev/null &&
    cmake --build "$dir" -j"$JOBS" &&
    (cd "$dir" && ctest --output-on-failure -j"$JOBS" "$@")
}

main() {
  scripts/setup.sh --deps-only
  local start=$SECONDS failed=()
  run_suite build -DCMAKE_BUILD_TYPE=Release -DUJ_SANITIZE=OFF -- "$@" ||
    failed+=(build)
  # halt_on_error: the first report fails the test; detect_leaks: LSan on.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1} \
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/test/lsan.supp:print_suppressions=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  run_suite build-san -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1" \
    -DUJ_SANITIZE=ON -- "$@" || failed+=(build-san)
  echo "== $((SECONDS - start)) s"
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "test: FAILED in ${failed[*]}" >&2
    return 1
  fi
  echo "test: all passed (normal and sanitizer builds)"
}

main "$@"
