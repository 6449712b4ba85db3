#!/usr/bin/env bash
# test.sh — the second command: builds and runs the test suite three ways.
#
#   build/       Release, warnings as errors
#   build-san/   AddressSanitizer + UBSan + LeakSanitizer (UJ_SANITIZE=ON),
#                asserts on (Debug at -O1), warnings as errors
#   build-fuzz/  clang (clang-19; UJ_FUZZ_CC overrides) with libFuzzer
#                (UJ_FUZZ=ON) and the same sanitizers: only the fuzz targets
#                are built, and each is fuzzed for a bounded time, about
#                2 minutes in all (docs/fuzz.md; UJ_FUZZ_SECONDS sets each
#                one's time, 0 skips the suite)
#
# The first two also replay each fuzz target's corpus and past crashes
# (the fuzz_*_replay tests). Installs what is missing first
# (scripts/setup.sh --deps-only). Each suite runs with `ctest
# --output-on-failure -j2`; the script exits nonzero when any build or
# test fails, after running every suite.
#
# Usage: scripts/test.sh [ctest args...]   e.g. scripts/test.sh -R cli_
set -euo pipefail
cd "$(dirname "$0")/.."

JOBS=${UJ_JOBS:-2}

# run_suite DIR TARGET CMAKE-ARGS... -- CTEST-ARGS...  (TARGET "": all)
run_suite() {
  local dir=$1 target=$2; shift 2
  local cmake_args=() build_args=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do cmake_args+=("$1"); shift; done
  shift
  if [ -n "$target" ]; then build_args=(--target "$target"); fi
  echo "== $dir"
  local start=$SECONDS
  cmake -S . -B "$dir" -DUJ_WERROR=ON "${cmake_args[@]}" >/dev/null &&
    cmake --build "$dir" -j"$JOBS" "${build_args[@]}" &&
    (cd "$dir" && ctest --output-on-failure -j"$JOBS" "$@")
  local status=$?
  echo "== $dir: $((SECONDS - start)) s"
  return "$status"
}

main() {
  scripts/setup.sh --deps-only
  local start=$SECONDS failed=()
  run_suite build "" -DCMAKE_BUILD_TYPE=Release -DUJ_SANITIZE=OFF -- "$@" ||
    failed+=(build)
  # halt_on_error: the first report fails the test; detect_leaks: LSan on.
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1} \
  LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/test/lsan.supp:print_suppressions=0} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
  run_suite build-san "" -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1" \
    -DUJ_SANITIZE=ON -- "$@" || failed+=(build-san)
  # The fuzzers (their sanitizer options: test/fuzz/run.sh).
  if [ "${UJ_FUZZ_SECONDS:-}" != 0 ]; then
    run_suite build-fuzz fuzzers -DCMAKE_C_COMPILER="${UJ_FUZZ_CC:-clang-19}" \
      -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=-g -O1" -DUJ_SANITIZE=ON -DUJ_FUZZ=ON \
      -- -L '^fuzz$' "$@" || failed+=(build-fuzz)
  fi
  echo "== $((SECONDS - start)) s"
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "test: FAILED in ${failed[*]}" >&2
    return 1
  fi
  echo "test: all passed (normal, sanitizer and fuzz builds)"
}

main "$@"
