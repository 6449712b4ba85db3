#!/usr/bin/env bash
# make_seeds.sh — writes the generated part of the seed corpora
# (corpus/TARGET/gen_*): inputs deep and long that nobody writes by hand,
# the symbolic rewrite cases of test/data/symbolic.txt as IR programs,
# and .npy files, valid and nearly so. The rest of each corpus is copied
# from test/data/ and examples/ (docs/fuzz.md). Run from anywhere; it
# replaces the gen_* files and nothing else. The files are committed, so
# the build never runs this.
set -euo pipefail
cd "$(dirname "$0")"
IR=corpus/ir LANG_=corpus/lang NPY=corpus/npy
rm -f "$IR"/gen_* "$LANG_"/gen_* "$NPY"/gen_*

# rep N TEXT: TEXT N times.
rep() { local s; s=$(printf "%${1}s" ""); printf '%s' "${s// /$2}"; }

# ---- IR: deep, long and wide programs; each symbolic case ----
x='(DEFINE_VAR:int32 x 0 15)'
{ rep 4000 '(NEG:int32 '; printf '%s' "$x"; rep 4000 ')'; } >"$IR/gen_deep_neg.uop"
{ rep 2500 '(ADD '; printf '%s' "$x"; rep 2500 ' (CONST:int32 1))'; } >"$IR/gen_deep_add.uop"
{ rep 1400 '(MUL (ADD '; printf '%s' "$x"; rep 1400 ' (CONST:int32 3)) (CONST:int32 2))'; } >"$IR/gen_deep_muladd.uop"
{ rep 1300 '(IDIV (MOD '; printf '%s' "$x"; rep 1300 ' (CONST:int32 7)) (CONST:int32 2))'; } >"$IR/gen_deep_divmod.uop"
{ rep 900 '(WHERE (CMPLT '; printf '%s' "$x"; rep 900 ' (CONST:int32 3)) (CONST:int32 1) (CONST:int32 2))'; } >"$IR/gen_deep_where.uop"
{ rep 3000 '(SINK '; printf '(SINK)'; rep 3000 ')'; } >"$IR/gen_deep_sink.uop"
{ printf '%%0 = %s\n' "$x"
  for i in $(seq 1 2000); do printf '%%%d = (ADD %%%d %%%d)\n' "$i" $((i - 1)) $((i - 1)); done
  printf '%%2000\n'; } >"$IR/gen_long_bindings.uop"
{ printf '(SINK'; for i in $(seq 0 2000); do printf ' (DEFINE_VAR:int32 v%d 0 %d)' "$i" "$i"; done
  printf ')\n'; } >"$IR/gen_wide_sink.uop"
{ printf '(VECTORIZE:int32x256'; rep 256 ' (CONST:int32 7)'; printf ')\n'; } >"$IR/gen_wide_vector.uop"
prelude=$(sed -n '/^%/p' ../data/symbolic.txt)
n=0
grep '^[^;].* => ' ../data/symbolic.txt | while IFS= read -r line; do
  n=$((n + 1))
  printf '%s\n%s\n' "$prelude" "${line%% => *}" >"$IR/$(printf 'gen_symbolic_%03d.uop' "$n")"
done

