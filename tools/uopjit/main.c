/* main.c — the uopjit command-line tool.
 *
 * In: one program in the IR text form (docs/text-form.md) from a FILE
 * argument, from `-c TEXT`, or from stdin. It is parsed, checked against
 * the op table, simplified (unless --no-simplify) and printed in canonical
 * text form to stdout (or to `-o FILE`). On a terminal with no input given,
 * or with -i, it is a prompt (`uj> `) that does the same for each entry.
 *
 * Errors (bad text, a graph that breaks the op table, an unreadable file,
 * a bad option) print one line `uopjit: ...` on stderr, nothing on stdout,
 * and exit with status 1. Every path frees what it allocated. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uopjit/uopjit.h"

#ifndef UJ_VERSION /* set by CMakeLists.txt from the project version */
#define UJ_VERSION "unknown"
#endif

static const char usage_text[] =
    "usage: uopjit [options] [FILE | -c TEXT]\n"
    "\n"
    "Reads a program in the uopjit IR text form (from FILE, TEXT, or stdin),\n"
    "checks it, simplifies it and prints the result.\n"
    "\n"
    "  -c TEXT          read the program from TEXT\n"
    "  -o FILE          write the result to FILE instead of stdout\n"
    "  --no-simplify    only check the program and print its canonical form\n"
    "  -i               interactive prompt, even when stdin is not a terminal\n"
    "  -h, --help       print this help\n"
    "  --version        print the version\n"
    "\n"
    "FILE '-' is stdin. With no input and stdin a terminal, uopjit prompts.\n";

static const char repl_help[] =
    "Type a program in the text form, e.g.\n"
    "  (ADD (DEFINE_VAR:int32 x 0 15) (CONST:int32 0))\n"
    "An entry may span lines and start with bindings (%x = ...); it ends\n"
    "with the root expression, once its parentheses balance. Commands:\n"
    "  :help   this text\n"
    "  :quit   leave (so does end of input)\n";

typedef struct Options {
  const char *file; /* input file, "-" for stdin, or NULL */
  const char *text; /* -c TEXT, or NULL */
  const char *out;  /* -o FILE, or NULL for stdout */
  bool simplify;
  bool interactive;
  bool help, version;
} Options;

/* One line on stderr: "uopjit: " and the message. */
static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("uopjit: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- options ---- */

static bool options_take_input(Options *o, const char *file, const char *text) {
  if (o->file || o->text) {
    report("more than one input given (see uopjit --help)");
    return false;
  }
  o->file = file;
  o->text = text;
  return true;
}

/* The value of an option that takes one (argv[*i + 1]); NULL when missing. */
static const char *options_value(int argc, char **argv, int *i) {
  if (*i + 1 >= argc) {
    report("option '%s' needs an argument", argv[*i]);
    return NULL;
  }
  return argv[++*i];
}

static bool options_parse(int argc, char **argv, Options *o) {
  *o = (Options){.simplify = true};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) o->help = true;
    else if (!strcmp(a, "--version")) o->version = true;
    else if (!strcmp(a, "--no-simplify")) o->simplify = false;
    else if (!strcmp(a, "-i")) o->interactive = true;
    else if (!strcmp(a, "-o")) {
      if (!(o->out = options_value(argc, argv, &i))) return false;
    } else if (!strcmp(a, "-c")) {
      if (!(v = options_value(argc, argv, &i)) || !options_take_input(o, NULL, v)) return false;
    } else if (a[0] == '-' && a[1] != '\0') {
      report("unknown option '%s' (see uopjit --help)", a);
      return false;
    } else if (!options_take_input(o, a, NULL)) {
      return false;
    }
  }
  return true;
}

/* ---- reading and writing ---- */

/* All of f, NUL-terminated and malloc'd; NULL on a read error (errno set). */
static char *read_stream(FILE *f) {
  size_t len = 0, cap = 4096;
  char *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len - 1, f);
    if (ferror(f)) break;
    if (feof(f)) {
      buf[len] = '\0';
      return buf;
    }
    char *grown = len + 1 == cap ? realloc(buf, cap *= 2) : buf;
    if (!grown) break;
    buf = grown;
  }
  free(buf);
  return NULL;
}

static char *read_path(const char *path) {
  if (!strcmp(path, "-")) return read_stream(stdin);
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = read_stream(f);
  int saved = errno;
  fclose(f);
  errno = saved;
  return text;
}

/* Writes text and a final newline (if it has none) to f. */
static bool write_text(FILE *f, const char *text) {
  size_t n = strlen(text);
  if (fwrite(text, 1, n, f) != n) return false;
  return (n > 0 && text[n - 1] == '\n') || fputc('\n', f) != EOF;
}

/* Writes the result to path, or to stdout when path is NULL. */
static bool write_result(const char *path, const char *text) {
  FILE *f = path ? fopen(path, "w") : stdout;
  bool ok = f && write_text(f, text);
  if (f) ok = (path ? fclose(f) : fflush(f)) == 0 && ok;
  if (!ok) report("cannot write '%s': %s", path ? path : "<stdout>", strerror(errno));
  return ok;
}

/* ---- the job: parse, check, simplify, print ---- */

/* The printed result of one program, malloc'd; NULL after reporting why. */
static char *process(const char *text, const char *where, bool simplify) {
  uj_ctx *ctx = uj_ctx_new();
  if (!ctx) {
    report("out of memory");
    return NULL;
  }
  char *result = NULL;
  const uj_uop *root = uj_parse(ctx, text, where);
  if (!root) /* the parser's message starts with where:line:col */
    report("%s", uj_error(ctx));
  else if (uj_check(ctx, root) != UJ_OK || (simplify && !(root = uj_simplify(ctx, root))))
    report("%s: %s", where, uj_error(ctx));
  else if (!(result = uj_print(ctx, root))) report("out of memory");
  uj_ctx_free(ctx);
  return result;
}

