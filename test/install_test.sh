#!/usr/bin/env bash
# install_test.sh — uopjit installed as a C library and used from outside
# the tree, as a new user would (CTest: install_test).
#
# In: the build folder, the source folder, the C compiler, and the flags a
# program needs to link the build's libraries (the sanitizers' in the ASan
# build; may be empty). Installs the build into a temporary prefix with
# `cmake --install`, then checks:
#   - the files: the tool, libuopjit.so.MAJOR.MINOR with its links, libuopjit.a,
#     the headers, uopjit.pc, the CMake package, the man page (rendered);
#   - the exports: the shared library's dynamic symbols and the static
#     library's global ones are the uj_ API alone;
#   - the installed tool runs from the prefix (`--version`, a program);
#   - examples/jit_saxpy.c and examples/tensor_train.c, built outside the
#     tree through pkg-config and through find_package(uopjit) (shared and
#     static), run and print what they should; a program that defines a
#     function named like one of uopjit's internals links the static one.
# Exits 1 with a line naming the failed check.
set -euo pipefail
build=$1 src=$2 cc=$3 flags=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install failed"; }
libdir=$prefix/lib
[ -d "$libdir" ] || libdir=$(dirname "$(find "$prefix" -name libuopjit.a | head -1)")
for f in bin/uopjit include/uopjit/uopjit.h include/uopjit/tensor.h share/man/man1/uopjit.1; do
  [ -f "$prefix/$f" ] || fail "not installed: $f"
