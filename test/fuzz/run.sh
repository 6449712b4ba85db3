#!/usr/bin/env bash
# run.sh — one fuzz target fuzzed for a bounded time: the test fuzz_TARGET
# of a UJ_FUZZ build (test/fuzz/CMakeLists.txt; docs/fuzz.md).
#
#   run.sh EXE TARGET SRC WORK SECONDS [libFuzzer options...]
#
# Runs EXE (a libFuzzer binary) for SECONDS (UJ_FUZZ_SECONDS overrides),
# seeded with SRC/corpus/TARGET and SRC/regress/TARGET, which it only
# reads: what it finds new goes to a scratch corpus WORK/fuzz_corpus/TARGET,
# emptied first; SRC/dict/TARGET.dict is its dictionary. A crash, a broken
# property (abort), a leak, a timeout or running out of memory stops it
# with a nonzero status and the input in WORK/fuzz_artifacts/TARGET/. The
# whole output goes to WORK/fuzz_logs/TARGET.log; its last lines are
# printed: how many inputs ran, or the report of a failure.
set -euo pipefail

exe=$1 target=$2 src=$3 work=$4 seconds=${UJ_FUZZ_SECONDS:-$5}
shift 5
scratch=$work/fuzz_corpus/$target
artifacts=$work/fuzz_artifacts/$target
log=$work/fuzz_logs/$target.log
rm -rf "$scratch"
mkdir -p "$scratch" "$artifacts" "$(dirname "$log")"

options=(-max_total_time="$seconds" -rss_limit_mb=2048 -artifact_prefix="$artifacts/"
         -print_final_stats=1)
if [ -f "$src/dict/$target.dict" ]; then options+=(-dict="$src/dict/$target.dict"); fi

# halt_on_error: the first report stops the run; LSan without LLVM's own
# process-wide allocations (test/lsan.supp).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$src/../lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# fuzz_npy writes each input to a file: in memory where there is room.
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then export TMPDIR=/dev/shm; fi

echo "run.sh: $exe for $seconds s; the whole output in $log"
status=0
"$exe" "${options[@]}" "$@" "$scratch" "$src/corpus/$target" "$src/regress/$target" \
  >"$log" 2>&1 || status=$?
if [ "$status" -eq 0 ]; then
  tail -n 8 "$log"
else
  tail -n 200 "$log"
  echo "run.sh: $target failed (status $status); the input: $artifacts/$(ls -t "$artifacts" | head -1)"
fi
exit "$status"
