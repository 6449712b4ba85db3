/* lineedit.c — line editing, history and completion at the prompts, from
 * libedit (Debian's libedit-dev, through its readline interface), when
 * stdin and stdout are a terminal; and Ctrl-C.
 *
 * In: the prompt's history file name and completer (tool.h). Out: lines
 * as typed and edited (arrows, Ctrl-A/E/K/W, Ctrl-R searches back), each
 * non-blank line remembered and kept across sessions in
 * $XDG_STATE_HOME/uopjit/NAME (else ~/.local/state/uopjit/NAME; UJ_HISTORY
 * names another file, an empty one none), the last LINEEDIT_HISTORY lines.
 * Tab completes the word before the cursor from what the completer offers.
 * Ctrl-C while typing drops the entry and prompts again; while an entry
 * runs, it asks the library to stop (uj_interrupt): the entry fails with
 * "interrupted" and the prompt comes back with the session as it was.
 * Built without libedit (UJ_HAVE_LIBEDIT unset), lineedit_start says no
 * and the prompt reads plain lines (io.c). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool.h"

#ifdef UJ_HAVE_LIBEDIT
#include <editline/readline.h>

enum { LINEEDIT_HISTORY = 1000, WORDS_MAX = 4096 };

/* The prompt's state: one a process, as the terminal and SIGINT are. */
static struct {
  bool on;
  char path[4096]; /* the history file, "" for none */
  Completer complete;
  void *user;
  struct sigaction before; /* SIGINT's handling before lineedit_start */
  volatile sig_atomic_t interrupted; /* Ctrl-C since the last read */
} le;

/* Ctrl-C: the entry being typed is dropped (the read returns), or the one
 * running is asked to stop; a second Ctrl-C before it stops ends the
 * process as Ctrl-C does elsewhere (one long kernel is not cut short). */
static void on_sigint(int sig) {
  if (le.interrupted) {
    signal(sig, SIG_DFL);
    raise(sig);
    return;
  }
  le.interrupted = 1;
  uj_interrupt(true);
}

/* SIGINT to on_sigint: restarting interrupted calls while an entry runs
 * (its writes must not fail with EINTR), not while a line is read. */
static void catch_sigint(bool restart) {
  struct sigaction sa = {0};
  sa.sa_handler = on_sigint;
  sa.sa_flags = restart ? SA_RESTART : 0;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
}

/* mkdir -p of the folders above path. */
static void make_parents(const char *path) {
  char dir[sizeof le.path];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *p = dir + 1; *p; p++)
    if (*p == '/') *p = '\0', mkdir(dir, 0700), *p = '/';
}

static void history_path(const char *name) {
  const char *env = getenv("UJ_HISTORY"), *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
  int n = env             ? snprintf(le.path, sizeof le.path, "%s", env)
          : state && *state ? snprintf(le.path, sizeof le.path, "%s/uopjit/%s", state, name)
          : home && *home   ? snprintf(le.path, sizeof le.path, "%s/.local/state/uopjit/%s", home, name)
                            : -1;
  if (n < 0 || (size_t)n >= sizeof le.path) le.path[0] = '\0';
}

/* ---- completion ---- */

typedef struct Words {
  const char *prefix;
  size_t len;
  char *items[WORDS_MAX];
  size_t n;
} Words;

static void word_add(void *acc, const char *word) {
  Words *w = acc;
  if (w->n == WORDS_MAX || strncmp(word, w->prefix, w->len)) return;
  for (size_t i = 0; i < w->n; i++)
    if (!strcmp(w->items[i], word)) return;
  char *copy = strdup(word);
  if (copy) w->items[w->n++] = copy;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* readline's form: the longest common prefix, then the matches, then NULL. */
static char **complete_attempt(const char *text, int start, int end) {
  (void)end;
  rl_attempted_completion_over = 1; /* no file names */
  rl_completion_append_character = '\0'; /* "x." goes on to a method: no space after "x" */
  Words *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->prefix = text, w->len = strlen(text);
  le.complete(le.user, rl_line_buffer, (size_t)start, word_add, w);
  char **out = w->n ? malloc((w->n + 2) * sizeof *out) : NULL;
  if (out) {
    qsort(w->items, w->n, sizeof *w->items, by_name);
    size_t common = strlen(w->items[0]);
    for (size_t i = 1; i < w->n; i++)
      for (size_t k = 0; k < common; k++)
        if (w->items[i][k] != w->items[0][k]) common = k;
    out[0] = strndup(w->items[0], common);
    memcpy(out + 1, w->items, w->n * sizeof *out);
    out[w->n + 1] = NULL;
  } else {
    for (size_t i = 0; i < w->n; i++) free(w->items[i]);
  }
  free(w);
  return out;
}

/* ---- the prompt ---- */

bool lineedit_start(const char *history, Completer complete, void *user) {
  if (le.on) return true;
  if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) return false;
  le.complete = complete, le.user = user;
  rl_readline_name = "uopjit";
  rl_attempted_completion_function = complete ? complete_attempt : NULL;
  rl_basic_word_break_characters = " \t\n\"'`@$><=;|&{(,.:[])+-*/%~";
  using_history();
  stifle_history(LINEEDIT_HISTORY);
  history_path(history);
  if (le.path[0]) read_history(le.path);
  sigaction(SIGINT, NULL, &le.before);
  catch_sigint(true);
  return le.on = true;
}

bool lineedit_active(void) { return le.on; }

int lineedit_read(const char *prompt, char **line) {
  le.interrupted = 0;
  catch_sigint(false); /* a Ctrl-C ends the read */
  char *got = readline(prompt);
  catch_sigint(true);
  if (le.interrupted) { /* Ctrl-C while typing: the entry is dropped */
    free(got);
    le.interrupted = 0;
    uj_interrupt(false);
    fputs("^C\n", stdout);
    return 2;
  }
  if (!got) return 0;
  if (got[strspn(got, " \t")]) add_history(got);
  *line = got;
  return 1;
}

void lineedit_stop(void) {
  if (!le.on) return;
  if (le.path[0]) {
    make_parents(le.path);
    write_history(le.path);
    history_truncate_file(le.path, LINEEDIT_HISTORY);
  }
  sigaction(SIGINT, &le.before, NULL);
  le.on = false;
}

#else /* no libedit: plain lines */

bool lineedit_start(const char *history, Completer complete, void *user) { return false; }
bool lineedit_active(void) { return false; }
int lineedit_read(const char *prompt, char **line) { return 0; }
void lineedit_stop(void) {}

#endif
