#!/usr/bin/env bash
# dot_test.sh — the tool's Graphviz pictures, rendered (CTest: dot_test).
# In: the uopjit tool. Writes DOT for an IR program (--emit=dot), a tensor
# program's schedule (--emit=dot, and :dot), its tensor graph (:dot graph)
# and one kernel's UOps (:dot kernel N), checks what each holds, renders
# each with `dot -Tsvg` (Graphviz: scripts/setup.sh installs it) and
# checks the pictures; a kernel past the last is an error naming the
# count. Exits 1 naming the failed check.
set -euo pipefail
tool=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "dot_test: $*" >&2; exit 1; }
command -v dot >/dev/null || fail "no Graphviz 'dot' here: scripts/setup.sh --deps-only installs it"
export UJ_CACHE=0
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"; }
render() { # DOT-FILE: renders it, the SVG beside it
  dot -Tsvg "$1" -o "$1.svg" 2>"$tmp/dot.err" || fail "dot could not render $(basename "$1"): $(cat "$tmp/dot.err")"
  [ ! -s "$tmp/dot.err" ] || fail "dot warned on $(basename "$1"): $(cat "$tmp/dot.err")"
  has "$1.svg" "<svg"
}

# An IR program: its simplified UOp graph.
"$tool" --emit=dot -c '(MUL (ADD (DEFINE_VAR:int32 x 0 15) (CONST:int32 1)) (DEFINE_VAR:int32 x 0 15))' >"$tmp/ir.dot"
has "$tmp/ir.dot" "digraph"
has "$tmp/ir.dot" 'MUL:int32'
has "$tmp/ir.dot" 'DEFINE_VAR:int32 x 0 15'
[ "$(grep -c -- '->' "$tmp/ir.dot")" -ge 3 ] || fail "ir.dot has fewer than 3 edges"
render "$tmp/ir.dot"
has "$tmp/ir.dot.svg" "MUL:int32"

# A tensor program: each value's schedule.
vars='x = rand(64, 32, seed=1); w = rand(32, 16, seed=2)'
prog="$vars
(x @ w).relu().softmax(axis=0)"
"$tool" --emit=dot -c "$prog" >"$tmp/schedule.dot"
"$tool" -c "$vars
:kernels (x @ w).relu().softmax(axis=0)" >"$tmp/kernels.txt"
n=$(sed -n 's/^\([0-9]*\) kernels\{0,1\}$/\1/p' "$tmp/kernels.txt" | head -1)
[ -n "$n" ] && [ "$n" -ge 1 ] || fail ":kernels printed no count: $(head -2 "$tmp/kernels.txt")"
[ "$(grep -c '\[shape=box' "$tmp/schedule.dot")" = "$n" ] || fail "schedule.dot has not $n kernel boxes"
has "$tmp/schedule.dot" "kernel 0: "
has "$tmp/schedule.dot" "shape=ellipse"
has "$tmp/schedule.dot" '\ninput'
has "$tmp/schedule.dot" '\noutput'
has "$tmp/schedule.dot" 'temporary, slab'
render "$tmp/schedule.dot"
has "$tmp/schedule.dot.svg" "kernel 0: "
has "$tmp/schedule.dot.svg" "output"

# :dot, its views.
"$tool" -c "$vars
:dot (x @ w).relu().softmax(axis=0)" >"$tmp/cmd.dot"
cmp -s <(grep -v '^digraph' "$tmp/cmd.dot") <(grep -v '^digraph' "$tmp/schedule.dot") || fail ":dot and --emit=dot differ"
"$tool" -c "$vars
:dot graph (x @ w).relu().softmax(axis=0)" >"$tmp/graph.dot"
has "$tmp/graph.dot" "REDUCE"
has "$tmp/graph.dot" "(64, 16)"
render "$tmp/graph.dot"
"$tool" -c "$vars
:dot kernel 0 x * 2 + 1" >"$tmp/kernel.dot"
has "$tmp/kernel.dot" "RANGE"
has "$tmp/kernel.dot" "STORE"
render "$tmp/kernel.dot"
if "$tool" -c "$vars
:dot kernel $n (x @ w).relu().softmax(axis=0)" >/dev/null 2>"$tmp/err"; then fail ":dot kernel $n (one past the last) succeeded"; fi
grep -q "no kernel $n: realizing the tensor runs $n kernel" "$tmp/err" || fail ":dot kernel $n said: $(cat "$tmp/err")"
echo "dot_test: an IR graph, a schedule of $n kernels, a tensor graph and a kernel drawn by Graphviz"
