#!/bin/sh
# gen_deep.sh KIND N — prints a tensor-language program that is N deep or
# N long, for the deep-input tests of cli.cmake (docs/language.md,
# "Limits"). KIND:
#   parens   (((7)))            N brackets inside one another
#   lists    [[[7]]]            N lists inside one another
#   calls    abs(abs(ones(1)))  N calls inside one another's arguments
#   pow      7**1**1**1         N exponents (right-associative: nested)
#   minus    --7                N prefix minus signs (a loop, any length)
#   sum      1+1+1              N terms (a loop, any length)
#   methods  ones(2).neg()...   N method calls in a chain, then .sum()
#   assign   x = x + 1          N statements, then x
set -eu
rep() { yes "$2" | head -n "$1" | tr -d '\n'; }
n=$2
case $1 in
  parens) rep "$n" '('; printf 7; rep "$n" ')' ;;
  lists) rep "$n" '['; printf 7; rep "$n" ']' ;;
  calls) rep "$n" 'abs('; printf 'ones(1)'; rep "$n" ')' ;;
  pow) printf 7; rep "$n" '**1' ;;
  minus) rep "$n" '-'; printf 7 ;;
  sum) printf 1; rep $((n - 1)) '+1' ;;
  methods) printf 'ones(2)'; rep "$n" '.neg()'; printf '.sum()' ;;
  assign) printf 'x = ones(2)\n'; yes 'x = x + 1' | head -n "$n"; printf 'x' ;;
  *) echo "gen_deep.sh: unknown kind '$1'" >&2; exit 1 ;;
esac
printf '\n'
