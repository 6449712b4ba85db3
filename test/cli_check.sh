#!/usr/bin/env bash
# cli_check.sh — runs one command and checks what it did; one CLI test.
#
# Usage: cli_check.sh [checks...] -- COMMAND [ARGS...]
# Each check may be given more than once.
#   --status N          exit status must be N (default 0)
#   --stdin FILE        stdin comes from FILE (default /dev/null, never a tty)
#   --stdout TEXT       stdout must equal TEXT (trailing newlines ignored)
#   --stdout-file FILE  stdout must equal the contents of FILE (same rule)
#   --stdout-has TEXT   stdout must contain TEXT (a fixed string)
#   --stdout-lacks TEXT stdout must not contain TEXT
#   --stdout-empty      stdout must be empty
#   --stderr-re RE      stderr must match the extended regex RE
#   --stderr-empty      stderr must be empty
#   --stderr-lines N    stderr must have N lines
#   --file PATH TEXT    after the run, file PATH must hold TEXT
#   --file-head PATH HEX  after the run, file PATH must start with the bytes
#                       HEX (lower-case hex digits, "7f454c46" for ELF)
#   --rm PATH           remove PATH before the run
# On failure it prints what was expected and what came, and exits 1.
set -u

status=0 stdin=/dev/null fails=0
out=$(mktemp) err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

fail() {
  echo "FAIL: $1" >&2
  fails=$((fails + 1))
}

checks=() # kind, arg, arg: three entries per check, run after the command
while [ "$#" -gt 0 ]; do
  case "$1" in
    --status) status=$2; shift 2 ;;
    --stdin) stdin=$2; shift 2 ;;
    --stdout | --stdout-file | --stdout-has | --stdout-lacks | --stderr-re | --stderr-lines)
      checks+=("$1" "$2" ""); shift 2 ;;
    --stdout-empty | --stderr-empty) checks+=("$1" "" ""); shift ;;
    --file | --file-head) checks+=("$1" "$2" "$3"); shift 3 ;;
    --rm) rm -f "$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "cli_check.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

"$@" <"$stdin" >"$out" 2>"$err"
got=$?

# equal_text WANT FILE: FILE holds WANT, trailing newlines aside.
equal_text() { [ "$(cat "$2")" = "$1" ]; }
# head_hex HEX FILE: FILE starts with the bytes HEX.
head_hex() { [ "$(head -c $((${#1} / 2)) "$2" | od -An -v -tx1 | tr -d ' \n')" = "$1" ]; }

[ "$got" -eq "$status" ] || fail "exit status $got, want $status"
for ((i = 0; i < ${#checks[@]}; i += 3)); do
  kind=${checks[i]} a=${checks[i + 1]} b=${checks[i + 2]}
  case "$kind" in
    --stdout) equal_text "$a" "$out" || fail "stdout is not: $a" ;;
    --stdout-file) equal_text "$(cat "$a")" "$out" || fail "stdout differs from $a" ;;
    --stdout-has) grep -qF -- "$a" "$out" || fail "stdout lacks: $a" ;;
    --stdout-lacks) ! grep -qF -- "$a" "$out" || fail "stdout has: $a" ;;
    --stdout-empty) [ ! -s "$out" ] || fail "stdout is not empty" ;;
    --stderr-re) grep -qE -- "$a" "$err" || fail "stderr does not match: $a" ;;
    --stderr-empty) [ ! -s "$err" ] || fail "stderr is not empty" ;;
    --stderr-lines) [ "$(wc -l <"$err")" -eq "$a" ] || fail "stderr has not $a lines" ;;
    --file) { [ -f "$a" ] && equal_text "$b" "$a"; } || fail "file $a does not hold: $b" ;;
    --file-head) { [ -f "$a" ] && head_hex "$b" "$a"; } || fail "file $a does not start with bytes $b" ;;
  esac
done

if [ "$fails" -gt 0 ]; then
  echo "command: $*" >&2
  echo "--- stdout" >&2; cat "$out" >&2
  echo "--- stderr" >&2; cat "$err" >&2
  exit 1
fi
exit 0
