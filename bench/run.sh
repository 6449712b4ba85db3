#!/usr/bin/env bash
# run.sh — builds Release in build/, runs the benchmarks and pastes each
# one's table into README.md between <!-- bench:NAME --> and
# <!-- /bench:NAME -->:
#   core  build/bench_core [NODES]    interning and simplification (default 2000000)
#   jit   build/bench_jit [KERNELS]   JIT latency vs clang in a subprocess (default 100)
#
# Usage: bench/run.sh            every benchmark, with its defaults
#        bench/run.sh NAME [ARGS]  one benchmark, ARGS passed to it
set -euo pipefail
cd "$(dirname "$0")/.."

benches=(core jit)
if [ $# -gt 0 ]; then
  case "$1" in
    core | jit) benches=("$1"); shift ;;
    *) echo "usage: bench/run.sh [core|jit] [ARGS]" >&2; exit 2 ;;
  esac
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=()
for name in "${benches[@]}"; do targets+=("bench_$name"); done
cmake --build build -j"${UJ_JOBS:-2}" --target "${targets[@]}" >/dev/null

table=$(mktemp)
trap 'rm -f "$table" "$table.readme"' EXIT
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)

# Replaces what lies between the markers of $1 with the table; keeps the markers.
paste_table() {
  local open="<!-- bench:$1 -->" close="<!-- /bench:$1 -->"
  if [ "$(grep -cxF "$open" README.md)" != 1 ] || [ "$(grep -cxF "$close" README.md)" != 1 ]; then
    echo "run.sh: markers $open ... $close missing in README.md" >&2
    exit 1
  fi
  awk -v table="$table" -v open_marker="$open" -v close_marker="$close" '
    $0 == close_marker { skip = 0 }
    !skip { print }
    $0 == open_marker { print ""; while ((getline line < table) > 0) print line; print ""; skip = 1 }
  ' README.md >"$table.readme"
  cat "$table.readme" >README.md
}

for name in "${benches[@]}"; do
  "build/bench_$name" "$@" >"$table"
  printf '\n%s, one thread, %s.\n' "${cpu:-unknown CPU}" "$(date -u +%Y-%m-%d)" >>"$table"
  cat "$table"
  paste_table "$name"
  echo "bench: README.md updated ($name)"
done