done
for f in libuopjit.a libuopjit.so pkgconfig/uopjit.pc cmake/uopjit/uopjitConfig.cmake cmake/uopjit/uopjitConfigVersion.cmake; do
  [ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done
soname=$(readelf -d "$libdir/libuopjit.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libuopjit\.so\.[0-9]+(\.[0-9]+)?$ ]] || fail "soname '$soname' is not versioned"
[ -e "$libdir/$soname" ] || fail "no $soname beside libuopjit.so"

# Only the uj_ API is visible.
nexp=$(nm -D --defined-only "$libdir/libuopjit.so" | awk '{print $3}' | grep -c '^uj_' || true)
other=$(nm -D --defined-only "$libdir/libuopjit.so" | awk '{print $3}' | grep -v '^uj_' || true)
[ -z "$other" ] || fail "libuopjit.so exports more than uj_: $(echo "$other" | head -5 | tr '\n' ' ')"
[ "$nexp" -gt 50 ] || fail "libuopjit.so exports $nexp uj_ functions"
other=$(nm -g --defined-only "$libdir/libuopjit.a" | awk 'NF == 3 {print $3}' | grep -v '^uj_' || true)
[ -z "$other" ] || fail "libuopjit.a has global symbols besides uj_: $(echo "$other" | head -5 | tr '\n' ' ')"
exports=$(nm -D --defined-only "$libdir/libuopjit.so") # whole, then searched: grep -q would cut nm's pipe (pipefail)
for f in uj_version uj_compile uj_tensor_matmul uj_optim_step; do
  grep -q " $f\$" <<<"$exports" || fail "libuopjit.so does not export $f"
done

# The tool, from the prefix alone (its RUNPATH finds the library).
version=$(env -u LD_LIBRARY_PATH "$prefix/bin/uopjit" --version) || fail "installed uopjit --version failed"
[[ $version =~ ^uopjit\ [0-9]+\.[0-9]+\.[0-9]+\ \(LLVM\ 19\. ]] || fail "--version printed '$version'"
out=$(env -u LD_LIBRARY_PATH "$prefix/bin/uopjit" -c 'x = arange(4); (x * x).sum()') || fail "installed uopjit failed"
[ "$(tail -1 <<<"$out")" = 14 ] || fail "installed uopjit printed '$out', not 14"
man=$(groff -man -Tascii -P-cbu -ww "$prefix/share/man/man1/uopjit.1" 2>"$tmp/groff.log") || fail "the man page does not render"
[ ! -s "$tmp/groff.log" ] || fail "groff warns of the man page: $(head -3 "$tmp/groff.log")"
grep -q -- '--emit' <<<"$man" || fail "the man page has no --emit"
grep -q 'UJ_DEVICE' <<<"$man" || fail "the man page has no UJ_DEVICE"
if grep -q '@PROJECT' "$prefix/share/man/man1/uopjit.1"; then fail "the man page's version was not filled in"; fi

saxpy_out='^1 3 5 7 9 11 13 15 \noptimized IR: [1-9][0-9]* bytes, PTX: [1-9][0-9]* bytes'
train_out='(?m)^w 1\.000 -1\.999 2\.999 0\.500  b 0\.250$'
check_run() { # NAME PROGRAM REGEX
  local out
  out=$(env -u LD_LIBRARY_PATH "$2" 2>&1) || { echo "$out" >&2; fail "$1: exited nonzero"; }
  grep -Pzq "$3" <<<"$out" || { echo "$out" >&2; fail "$1: unexpected output"; }
}

# pkg-config, the shared library.
export PKG_CONFIG_PATH=$libdir/pkgconfig
pkg-config --exists uopjit || fail "pkg-config does not find uopjit"
[[ $version == "uopjit $(pkg-config --modversion uopjit) "* ]] ||
  fail "uopjit.pc's version $(pkg-config --modversion uopjit) is not the tool's"
mkdir "$tmp/pc"
for ex in jit_saxpy tensor_train; do
  # shellcheck disable=SC2046,SC2086
  "$cc" -std=c11 $flags $(pkg-config --cflags uopjit) "$src/examples/$ex.c" -o "$tmp/pc/$ex" \
    $(pkg-config --libs uopjit) -Wl,-rpath,"$libdir" || fail "pkg-config: $ex does not build"
done
check_run "pkg-config jit_saxpy" "$tmp/pc/jit_saxpy" "$saxpy_out"
check_run "pkg-config tensor_train" "$tmp/pc/tensor_train" "$train_out"

# find_package: both examples on the shared library, and on the static one
# beside a function of the program's own named like an internal of uopjit.
mkdir "$tmp/cm"
cat >"$tmp/cm/own.c" <<'C'
int pool_new(void); /* libuopjit.a has a pool_new of its own, made local */
int pool_new(void) { return 7; }
C
cat >"$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(uses_uopjit C)
find_package(uopjit 0.1 REQUIRED)
add_executable(saxpy $src/examples/jit_saxpy.c)
target_link_libraries(saxpy PRIVATE uopjit::uopjit)
add_executable(train $src/examples/tensor_train.c)
target_link_libraries(train PRIVATE uopjit::uopjit)
add_executable(train_static $src/examples/tensor_train.c own.c)
target_link_libraries(train_static PRIVATE uopjit::uopjit_static)
add_executable(saxpy_static $src/examples/jit_saxpy.c own.c)
target_link_libraries(saxpy_static PRIVATE uopjit::uopjit_static)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DCMAKE_C_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" -DCMAKE_BUILD_TYPE=Release >"$tmp/cm.log" 2>&1 ||
  { cat "$tmp/cm.log"; fail "find_package: configure failed"; }
cmake --build "$tmp/cm/build" >"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package: build failed"; }
check_run "find_package saxpy" "$tmp/cm/build/saxpy" "$saxpy_out"
check_run "find_package train" "$tmp/cm/build/train" "$train_out"
check_run "find_package train_static" "$tmp/cm/build/train_static" "$train_out"
check_run "find_package saxpy_static" "$tmp/cm/build/saxpy_static" "$saxpy_out"
needed=$(readelf -d "$tmp/cm/build/train_static")
if grep -q 'libuopjit' <<<"$needed"; then fail "train_static needs libuopjit.so"; fi
echo "install_test: $prefix held the tool, both libraries ($nexp uj_ functions exported), uopjit.pc and the CMake package; 8 programs built and ran"
