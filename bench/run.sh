#!/usr/bin/env bash
# run.sh — builds Release in build/, runs the benchmarks and pastes each
# one's table into README.md between <!-- bench:NAME --> and
# <!-- /bench:NAME -->:
#   core   build/bench_core [NODES]    interning and simplification (default 2000000)
#   jit    build/bench_jit [KERNELS]   JIT latency vs clang in a subprocess (default 100)
#   peers  build/bench_peers [OPTIONS] uopjit vs OpenBLAS, PyTorch, NumPy; installs
#          them first (bench/install_peers.sh: apt-get, sudo when not root)
#   scale  bench/scale.py build/uopjit [N...]  time and memory of scheduling and
#          compiling against a graph's size, per family (default n 1000 .. 16000)
#   train  build/bench_train [STEPS]   training steps vs PyTorch (bench/train_peer.py):
#          an MLP and a 2-layer GPT (AdamW), 1 and 2 threads; then the MLP's
#          step at step 10 and at step STEPS (default 10000: about 3 minutes)
#   gpt2   bench/bench_gpt2.sh build/gpt2   a GPT-2 training step (small and 124M)
#          vs PyTorch (tools/gpt2/train_torch.py), 1 and 2 threads (docs/gpt2.md)
#
# Usage: bench/run.sh            every benchmark, with its defaults
#        bench/run.sh NAME [ARGS]  one benchmark, ARGS passed to it
# UJ_BENCH_BUILD names another build folder (default build), UJ_JOBS the
# build's parallelism (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

benches=(core jit peers scale train gpt2)
if [ $# -gt 0 ]; then
  case "$1" in
    core | jit | peers | scale | train | gpt2) benches=("$1"); shift ;;
    *) echo "usage: bench/run.sh [core|jit|peers|scale|train|gpt2] [ARGS]" >&2; exit 2 ;;
  esac
fi
build="${UJ_BENCH_BUILD:-build}"

# The peers first: CMake links OpenBLAS into bench_peers only if it finds it.
# A failed install is not fatal: the absent peers' columns say so.
if [[ " ${benches[*]} " == *" peers "* || " ${benches[*]} " == *" train "* || " ${benches[*]} " == *" gpt2 "* ]]; then
  bench/install_peers.sh || echo "bench: some peers could not be installed; their columns will say absent" >&2
  # OpenBLAS 0.3.21 (Debian 12) does not know newer CPUs and falls back to
  # its SSE3 (Prescott) kernels: name its fastest core for this CPU. On
  # AMD that is Haswell (its Zen cores are the Haswell kernels; on Zen 4
  # SkylakeX's AVX-512 sgemm was slower: 1024^3 21.5 vs 20.2 ms,
  # 64x4096x4096 27.5 vs 23.8 ms), elsewhere the widest the flags allow.
  if [ -z "${OPENBLAS_CORETYPE:-}" ]; then
    if grep -qw avx512f /proc/cpuinfo && ! grep -q AuthenticAMD /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell
    fi
  fi
fi

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
targets=()
for name in "${benches[@]}"; do
  case "$name" in
    scale) targets+=(uopjit_tool) ;;
    gpt2) targets+=(gpt2) ;;
    *) targets+=("bench_$name") ;;
  esac
done
cmake --build "$build" -j"${UJ_JOBS:-2}" --target "${targets[@]}" >/dev/null

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
  if [ "$name" = scale ]; then python3 bench/scale.py "$build/uopjit" "$@" >"$table"
  elif [ "$name" = gpt2 ]; then scripts/gpt2-data.sh >/dev/null && bench/bench_gpt2.sh "$build/gpt2" >"$table"
  else "$build/bench_$name" "$@" >"$table"
  fi
  if [ "$name" = train ] || [ "$name" = gpt2 ]; then
    printf '\n%s, %s; PyTorch %s.\n' "${cpu:-unknown CPU}" "$(date -u +%Y-%m-%d)" \
      "$(/usr/bin/python3 -c 'import torch; print(torch.__version__)' 2>/dev/null || echo absent)" >>"$table"
  elif [ "$name" != peers ]; then # bench_peers writes its own machine line
    printf '\n%s, one thread, %s.\n' "${cpu:-unknown CPU}" "$(date -u +%Y-%m-%d)" >>"$table"
  fi
  cat "$table"
  paste_table "$name"
  echo "bench: README.md updated ($name)"
done
