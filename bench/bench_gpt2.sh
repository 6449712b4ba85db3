#!/usr/bin/env bash
# bench_gpt2.sh — a GPT-2 training step, uopjit's gpt2 against PyTorch in
# the same run, as ratios (bench/run.sh gpt2; docs/gpt2.md "Speed").
#
# In: the gpt2 binary (argv[1], default build/gpt2), data/gpt2's token
# files (scripts/gpt2-data.sh), Debian's python3-torch. For each model
# (small: 6 layers, 384 wide, 6 heads; 124M: 12, 768, 12), batch 4 × 64
# tokens, AdamW with clipping, float32, on 1 and 2 threads: ROUNDS rounds
# alternating `gpt2 train` (STEPS steps) and tools/gpt2/train_torch.py
# (the same steps from the same initial weights on the same batches);
# each side's ms/step is the median of its rounds (a round's: the mean of
# its steps after the first). uopjit's first step (scheduling and
# compiling every kernel into an empty disk cache) and the first step of
# a second process (its kernels loaded from that cache) are reported
# beside. Out: a Markdown table on stdout.
set -euo pipefail
gpt2=${1:-build/gpt2}
data=data/gpt2
ROUNDS=${UJ_BENCH_ROUNDS:-3}
[ -x "$gpt2" ] || { echo "bench_gpt2: no $gpt2: build first" >&2; exit 1; }
[ -f "$data/train.bin" ] || { echo "bench_gpt2: no $data/train.bin: scripts/gpt2-data.sh, then $gpt2 prepare" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset UJ_CACHE

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# gpt2's log on stdin: the ms of step $1, or the mean of the steps after the first ("rest")
step_ms() {
  awk -v which="$1" '/^step / { for (i = 1; i <= NF; i++) if ($i == "ms") ms = $(i - 1); n++; if (n == 1) first = ms; else { sum += ms; k++ } }
    END { if (which == "first") print first; else print sum / k }'
}

echo "| training step, batch 4 × 64 tokens | threads | uopjit ms/step | uopjit tokens/s | PyTorch ms/step | PyTorch tokens/s | uopjit speed (PyTorch ms / uopjit ms) | uopjit first step (schedule + compile) | uopjit first step, a second process (disk cache) |"
echo "|---|---|---|---|---|---|---|---|---|"
for size in small 124M; do
  steps=8
  [ "$size" = 124M ] && steps=5
  common=(--data "$data" --size "$size" --batch 4 --seq 64 --steps "$steps" --warmup 2 --val-every 0 --seed 1)
  "$gpt2" train "${common[@]}" --steps 1 --out "$tmp/init" --save-init "$tmp/init.safetensors" >/dev/null
  for threads in 1 2; do
    export UJ_CACHE_DIR="$tmp/cache.$size.$threads"
    ours=() theirs=() first="" warm=""
    for ((r = 0; r < ROUNDS; r++)); do
      UJ_THREADS=$threads "$gpt2" train "${common[@]}" --init "$tmp/init.safetensors" --out "$tmp/run" >"$tmp/ours.log"
      [ -n "$first" ] || first=$(step_ms first <"$tmp/ours.log")
      [ "$r" != 1 ] || warm=$(step_ms first <"$tmp/ours.log")
      ours+=("$(step_ms rest <"$tmp/ours.log")")
      theirs+=("$(/usr/bin/python3 tools/gpt2/train_torch.py "$tmp/init.safetensors" "$data" --batch 4 --seq 64 --steps "$steps" \
        --warmup 2 --val-every 0 --seed 1 --threads "$threads" | awk '$1 == "ms" { print $2 }')")
    done
    u=$(printf '%s\n' "${ours[@]}" | median) p=$(printf '%s\n' "${theirs[@]}" | median)
    awk -v s="$size" -v t="$threads" -v u="$u" -v p="$p" -v f="$first" -v w="$warm" 'BEGIN {
      printf "| GPT-2 %s | %d | %.0f | %.0f | %.0f | %.0f | %.2fx | %.1f s | %.1f s |\n", s, t, u, 256000 / u, p, 256000 / p, p / u, f / 1000, w / 1000 }'
  done
done
