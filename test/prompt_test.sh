#!/usr/bin/env bash
# prompt_test.sh — the tensor language's prompt in a real terminal (CTest:
# prompt_test). In: the uopjit tool. Runs it in tmux (a pseudo-terminal, so
# libedit edits the lines) with a history file of its own, sends keys and
# reads the screen: Tab completes a method and a variable; Up brings the
# last entry back; Ctrl-C drops a line being typed; a long computation
# shows the progress line and stops at Ctrl-C with "interrupted", the
# variables intact; the history is there in a second session. Exits 1
# naming the failed check (and the screen), 77 (skipped) when the tool was
# built without libedit.
set -euo pipefail
tool=$1
fail() { echo "prompt_test: $*" >&2; exit 1; }
command -v tmux >/dev/null || fail "no tmux here: scripts/setup.sh --deps-only installs it"
tmp=$(mktemp -d)
sock=$tmp/tmux.sock
t() { tmux -S "$sock" "$@"; }
trap 't kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
screen() { t capture-pane -p -t uj -S -100 2>/dev/null || true; }
# Whether the screen shows a line matching PATTERN (grep -E). The screen is
# taken whole first: `screen | grep -q` could cut the pipe, which
# pipefail would count as no match.
shows() {
  local s
  s=$(screen)
  grep -qE -- "$1" <<<"$s"
}
wait_for() { # PATTERN [SECONDS]: until a line of the screen matches (grep -E)
  local tenths=$(( ${2:-15} * 10 ))
  for ((i = 0; i < tenths; i++)); do
    shows "$1" && return 0
    sleep 0.1
  done
  fail "the screen never showed /$1/; it shows:
$(screen | grep -v '^$' | tail -12)"
}
keys() { t send-keys -t uj "$@"; }
wait_count() { # PATTERN N: until N lines of the screen match
  for ((i = 0; i < 150; i++)); do
    [ "$(screen | grep -cE -- "$1")" = "$2" ] && return 0
    sleep 0.1
  done
  fail "the screen never showed $2 lines /$1/; it shows:
$(screen | grep -v '^$' | tail -12)"
}
start() {
  t new-session -d -x 150 -y 50 -s uj \
    "env UJ_HISTORY='$tmp/history' UJ_CACHE=0 UJ_THREADS=1 UJ_DEBUG= UJ_PROGRESS= TERM=xterm '$tool'; sleep 30"
  wait_for '^uj>' 20
}

start
shows "the tensor language" || fail "no banner: $(screen | head -3)"
libs=$(ldd "$tool" 2>/dev/null || true)
if ! grep -q libedit <<<"$libs"; then # a build without it reads plain lines: nothing to test
  echo "prompt_test: the tool was built without libedit: skipped"; exit 77
fi

# Tab: a variable, then a method after '.'.
keys 'counts = arange(5)' Enter
keys 'coun' Tab '.num' Tab '()' Enter
wait_for '^5$'
shows '^uj> counts\.numel\(\)$' || fail "Tab did not complete 'coun' and '.num' to counts.numel"

# Up: the last entry again.
keys Up Enter
wait_count '^5$' 2

# Ctrl-C while typing: the line is dropped, the prompt comes back.
keys 'this is not run' C-c
wait_for '\^C$'
keys 'counts.sum()' Enter
wait_for '^10$'
if shows "unknown name 'this'"; then fail "the line cut by Ctrl-C was run"; fi

# A long computation: the progress line after 2 s, then Ctrl-C stops it.
chain=$(printf ' @ y%.0s' $(seq 1 60))
keys "y = rand(2048, 2048, seed=1) / 2048" Enter
keys "(y$chain).sum()" Enter
wait_for 'uopjit: kernel [0-9]+ of [0-9]+' 30
keys C-c
wait_for 'interrupted' 10
wait_for '^uj>$' 10
keys 'y.shape' Enter
wait_for '^\(2048, 2048\)$'
keys 'counts.sum()' Enter
wait_count '^10$' 2 # the session goes on after the interruption

# The history in a second session.
keys ':quit' Enter
sleep 0.5
t kill-server 2>/dev/null || true
[ -s "$tmp/history" ] || fail "no history file was written"
grep -q 'arange(5)' "$tmp/history" || fail "the history file lacks 'counts = arange(5)': $(head -c 300 "$tmp/history")"
start
keys Up Up
wait_for '^uj> counts.sum\(\)'
keys C-u 'counts = 7' Enter 'counts' Enter
wait_for '^7$'
echo "prompt_test: Tab, history (across sessions), Ctrl-C at the prompt and during a computation, progress: all seen in a terminal"
