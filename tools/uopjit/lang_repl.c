/* lang_repl.c — the tensor language's two ways in: a whole program
 * (FILE, -c TEXT or stdin) and the prompt (`uj> `).
 *
 * In: the tool's options. Out: what the program prints, on stdout (or -o
 * FILE); errors on stderr. A program stops at its first error, with
 * status 1; at the prompt each entry is run on its own (an entry goes on
 * over `... ` lines while a bracket is open or a line ends in '\'), an
 * error is reported and the variables stay. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "tool.h"


/* stdout, or the file -o names (*opened then says to close it). */
static FILE *lang_output(const Options *o, bool *opened) {
  *opened = o->out != NULL;
  if (!o->out) return stdout;
  FILE *f = fopen(o->out, "w");
  if (!f) report("cannot write '%s': %s", o->out, strerror(errno));
  return f;
}

/* Closes f when opened (-o FILE); reports a failure unless the output was
 * reported lost already. */
static bool lang_close(FILE *f, bool opened, const char *path, bool lost) {
  if (!opened) return !lost && io_flush(f, "<stdout>");
  errno = 0;
  bool ok = fclose(f) == 0;
  if (!ok && !lost) report("cannot write '%s': %s", path, errno ? strerror(errno) : "write error");
  return ok && !lost;
}

int lang_main(const Options *o) {
  const char *where;
  bool opened, lost = false;
  char *text = io_read_input(o, &where);
  FILE *out = text ? lang_output(o, &opened) : NULL;
  Lang L;
  bool ok = out && lang_init(&L, out, o->device);
  if (ok) {
    if (o->out) L.out_name = o->out;
    L.emit = o->emit_given, L.emit_kind = o->emit, L.arch = o->arch;
    ok = lang_run(&L, text, where);
    lost = L.lost;
    lang_free(&L);
  }
  if (out) ok = lang_close(out, opened, o->out, lost) && ok;
  free(text);
  return ok ? 0 : 1;
}

/* Whether a prompt entry is whole: no bracket left open, no final '\'. */
static bool lang_entry_whole(const char *entry) { return !lex_incomplete(entry); }

/* Tab at the prompt: commands after a leading ':', methods and attributes
 * after '.', else the variables, the functions and the constants; :dot's
 * views after `:dot `. */
static void lang_complete(void *user, const char *line, size_t start, void (*add)(void *acc, const char *word), void *acc) {
  static const char *const commands[] = {"kernels", "uops", "ir", "ptx", "amdgcn", "asm", "list", "dot", "time", "help", "quit"};
  static const char *const attrs[] = {"T", "shape", "dtype", "ndim", "grad", "lr", "grad_norm"};
  static const char *const names[] = {"True", "False", "None", "graph", "schedule", "kernel"};
  const Lang *L = user;
  size_t lead = strspn(line, " \t");
  if (start > 0 && line[start - 1] == ':' && start - 1 == lead) {
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++) add(acc, commands[k]);
  } else if (start > 0 && line[start - 1] == '.') {
    method_names(add, acc);
    for (size_t k = 0; k < sizeof attrs / sizeof *attrs; k++) add(acc, attrs[k]);
  } else {
    for (size_t i = 0; i < L->nvars; i++) add(acc, L->vars[i].name);
    func_names(add, acc);
    for (size_t k = 0; k < (strncmp(line + lead, ":dot ", 5) ? 3 : 6); k++) add(acc, names[k]);
  }
}

int lang_repl_main(const Options *o) {
  Lang L;
  if (!lang_init(&L, stdout, o->device)) return 1;
  PromptInput in = {.history = "history", .complete = lang_complete, .user = &L};
  int got = 0;
  printf("%s\nthe tensor language; type :help for help, :quit to leave\n", uj_version());
  while (!L.quit && !L.lost && (got = prompt_read(&in, lang_entry_whole)) == 1) lang_run(&L, in.entry, "<stdin>");
  if (!L.quit && !L.lost && got == 0 && in.len > 0) lang_run(&L, in.entry, "<stdin>"); /* cut by end of input */
  if (!L.quit && !L.lost && got == 0) putchar('\n');
  bool ok = lang_close(stdout, false, NULL, L.lost) && got >= 0;
  prompt_free(&in);
  lang_free(&L);
  return ok ? 0 : 1;
}
