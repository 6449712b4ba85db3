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

#ifndef UJ_VERSION /* set by CMakeLists.txt from the project version */
#define UJ_VERSION "unknown"
#endif

/* stdout, or the file -o names (*opened then says to close it). */
static FILE *lang_output(const Options *o, bool *opened) {
  *opened = o->out != NULL;
  if (!o->out) return stdout;
  FILE *f = fopen(o->out, "w");
  if (!f) report("cannot write '%s': %s", o->out, strerror(errno));
  return f;
}

static bool lang_close(FILE *f, bool opened, const char *path) {
  bool ok = (opened ? fclose(f) : fflush(f)) == 0;
  if (!ok) report("cannot write '%s': %s", path ? path : "<stdout>", strerror(errno));
  return ok;
}

int lang_main(const Options *o) {
  const char *where;
  bool opened;
  char *text = io_read_input(o, &where);
  FILE *out = text ? lang_output(o, &opened) : NULL;
  Lang L;
  bool ok = out && lang_init(&L, out);
  if (ok) {
    ok = lang_run(&L, text, where);
    lang_free(&L);
  }
  if (out) ok = lang_close(out, opened, o->out) && ok;
  free(text);
  return ok ? 0 : 1;
}

int lang_repl_main(const Options *o) {
  Lang L;
  if (!lang_init(&L, stdout)) return 1;
  char *line = NULL, *entry = NULL;
  size_t line_cap = 0, len = 0;
  printf("uopjit %s: the tensor language; type :help for help, :quit to leave\n", UJ_VERSION);
  while (!L.quit) {
    fputs(len ? "... " : "uj> ", stdout);
    fflush(stdout);
    ssize_t n = getline(&line, &line_cap, stdin);
    if (n < 0) break;
    char *grown = realloc(entry, len + (size_t)n + 1);
    if (!grown) break;
    entry = grown;
    memcpy(entry + len, line, (size_t)n + 1);
    len += (size_t)n;
    if (lex_incomplete(entry)) continue;
    lang_run(&L, entry, "<stdin>");
    len = 0;
  }
  if (!L.quit && len > 0) lang_run(&L, entry, "<stdin>"); /* cut by end of input */
  if (!L.quit) putchar('\n');
  free(line);
  free(entry);
  lang_free(&L);
  return 0;
}
