#!/usr/bin/env bash
# run.sh — builds Release in build/, runs bench_core and pastes its table
# into README.md between <!-- bench:core --> and <!-- /bench:core -->.
#
# Usage: bench/run.sh [NODES]   (passed to bench_core; default 2000000)
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"${UJ_JOBS:-2}" --target bench_core >/dev/null

table=$(mktemp)
trap 'rm -f "$table" "$table.readme"' EXIT
build/bench_core "$@" >"$table"
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
printf '\n%s, one thread, %s.\n' "${cpu:-unknown CPU}" "$(date -u +%Y-%m-%d)" >>"$table"
cat "$table"

# Replace what lies between the markers with the table; keep the markers.
awk -v table="$table" '
  /<!-- \/bench:core -->/ { skip = 0 }
  !skip { print }
  /<!-- bench:core -->/ { print ""; while ((getline line < table) > 0) print line; print ""; skip = 1 }
' README.md >"$table.readme"
grep -q '<!-- /bench:core -->' "$table.readme" || { echo "run.sh: markers missing in README.md" >&2; exit 1; }
cat "$table.readme" >README.md
echo "bench: README.md updated"
