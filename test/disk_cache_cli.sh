#!/usr/bin/env bash
# disk_cache_cli.sh — the disk cache across processes (CTest:
# disk_cache_cli). In: the uopjit tool. A tensor program run once in an
# empty cache folder compiles its kernels; run again, it compiles none and
# loads each ("loaded from the disk cache" under UJ_DEBUG=1), printing the
# same values. Then four processes run it at once into another empty
# folder, and a fifth loads everything they left. Exits 1 naming the
# failed check.
set -euo pipefail
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "disk_cache_cli: $*" >&2; exit 1; }
unset UJ_CACHE
prog='x = rand(64, 48, seed=1); w = rand(48, 40, seed=2)
h = (x @ w).relu()
print(h.softmax(axis=1).sum(axis=0))
print((h - h.mean(axis=1, keepdim=True)).exp().max())'

run() { # FOLDER N: stdout in $tmp/out.N, stderr in $tmp/err.N
  UJ_CACHE_DIR=$1 UJ_DEBUG=1 "$tool" -c "$prog" >"$tmp/out.$2" 2>"$tmp/err.$2"
}
count() { grep -c "$1" "$2" || true; }

run "$tmp/a" 1 || fail "the first run failed: $(cat "$tmp/err.1")"
compiled=$(count ': compiled in' "$tmp/err.1")
[ "$compiled" -ge 3 ] || fail "the first run compiled $compiled kernels"
[ "$(count 'loaded from the disk cache' "$tmp/err.1")" = 0 ] || fail "the first run loaded from an empty cache"
entries=$(find "$tmp/a/kernels" -name '*.ujk' | wc -l)
[ "$entries" = "$compiled" ] || fail "$compiled kernels compiled, $entries entries written"

run "$tmp/a" 2 || fail "the second run failed: $(cat "$tmp/err.2")"
[ "$(count ': compiled in' "$tmp/err.2")" = 0 ] || fail "the second run compiled: $(grep ': compiled in' "$tmp/err.2")"
[ "$(count 'loaded from the disk cache' "$tmp/err.2")" = "$compiled" ] || fail "the second run did not load all $compiled kernels"
cmp -s "$tmp/out.1" "$tmp/out.2" || fail "the second run printed other values"

for i in 3 4 5 6; do run "$tmp/b" $i & done
for i in 3 4 5 6; do wait -n || fail "a concurrent run failed"; done
for i in 3 4 5 6; do cmp -s "$tmp/out.1" "$tmp/out.$i" || fail "concurrent run $i printed other values"; done
[ -z "$(find "$tmp/b/kernels" -name '*.tmp.*')" ] || fail "temporary files left behind"
run "$tmp/b" 7 || fail "the run after the concurrent ones failed"
[ "$(count ': compiled in' "$tmp/err.7")" = 0 ] || fail "the concurrent runs left incomplete entries"
cmp -s "$tmp/out.1" "$tmp/out.7" || fail "the run after the concurrent ones printed other values"
echo "disk_cache_cli: $compiled kernels compiled once, then loaded by 2 processes; 4 at once wrote whole entries"
