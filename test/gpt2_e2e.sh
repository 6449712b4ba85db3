#!/usr/bin/env bash
# gpt2_e2e.sh — the gpt2 program end to end (CTest: gpt2_e2e; docs/gpt2.md).
#
# In: the gpt2 binary and the repository root (its data/gpt2 holds the
# tokenizer's files, which scripts/gpt2-data.sh fetches). In a temporary
# folder: tokenizes the fortunes (gpt2 prepare), trains the tiny
# configuration for 100 steps and checks its
# losses against PyTorch's (test/data/gpt2_torch_losses.txt, made once by
# tools/gpt2/train_torch.py from the same initial weights: step 1 within
# 1e-5 relative, every step within 1e-3; the same for 4 steps of two
# micro-batches each, gpt2_torch_losses_accum.txt), then stops a second run after
# step 50 and resumes it: its log must equal the first run's, bit for bit.
# Samples from the checkpoint (the same seed twice: the same text), and
# checks the error paths: a missing data folder, a corrupt checkpoint, an
# unknown option, a prompt longer than the context. Exits 1 naming the
# failed check.
set -euo pipefail
gpt2=$1
root=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "gpt2_e2e: $*" >&2; exit 1; }
export UJ_CACHE=0
tok=$root/data/gpt2
[ -f "$tok/encoder.json" ] && [ -f "$tok/vocab.bpe" ] || fail "no tokenizer in $tok: run scripts/gpt2-data.sh"
[ -d /usr/share/games/fortunes ] || fail "no fortunes: scripts/gpt2-data.sh installs the package"

mkdir "$tmp/data"
ln -s "$tok/encoder.json" "$tok/vocab.bpe" "$tmp/data/"
"$gpt2" prepare --data "$tmp/data" >"$tmp/prepare.out" || fail "prepare failed"
grep -q "training tokens" "$tmp/prepare.out" || fail "prepare said: $(cat "$tmp/prepare.out")"

# The run PyTorch's losses were made for (docs/gpt2.md, "Checked against PyTorch").
opts=(--data "$tmp/data" --size tiny --batch 2 --seq 32 --steps 100 --warmup 10 --lr 1e-3 --min-lr 1e-4
      --val-every 50 --val-batches 2 --seed 5)
"$gpt2" train "${opts[@]}" --out "$tmp/a" --save-init "$tmp/init.safetensors" >"$tmp/a.out" || fail "training failed: $(tail -3 "$tmp/a.out")"
[ "$(grep -c '^step ' "$tmp/a.out")" = 100 ] || fail "100 progress lines expected: $(cat "$tmp/a.out")"
grep -q "tok/s" "$tmp/a.out" && grep -q " left" "$tmp/a.out" || fail "the progress line lacks tokens/s or the time left"
grep -q '<svg' "$tmp/a/loss.svg" || fail "no loss curve"
[ -s "$tmp/a/checkpoint.safetensors" ] || fail "no checkpoint"

# Against PyTorch: step 1 within 1e-5 relative, every step within 1e-3.
against_torch() { # LOG EXPECTED
  awk '
    FNR == NR && /^step/ { theirs[$2] = $4; n++; next }
    FNR != NR && /^[0-9]/ {
      if (!($1 in theirs)) { print "no PyTorch loss for step " $1; bad = 1; next }
      rel = ($2 - theirs[$1]) / theirs[$1]; if (rel < 0) rel = -rel
      bound = $1 == 1 ? 1e-5 : 1e-3; seen++
      printf "step %d: uopjit %.7f PyTorch %.7f relative %.1e\n", $1, $2, theirs[$1], rel
      if (rel > bound) { printf "step %d: %.2e > %g\n", $1, rel, bound; bad = 1 }
    }
    END { if (seen != n || n == 0) { print "steps: " seen " of " n; bad = 1 } exit bad }
  ' "$2" "$1" >"$tmp/compare.out" || fail "$(basename "$1"): the losses are not PyTorch's: $(cat "$tmp/compare.out")"
}
against_torch "$tmp/a/log.tsv" "$root/test/data/gpt2_torch_losses.txt"
# Two micro-batches a step, clipped harder: the gradients accumulated.
"$gpt2" train --data "$tmp/data" --size tiny --batch 2 --seq 32 --accum 2 --steps 4 --warmup 1 --lr 1e-3 --min-lr 1e-4 \
  --val-every 0 --seed 7 --clip 0.5 --out "$tmp/acc" >"$tmp/acc.out" || fail "training with --accum 2 failed: $(tail -3 "$tmp/acc.out")"
