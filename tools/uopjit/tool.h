/* tool.h — the uopjit command-line tool's internal interface, one section
 * per file of tools/uopjit/ (see docs/tool.md for what the tool does).
 *
 *   main.c    options, then one of: the tensor language (a program or its
 *             prompt), print/emit an IR program, the IR prompt, run
 *   report.c  report(): one line on stderr
 *   io.c      reading inputs (bounded), the prompt's lines, writing
 *             results (text or binary) and checking that they were
 *   job.c     one program through the library: its UOps or an emitted stage
 *   repl.c    the prompt (uj> ), with :ir, :ptx, ... on the last program
 *   run.c     `uopjit run`: buffers and variables from options, uj_run, print
 *   kernel.c  a kernel's signature read from its graph, and its access bounds
 *   values.c  values of a dtype: text form <-> bytes in memory
 *   lang_*.c  the tensor language (lang.h lists its files; lang_repl.c
 *             holds the two entry points below)
 *
 * Every function that fails has already reported why (one line on stderr)
 * unless its comment says otherwise. Names are prefixed by file, apart
 * from the library's (which is linked statically and does not hide its
 * internal names). */
#ifndef UOPJIT_TOOL_H
#define UOPJIT_TOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uopjit/uopjit.h"

/* ---- main.c ---- */

/* Options.emit: the UOp text, the UOp graph as Graphviz DOT (a tensor
 * program: its schedule's), else a uj_emit_kind; -2 is "unknown". */
enum { EMIT_UOPS = -1, EMIT_DOT = -3 };

/* The values of one option that may repeat, in order. */
typedef struct OptionList {
  const char **items; /* room for argc values */
  size_t n;
} OptionList;

typedef struct RunOptions {
  OptionList args, vars, prints, saves; /* --arg, --var, --print, --save */
  bool bounds_check;                    /* false with --no-bounds-check */
} RunOptions;

typedef struct Options {
  const char *file; /* input file, "-" for stdin, or NULL */
  const char *text; /* -c TEXT, or NULL */
  const char *out;  /* -o FILE, or NULL for stdout */
  bool simplify;
  bool uops;        /* --uops: the input is the IR text form */
  bool emit_given;  /* --emit was given */
  bool interactive;
  bool help, version;
  int emit;         /* --emit: EMIT_UOPS or a uj_emit_kind */
  const char *arch; /* --arch, or NULL */
  const char *device; /* --device: the tensor language's session (NULL: UJ_DEVICE, else the CPU) */
  char *stdin_text;   /* stdin, once read to see what it holds (main.c); io_read_input gives it again */
  bool run;         /* `uopjit run` */
  RunOptions run_opts;
} Options;

/* One line on stderr: "uopjit: " and the message. */
void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- io.c ---- */

/* The most the tool reads of one input (a program, stdin, a line at the
 * prompt, a `run --arg SLOT=file:PATH`): an endless input (/dev/zero) is
 * an error, not a process that fills memory. */
#define IO_MAX_INPUT ((size_t)64 << 20)

/* The text of the program the options name (FILE, -c TEXT or stdin),
 * malloc'd, and in *where its name for messages. A NUL byte in it is an
 * error (WHERE:LINE:COL). */
char *io_read_input(const Options *o, const char **where);
/* All of a file ("-": stdin), at most IO_MAX_INPUT bytes, malloc'd and
 * NUL-terminated, its length in *len (may be NULL); NULL with errno set
 * (EFBIG: longer), nothing reported. */
char *io_read_file(const char *path, size_t *len);
/* Why io_read_file failed, for "cannot read 'PATH': why". */
const char *io_read_error(char *buf, size_t size);
/* False, and "WHERE:LINE:COL: unexpected byte 0x00" reported, when text
 * (len bytes) holds a NUL. */
bool io_check_text(const char *text, size_t len, const char *where);
/* Offers the words that may complete the one being typed at line[start..]
 * (a prompt's Tab): each passed to add; lineedit keeps those that start
 * with what is typed. */
typedef void (*Completer)(void *user, const char *line, size_t start, void (*add)(void *acc, const char *word), void *acc);
/* The prompt's input: stdin's lines gathered into entries; on a terminal,
 * edited lines (lineedit.c) with the history file `history` and Tab
 * completion from `complete`. */
typedef struct PromptInput {
  char *line, *entry; /* entry: p->len bytes, NUL-terminated */
  size_t line_cap, len;
  const char *history; /* the history file's name ("history"); set before the first read */
  Completer complete;
  void *user;
} PromptInput;
/* Reads the next entry: lines, after "uj> " and then "... " on stdout,
 * until whole(entry) says it is complete. 1: an entry; 0: the end of
 * input (p->len > 0: an entry it cut); -1: a line or entry past
 * IO_MAX_INPUT, or no memory (reported). An entry holding a NUL byte is
 * reported and dropped; so is one Ctrl-C cut at a terminal. Withdraws any
 * uj_interrupt request before it returns an entry. */
