#!/usr/bin/env bash
# gpu-build.sh — builds here what the lent GPU machine runs, which has the
# NVIDIA driver and PyTorch but no LLVM: libuopjit.so with LLVM linked in
# (UJ_LLVM_STATIC=ON, docs/gpu.md), the tool, the tensor suites and
# bench_gpu, stripped and packed into gpu-carry/uopjit-gpu.tar.xz (about
# 15 MB; the device tool carries the folder: carry ["gpu-carry"]), where
# scripts/gpu-check.sh unpacks it.
#
# Usage: scripts/gpu-build.sh      (UJ_JOBS: parallel jobs, default 2)
set -euo pipefail
cd "$(dirname "$0")/.."

cmake -S . -B build-gpu -DUJ_LLVM_STATIC=ON -DCMAKE_BUILD_TYPE=Release -DUJ_WERROR=ON >/dev/null
tests=(test_tensor_ops test_tensor_movement test_tensor_nn test_tensor_attention test_device)
cmake --build build-gpu -j"${UJ_JOBS:-2}" --target uopjit_tool bench_gpu "${tests[@]}"

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build-gpu/test" gpu-carry
cp build-gpu/libuopjit.so build-gpu/uopjit build-gpu/bench_gpu "$stage/build-gpu/"
for t in "${tests[@]}"; do cp "build-gpu/test/$t" "$stage/build-gpu/test/"; done
find "$stage" -type f -exec strip --strip-unneeded {} +
tar -C "$stage" -cf - build-gpu | xz -T"${UJ_JOBS:-2}" -6 > gpu-carry/uopjit-gpu.tar.xz
git rev-parse HEAD > gpu-carry/commit
ls -la gpu-carry