against_torch "$tmp/acc/log.tsv" "$root/test/data/gpt2_torch_losses_accum.txt"

# Stopped after step 50, resumed: the same losses, bit for bit.
"$gpt2" train "${opts[@]}" --out "$tmp/b" --stop-after 50 >"$tmp/b.out" || fail "the first half failed"
grep -q "stopped after step 50" "$tmp/b.out" || fail "no stop message: $(tail -2 "$tmp/b.out")"
"$gpt2" train --resume "$tmp/b/checkpoint.safetensors" --data "$tmp/data" --out "$tmp/b" >"$tmp/b2.out" || fail "resuming failed: $(tail -3 "$tmp/b2.out")"
grep -q "resumed" "$tmp/b2.out" || fail "the resumed run does not say so"
cmp -s "$tmp/a/log.tsv" "$tmp/b/log.tsv" || fail "the resumed run's log differs: $(diff "$tmp/a/log.tsv" "$tmp/b/log.tsv")"

# Sampling: the prompt, then text; one seed, one text.
"$gpt2" sample "$tmp/a/checkpoint.safetensors" --data "$tmp/data" --prompt "The cat" --tokens 8 --seed 3 >"$tmp/s1" || fail "sampling failed"
"$gpt2" sample "$tmp/a/checkpoint.safetensors" --data "$tmp/data" --prompt "The cat" --tokens 8 --seed 3 >"$tmp/s2" || fail "sampling failed"
head -c 7 "$tmp/s1" | grep -q "The cat" || fail "the sample does not start with the prompt: $(cat "$tmp/s1")"
[ "$(wc -c <"$tmp/s1")" -gt 8 ] || fail "no tokens were drawn: $(cat "$tmp/s1")"
cmp -s "$tmp/s1" "$tmp/s2" || fail "one seed gave two texts"

# Bad input: a clear message and status 1 (2 for bad usage).
expect() { # STATUS TEXT COMMAND...: runs COMMAND, wants STATUS and TEXT on stderr
  local want=$1 text=$2 status=0
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err" || status=$?
  [ "$status" = "$want" ] || fail "$* exited $status, not $want: $(cat "$tmp/err")"
  grep -qF -- "$text" "$tmp/err" || fail "$* said '$(cat "$tmp/err")', not '$text'"
}
expect 1 "$tmp/none/train.bin" "$gpt2" train --data "$tmp/none" --out "$tmp/c" --size tiny --steps 1
head -c 100 "$tmp/a/checkpoint.safetensors" >"$tmp/cut.safetensors"
expect 1 "cut.safetensors" "$gpt2" sample "$tmp/cut.safetensors" --data "$tmp/data"
expect 1 "no.safetensors" "$gpt2" train --resume "$tmp/no.safetensors" --data "$tmp/data" --out "$tmp/c"
expect 2 "usage" "$gpt2" train --bogus 1
expect 2 "usage" "$gpt2" sample
expect 1 "the context" "$gpt2" sample "$tmp/a/checkpoint.safetensors" --data "$tmp/data" --prompt "$(printf 'word %.0s' $(seq 80))"
expect 1 "fortunes" "$gpt2" prepare --text "$tmp/none" --data "$tmp/data"
echo "gpt2_e2e: ok"