static int run_once(const Options *o) {
  bool from_stdin = !o->text && (!o->file || !strcmp(o->file, "-"));
  const char *where = o->text ? "<command line>" : from_stdin ? "<stdin>" : o->file;
  char *text = o->text ? strdup(o->text) : read_path(from_stdin ? "-" : o->file);
  if (!text) {
    report("cannot read '%s': %s", where, strerror(errno));
    return 1;
  }
  char *result = process(text, where, o->simplify);
  bool ok = result && write_result(o->out, result);
  free(result);
  free(text);
  return ok ? 0 : 1;
}

/* ---- the prompt ---- */

/* p at an opening '"': the closing one, or (strings do not span lines)
 * the last byte before the end of the line or text. */
static const char *skip_string(const char *p) {
  for (p++; *p && *p != '"' && *p != '\n'; p++)
    if (*p == '\\' && p[1] && p[1] != '\n') p++;
  return *p == '"' ? p : p - 1;
}

/* p at the start of a word or %reference: its last byte. */
static const char *skip_token(const char *p) {
  for (p++; *p && !strchr(" \t\r\n()=;\"%", *p); p++) {}
  return p - 1;
}

/* Whether an entry is a whole program: bindings (`%name = expr`), then a
 * root expression, with parentheses balanced. Comments (`;` to the end of
 * the line) and quoted names are skipped. Blanks alone are not a program. */
static bool entry_complete(const char *s) {
  long depth = 0;
  bool want_rhs = false; /* after "%name =": a bound expression comes next */
  bool in_rhs = false;   /* the top-level item being read is a bound one */
  bool done = false;     /* the last top-level item was a root expression */
  for (const char *p = s; *p; p++) {
    char c = *p;
    if (c == ';') p += strcspn(p, "\n") - 1; /* to the comment's last byte */
    if (c == ';' || c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    if (c == '"') p = skip_string(p);
    if (depth > 0) {
      depth += (c == '(') - (c == ')');
      if (depth == 0) done = !in_rhs;
      continue;
    }
    if (c == ')') return true; /* unbalanced: let the parser say so */
    if (c == '=') {
      want_rhs = true, done = false;
      continue;
    }
    in_rhs = want_rhs, want_rhs = false, done = !in_rhs;
    if (c == '(') depth++, done = false;
    else if (c != '"') p = skip_token(p);
  }
  return depth == 0 && done;
}

/* Whether s holds only blanks and comments. */
static bool entry_blank(const char *s) {
  for (s += strspn(s, " \t\r\n"); *s == ';'; s += strspn(s, " \t\r\n")) s += strcspn(s, "\n");
  return *s == '\0';
}

/* Appends line to the entry *buf (length *len); false on no memory. */
static bool entry_append(char **buf, size_t *len, const char *line) {
  size_t n = strlen(line);
  char *grown = realloc(*buf, *len + n + 1);
  if (!grown) return false;
  memcpy(grown + *len, line, n + 1);
  *buf = grown;
  *len += n;
  return true;
}

static bool is_command(const char *entry, const char *name) {
  size_t n = strlen(name);
  return !strncmp(entry, name, n) && entry[n + strspn(entry + n, " \t\r\n")] == '\0';
}

/* Handles one complete entry: a command or a program. False on :quit. */
static bool repl_entry(const Options *o, const char *entry) {
  entry += strspn(entry, " \t\r\n");
  if (is_command(entry, ":quit") || is_command(entry, ":q")) return false;
  if (is_command(entry, ":help")) {
    fputs(repl_help, stdout);
  } else if (entry[0] == ':') {
    report("unknown command '%.*s' (try :help)", (int)strcspn(entry, " \t\r\n"), entry);
  } else {
    char *result = process(entry, "<stdin>", o->simplify);
    if (result) write_text(stdout, result);
    free(result);
  }
  return true;
}

/* The prompt: reads entries from stdin until :quit or end of input. */
static int run_repl(const Options *o) {
  char *line = NULL, *entry = NULL;
  size_t line_cap = 0, len = 0;
  bool going = true;
  printf("uopjit %s: type :help for help, :quit to leave\n", UJ_VERSION);
  while (going) {
    fputs(len ? "... " : "uj> ", stdout);
    fflush(stdout);
    if (getline(&line, &line_cap, stdin) < 0) break;
    if (!entry_append(&entry, &len, line)) break;
    if (entry_blank(entry)) len = 0;
    else if (entry[strspn(entry, " \t")] == ':' || entry_complete(entry)) {
      going = repl_entry(o, entry);
      len = 0;
    }
  }
  if (going && len > 0) repl_entry(o, entry); /* an entry cut by end of input */
  if (going) putchar('\n');
  free(line);
  free(entry);
  return 0;
}

int main(int argc, char **argv) {
  Options o;
  if (!options_parse(argc, argv, &o)) return 1;
  if (o.help) return fputs(usage_text, stdout) == EOF;
  if (o.version) return printf("uopjit %s\n", UJ_VERSION) < 0;
  if (o.interactive && (o.file || o.text)) {
    report("-i reads from stdin: give no FILE or -c");
    return 1;
  }
  bool prompt = o.interactive || (!o.file && !o.text && isatty(STDIN_FILENO));
  return prompt ? run_repl(&o) : run_once(&o);
}