int prompt_read(PromptInput *p, bool (*whole)(const char *entry));
void prompt_free(PromptInput *p);

/* ---- lineedit.c ---- */

/* Line editing on a terminal (stdin and stdout); false when not one, or
 * built without libedit. Also takes SIGINT: uj_interrupt. */
bool lineedit_start(const char *history, Completer complete, void *user);
bool lineedit_active(void);
/* The next line after prompt: 1 a line (malloc'd in *line, no '\n'), 0 the
 * end of input, 2 Ctrl-C (nothing in *line). */
int lineedit_read(const char *prompt, char **line);
/* Writes the history file; SIGINT back to its default. */
void lineedit_stop(void);
/* Flushes f; false, and "cannot write 'NAME': why" reported, when that or
 * an earlier write to it failed. */
bool io_flush(FILE *f, const char *name);
/* Writes text, with a final newline when it has none, to f. */
bool io_write_text(FILE *f, const char *text);
/* Writes data to path (NULL: stdout): text as io_write_text, or exactly
 * len bytes when binary. */
bool io_write_output(const char *path, const char *data, size_t len, bool binary);
/* "OPTION VALUE" for messages, VALUE cut to 40 bytes with "...". */
const char *io_label(const char *option, const char *value, char *buf, size_t size);

/* ---- job.c ---- */

/* What to make of one program. */
typedef struct Job {
  int emit;         /* EMIT_UOPS or a uj_emit_kind */
  const char *arch; /* for uj_emit; NULL: its default */
  bool simplify;    /* for EMIT_UOPS */
} Job;

typedef struct Output {
  char *data; /* malloc'd; NUL-terminated */
  size_t len;
  bool binary; /* UJ_EMIT_HSACO */
} Output;

/* The kind named `name` ("uops", "ir", ...): EMIT_UOPS, a uj_emit_kind,
 * or -2 when there is none (nothing reported). */
int job_emit_kind(const char *name);
/* Writes "uops, ir, ir-opt, ..." into buf. */
const char *job_emit_names(char *buf, size_t size);
/* Parses, checks and prints or emits the program `text` (named `where`). */
bool job_output(const char *text, const char *where, const Job *job, Output *out);

/* ---- repl.c ---- */

/* The prompt on stdin; status 0, or 1 when stdin or stdout failed. */
int repl_main(const Options *o);

/* ---- lang_repl.c ---- */

/* A program of the tensor language from FILE, -c TEXT or stdin: exit
 * status 0, or 1 after reporting its first error. */
int lang_main(const Options *o);
/* Whether text lexes and parses as the tensor language (lang_eval.c). */
bool lang_parses(const char *text);
/* The tensor language's prompt on stdin; status 0, or 1 when stdin or
 * stdout failed. */
int lang_repl_main(const Options *o);

/* ---- run.c ---- */

/* `uopjit run`: exit status 0, or 1 after reporting. */
int run_main(const Options *o);

/* ---- kernel.c ---- */

typedef struct SigParam {
  bool used;   /* some PARAM node has this slot */
  bool stored; /* some STORE goes through it */
  uj_dtype dtype;
} SigParam;

typedef struct SigVar {
  const char *name; /* owned by the context */
  uj_dtype dtype;
  int64_t min, max;
} SigVar;

/* What a compiled kernel takes: its PARAM slots (nparams = highest slot
 * + 1) and its DEFINE_VARs in name order. */
typedef struct Sig {
  SigParam *params;
  size_t nparams;
  SigVar *vars;
  size_t nvars;
} Sig;

/* The accesses of a kernel to one PARAM slot, once its variables are bound:
 * elements lo .. hi, or unknown. Gated accesses (INDEX with a gate) are
 * not counted: a gate is what keeps an index in bounds. */
typedef struct SigAccess {
  bool any, unknown;
  int64_t lo, hi;
} SigAccess;

bool sig_read(const uj_program *prog, Sig *sig);
void sig_free(Sig *sig);
/* The index of variable `name`, or -1. */
long sig_var(const Sig *sig, const char *name);
/* The accesses of root's LOADs and STOREs, by slot (sig->nparams entries
 * in `acc`), with each variable i bound to values[i]. */
bool sig_accesses(uj_ctx *ctx, const uj_uop *root, const Sig *sig, const int64_t *values,
                  SigAccess *acc);

/* ---- values.c ---- */

/* Bytes one scalar of s takes in memory (docs/semantics.md). */
size_t value_size(uj_scalar s);
/* Reads one value of scalar s, written as a CONST literal of the text form
 * ("1.5", "-inf", "true", "255"), into mem (value_size(s) bytes). False,
 * with the reason in why (nothing reported), on a bad or out-of-range one. */
bool value_parse(uj_ctx *ctx, uj_scalar s, const char *token, void *mem, char *why, size_t size);
/* Writes the n values of scalar s at mem to f, as the text form prints
 * CONSTs, separated by commas. */
bool value_print(uj_ctx *ctx, uj_scalar s, const void *mem, size_t n, FILE *f);

#endif
