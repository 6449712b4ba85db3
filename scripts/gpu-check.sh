#!/usr/bin/env bash
# gpu-check.sh — the one script run on a lent GPU machine (docs/gpu.md),
# from the repository root, with gpu-carry/ carried from here (made by
# scripts/gpu-build.sh). In one call it unpacks the build, names the GPU
# and driver, runs the tensor suites on CUDA (each checked against the
# evaluator, as on the CPU), shows UJ_DEBUG's compile and device times of
# one program, runs the GPU benchmark beside PyTorch (the same card, the
# same run) and prints the table for the README. Logs and the table go to
# $OUT (the device tool brings that folder back).
#
# Usage: scripts/gpu-check.sh [tests|bench|all]   (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/uopjit-gpu}
mkdir -p "$OUT"
what=${1:-all}
start=$SECONDS

# xz may be missing there: Python's lzma unpacks the tarball
python3 -c "import tarfile; tarfile.open('gpu-carry/uopjit-gpu.tar.xz').extractall('.')" || exit 1
echo "== build of $(cat gpu-carry/commit 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
export UJ_DEVICE=CUDA

if [ "$what" != bench ]; then
  for t in test_device test_tensor_ops test_tensor_movement test_tensor_nn test_tensor_attention; do
    t0=$SECONDS
    timeout 240 "build-gpu/test/$t" > "$OUT/$t.log" 2>&1
    rc=$?
    echo "== $t: rc=$rc, $((SECONDS - t0)) s: $(tail -1 "$OUT/$t.log")"
    [ "$rc" = 0 ] || grep -m 10 "check failed\|error" "$OUT/$t.log"
  done
  echo "== one program, UJ_DEBUG=1"
  UJ_DEBUG=1 build-gpu/uopjit -c 'x = rand(1024, 1024, seed=1); w = rand(1024, 1024, seed=2); (x @ w).softmax(axis=1).sum()' 2>&1 | tail -12
fi

if [ "$what" != tests ]; then
  echo "== bench (uopjit)"
  timeout 300 build-gpu/bench_gpu bench/gpu_lines.txt > "$OUT/uopjit.tsv" 2> "$OUT/uopjit.err"
  cat "$OUT/uopjit.tsv"
  echo "== bench (PyTorch)"
  timeout 300 python3 bench/gpu_peers.py bench/gpu_lines.txt > "$OUT/torch.tsv" 2> "$OUT/torch.err"
  cat "$OUT/torch.tsv"
  echo "== table"
  python3 bench/gpu_table.py "$OUT/uopjit.tsv" "$OUT/torch.tsv" | tee "$OUT/table.md"
fi
echo "== done in $((SECONDS - start)) s"