# ---- the tensor language: deep nesting, long chains, many statements ----
rep_lang() { printf '%s\n' "$2" >"$LANG_/gen_$1.ujs"; }
rep_lang paren_1000 "$(rep 1000 '(')1$(rep 1000 ')')"
rep_lang bracket_500 "tensor($(rep 500 '[')1$(rep 500 ']'))"
rep_lang neg_1000 "$(rep 1000 '-')1"
rep_lang not_500 "x = tensor([True, False])
$(rep 500 '~')x"
rep_lang add_1000 "1$(rep 1000 '+1')"
rep_lang pow_300 "2$(rep 300 '**1')"
rep_lang tensor_add_300 "x = ones(3)
x$(rep 300 ' + x')"
rep_lang method_300 "ones(2, 2)$(rep 300 '.neg()')"
rep_lang exp_200 "x = rand(4, seed=1)
$(rep 200 'exp(')x$(rep 200 ')')"
rep_lang reshape_200 "x = arange(6)
x$(rep 200 '.reshape(2, 3).reshape(6)')"
rep_lang list_1000 "tensor([$(rep 999 '1, ')1])"
rep_lang statements_300 "x = ones(2)
$(rep 300 'x = x * 2 + 1
')x.sum()"
rep_lang matmul_16 "w = rand(8, 8, seed=1)
x = ones(1, 8)
x$(rep 16 ' @ w')"
rep_lang big_sum "ones(65536).sum()"
rep_lang big_zeros "zeros(2**20).sum()"
rep_lang big_dims "zeros(2**62, 4)"
rep_lang big_expand "ones(1, 1).expand(2**31, 2**31).sum()"

# ---- .npy files ----
# npy NAME MAJOR DESCR FORTRAN SHAPE DATA [PAD]: magic, version MAJOR.0,
# the dict (PAD more spaces) padded to 64 bytes with '\n' last, then DATA
# (printf escapes).
npy() {
  local name=$1 major=$2 descr=$3 fortran=$4 shape=$5 data=$6 pad=${7:-0}
  local dict="{'descr': '$descr', 'fortran_order': $fortran, 'shape': $shape, }$(printf "%${pad}s" "")"
  local pre=$((major == 1 ? 10 : 12))
  local len=$(( ${#dict} + 1 )) 
  len=$(( len + (64 - (pre + len) % 64) % 64 ))
  local header
  header=$(printf "%-$((len - 1))s" "$dict")
  {
    printf '\x93NUMPY'
    printf "\\x$(printf %02x "$major")\\x00"
    if [ "$major" -eq 1 ]; then
      printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
    else
      printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $(((len >> 8) & 255)))\\x$(printf %02x $((len >> 16)))\\x00"
    fi
    printf '%s\n' "$header"
    printf "$data"
  } >"$NPY/gen_$name.npy"
}
f2='\x00\x00\x80\x3f\x00\x00\x00\x40'      # 1.0f 2.0f
i4='\x01\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04\x00\x00\x00'
npy f4_2 1 '<f4' False '(2,)' "$f2"
npy f8_scalar 1 '<f8' False '()' '\x00\x00\x00\x00\x00\x00\xf0\x3f'
npy i4_2x2 1 '<i4' False '(2, 2)' "$i4"
npy i8_1 1 '<i8' False '(1,)' '\xff\xff\xff\xff\xff\xff\xff\x7f'
npy b1_3 1 '|b1' False '(3,)' '\x01\x00\x01'
npy u1_4 1 '|u1' False '(2, 2)' '\x00\x7f\x80\xff'
npy u1_eq 1 '=u1' False '(1,)' '\x05'
npy empty 1 '<f4' False '(0, 3)' ''
npy empty_big 1 '<f4' False '(0, 4611686018427387904)' ''
npy v2 2 '<i4' False '(4,)' "$i4"
npy v3 3 '<f4' False '(2,)' "$f2"
npy dims8 1 '|u1' False '(1, 1, 1, 1, 1, 1, 1, 1)' '\x07'
npy dims9 1 '|u1' False '(1, 1, 1, 1, 1, 1, 1, 1, 1)' '\x07'
npy long_header 2 '<f4' False '(2,)' "$f2" 8000
npy fortran 1 '<f4' True '(2,)' "$f2"
npy big_endian 1 '>f4' False '(2,)' '\x3f\x80\x00\x00\x40\x00\x00\x00'
npy bad_bool 1 '|b1' False '(2,)' '\x01\x02'
npy truncated 1 '<i4' False '(4,)' '\x01\x00\x00\x00'
npy trailing 1 '<i4' False '(1,)' "$i4"
npy huge 1 '<f8' False '(4294967296, 4294967296)' ''
npy negative 1 '<f4' False '(-1,)' ''
npy unknown 1 '<c8' False '(1,)' '\x00\x00\x00\x00\x00\x00\x00\x00'
printf "\\x93NUMPY\\x01\\x00\\x46\\x00{'shape': (2,), 'fortran_order': False, \"descr\": '<f4',}" >"$NPY/gen_keys_reordered.npy"
printf "\\x93NUMPY\\x01\\x00" >"$NPY/gen_prefix_only.npy"
echo "make_seeds: $(ls "$IR"/gen_* | wc -l) ir, $(ls "$LANG_"/gen_* | wc -l) lang, $(ls "$NPY"/gen_* | wc -l) npy"
