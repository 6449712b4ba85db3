/* repl.c — the prompt: `uj> `, one program per entry.
 *
 * In: lines from stdin. An entry is a command (a line starting with ':')
 * or a program, which may span lines and ends once its root expression is
 * complete. Out: for each program, what the options ask (--emit; the
 * simplified UOps by default) on stdout, errors on stderr. The last program
 * that went through stays: `:ir`, `:ir-opt`, `:asm`, `:ptx`, `:amdgcn` and
 * `:uops` (each with an optional ARCH) print that stage of it, `:dot` its
 * graph as Graphviz DOT. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "tool.h"


static const char repl_help[] =
    "Type a program in the text form, e.g.\n"
    "  (ADD (DEFINE_VAR:int32 x 0 15) (CONST:int32 0))\n"
    "An entry may span lines and start with bindings (%x = ...); it ends\n"
    "with the root expression, once its parentheses balance. Commands:\n"
    "  :ir [ARCH]      LLVM IR of the last program (a kernel) as rendered\n"
    "  :ir-opt [ARCH]  the same after LLVM's optimizations\n"
    "  :asm            its assembly for this CPU\n"
    "  :ptx [ARCH]     its PTX (ARCH sm_80 .. sm_90a; default sm_90)\n"
    "  :amdgcn [ARCH]  its AMDGCN assembly (ARCH gfx90a, gfx942, gfx1100...)\n"
    "  :list [ARCH]    the lowered list every backend renders\n"
    "  :uops           its UOps again\n"
    "  :dot            its UOp graph as Graphviz DOT (dot -Tsvg)\n"
    "  :help   this text\n"
    "  :quit   leave (so does end of input)\n";

typedef struct Repl {
  const Options *o;
  char *last; /* the last program that went through, or NULL */
} Repl;

/* ---- when an entry is complete ---- */

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

/* When the prompt has a whole entry: blanks, a command line, or a
 * complete program. */
static bool entry_whole(const char *s) {
  return entry_blank(s) || s[strspn(s, " \t")] == ':' || entry_complete(s);
}

/* ---- entries ---- */

/* Runs job on text and prints the result; the text becomes the last
 * program when it went through. */
static void repl_job(Repl *r, const char *text, const Job *job, bool keep) {
  Output out;
  if (!job_output(text, "<stdin>", job, &out)) return;
  io_write_text(stdout, out.data);
  free(out.data);
  char *copy = keep ? strdup(text) : NULL;
  if (copy) free(r->last), r->last = copy;
}

/* `:KIND [ARCH]` on the last program. */
static void repl_emit(Repl *r, const char *name, int kind, const char *args) {
  char arch[64] = "";
  int n = 0, nargs = sscanf(args, " %63s %n", arch, &n);
  if (kind == UJ_EMIT_HSACO) {
    report("':%s' makes a binary: use uopjit --emit=hsaco -o FILE", name);
  } else if (nargs == 1 && args[n] != '\0') {
    report("':%s' takes at most one argument, an arch", name);
  } else if (!r->last) {
    report("no program yet: enter one, then ':%s'", name);
  } else {
    Job job = {kind, nargs == 1 ? arch : NULL, r->o->simplify};
    repl_job(r, r->last, &job, false);
  }
}

/* A line starting with ':'. False on :quit. */
static bool repl_command(Repl *r, const char *entry) {
  char name[32] = "";
  size_t len = strcspn(entry + 1, " \t\r\n");
  if (len < sizeof name) memcpy(name, entry + 1, len), name[len] = '\0';
  int kind = job_emit_kind(name);
  if (!strcmp(name, "quit") || !strcmp(name, "q")) return false;
  if (!strcmp(name, "help")) fputs(repl_help, stdout);
  else if (kind != -2) repl_emit(r, name, kind, entry + 1 + len);
  else report("unknown command '%.*s' (try :help)", (int)len + 1, entry);
  return true;
}

/* Handles one complete entry: a command or a program. False on :quit. */
static bool repl_entry(Repl *r, const char *entry) {
  entry += strspn(entry, " \t\r\n");
  if (entry[0] == ':') return repl_command(r, entry);
  Job job = {r->o->emit, r->o->arch, r->o->simplify};
  repl_job(r, entry, &job, true);
  return true;
}

/* Tab at the IR prompt: commands after a leading ':', ops after '(',
 * dtypes after an op's ':'. */
static void repl_complete(void *user, const char *line, size_t start, void (*add)(void *acc, const char *word), void *acc) {
  static const char *const commands[] = {"ir", "ir-opt", "asm", "ptx", "amdgcn", "list", "uops", "dot", "help", "quit"};
  static const char *const dtypes[] = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                       "float16", "bfloat16", "float32", "float64", "void"};
  size_t lead = strspn(line, " \t");
  char before = start > 0 ? line[start - 1] : 0;
  if (before == ':' && start - 1 == lead) {
    for (size_t k = 0; k < sizeof commands / sizeof *commands; k++) add(acc, commands[k]);
  } else if (before == ':') {
    for (size_t k = 0; k < sizeof dtypes / sizeof *dtypes; k++) add(acc, dtypes[k]);
  } else if (before == '(') {
    for (int op = 0; op < UJ_OP_COUNT; op++) add(acc, uj_op_name((uj_op)op));
  }
}

int repl_main(const Options *o) {
  Repl r = {o, NULL};
  PromptInput in = {.history = "history-ir", .complete = repl_complete};
  bool going = true, lost = false;
  int got = 0;
  printf("%s\ntype :help for help, :quit to leave\n", uj_version());
  while (going && (got = prompt_read(&in, entry_whole)) == 1) {
    if (!entry_blank(in.entry)) going = repl_entry(&r, in.entry);
    lost = !io_flush(stdout, "<stdout>");
    going = going && !lost;
  }
  if (going && got == 0 && in.len > 0 && !entry_blank(in.entry)) repl_entry(&r, in.entry); /* cut by end of input */
  if (going && got == 0) putchar('\n');
  lost = lost || !io_flush(stdout, "<stdout>");
  prompt_free(&in);
  free(r.last);
  return got >= 0 && !lost ? 0 : 1;
}
