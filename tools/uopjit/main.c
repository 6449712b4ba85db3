/* main.c — the uopjit command-line tool: options, then one of its modes.
 *
 * In: argv. `uopjit [FILE | -c TEXT]` runs a program of the tensor
 * language (docs/language.md; lang_*.c) from FILE, TEXT or stdin. With
 * --uops, --emit, --no-simplify or --arch, or a FILE ending in `.uop`, the
 * input is one program in the IR text form (docs/text-form.md) instead; it
 * is parsed, checked against the op table and printed to stdout (or `-o
 * FILE`) as --emit says: simplified UOps (the default), or a stage that
 * uj_emit makes of a kernel (LLVM IR, assembly, PTX, AMDGCN, an HSA code
 * object). On a terminal with no input given, or with -i, it is a prompt:
 * the tensor language's (lang_repl.c), or with the same options the IR's
 * (repl.c). `uopjit run ...` compiles an IR kernel for this CPU and runs it
 * (run.c). docs/tool.md describes it all.
 *
 * Errors (bad text, a graph that breaks the op table, an unreadable file,
 * a bad option) print one line `uopjit: ...` on stderr, nothing on stdout,
 * and exit with status 1. Every path frees what it allocated. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tool.h"


static const char usage_text[] =
    "usage: uopjit [-o FILE] [FILE | -c TEXT]              the tensor language\n"
    "       uopjit --uops [options] [FILE.uop | -c TEXT]   an IR program\n"
    "       uopjit run [run options] [FILE | -c TEXT]      run an IR kernel\n"
    "\n"
    "Runs a program in the uopjit tensor language (docs/language.md):\n"
    "  x = rand(64, 32, seed=1); (x @ x.T).relu().sum(axis=1)\n"
    "from FILE, TEXT or stdin. The input is instead one program in the IR text\n"
    "form, checked, simplified and printed (or a stage of its compilation),\n"
    "when --uops or --no-simplify is given or FILE ends in '.uop'; with --emit\n"
    "or --arch, when it parses as IR (a tensor program then prints its\n"
    "kernels' stage, shaped for ARCH, instead of its values). `uopjit run`\n"
    "compiles an IR kernel for this CPU, runs it on the buffers given and\n"
    "prints them.\n"
    "\n"
    "  -c TEXT          read the program from TEXT\n"
    "  -o FILE          write the output to FILE instead of stdout\n"
    "  --uops           the input is the IR text form (also at the prompt)\n"
    "  --emit=KIND      what to print: uops (default; the simplified UOps),\n"
    "                   or of a kernel: ir, ir-opt (LLVM IR before and after\n"
    "                   optimization), asm (this CPU's assembly), ptx, amdgcn,\n"
    "                   hsaco (an AMD code object: binary, needs -o or a pipe),\n"
    "                   list (the lowered kernel every backend renders); dot:\n"
    "                   Graphviz DOT of the UOp graph (of a tensor program:\n"
    "                   each value's schedule, its kernels and buffers)\n"
    "  --arch=ARCH      the GPU for --emit: sm_80 .. sm_90a (ptx; default sm_90),\n"
    "                   gfx90a, gfx942, gfx1100... (amdgcn, hsaco; default\n"
    "                   gfx90a); with ir, ir-opt or list, for that GPU\n"
    "  --device=NAME    the tensor language's device: CPU, EVAL, CUDA, CUDA:N,\n"
    "                   AMD... (default: UJ_DEVICE, else CPU)\n"
    "  --no-simplify    only check the program and print its canonical form\n"
    "  -i               interactive prompt, even when stdin is not a terminal:\n"
    "                   the tensor language's, or the IR's with --uops/--emit\n"
    "  -h, --help       print this help\n"
    "  --version        print the version\n"
    "\n"
    "run options (each may repeat):\n"
    "  --arg SLOT=V,V,...    PARAM SLOT gets these values, CONST literals of its\n"
    "                        dtype (1.5, -inf, 7, true); a value PARAM takes one\n"
    "  --arg SLOT=zeros:N    PARAM SLOT gets N elements, all zero\n"
    "  --arg SLOT=file:PATH  PARAM SLOT gets the raw bytes of PATH\n"
    "  --var NAME=INT        the value of DEFINE_VAR NAME\n"
    "  --print SLOT          print buffer SLOT after the run, as SLOT=V,V,...\n"
    "                        (default: every buffer the kernel stores to)\n"
    "  --save SLOT=FILE      write buffer SLOT's raw bytes to FILE after the run\n"
    "  --no-bounds-check     run even when an access may fall outside its buffer\n"
    "\n"
    "FILE '-' is stdin. With no input and stdin a terminal, uopjit prompts.\n"
    "UJ_DEBUG=1..4 in the environment makes the library report on stderr.\n";

/* ---- options ---- */

/* Where an option may appear: in both modes, only after `run`, not there. */
typedef enum OptionMode { MODE_ANY, MODE_RUN, MODE_NOT_RUN } OptionMode;

/* What an option does with the Options field at its offset. */
typedef enum OptionKind {
  OPT_FLAG,   /* sets a bool to flag_value */
  OPT_STRING, /* sets a const char * to its value */
  OPT_LIST,   /* appends its value to an OptionList */
  OPT_CALL,   /* calls take with its value */
} OptionKind;

typedef struct OptionSpec {
  const char *name;
  OptionMode mode;
  OptionKind kind;
  size_t field; /* offsetof in Options */
  bool flag_value;
  bool (*take)(Options *o, const char *value);
} OptionSpec;

static bool take_input(Options *o, const char *file, const char *text) {
  if (o->file || o->text) {
    report("more than one input given (see uopjit --help)");
    return false;
  }
  o->file = file;
  o->text = text;
  return true;
}

static bool take_c(Options *o, const char *v) { return take_input(o, NULL, v); }

static bool take_emit(Options *o, const char *v) {
  char known[128];
  o->emit_given = true;
  o->emit = job_emit_kind(v);
  if (o->emit == -2)
    report("unknown --emit kind '%s' (known: %s)", v, job_emit_names(known, sizeof known));
  return o->emit != -2;
}

#define FLAG(field, value) OPT_FLAG, offsetof(Options, field), value, NULL
#define STRING(field)      OPT_STRING, offsetof(Options, field), false, NULL
#define LIST(field)        OPT_LIST, offsetof(Options, run_opts.field), false, NULL
#define CALL(take)         OPT_CALL, 0, false, take
static const OptionSpec option_specs[] = {
    {"-h", MODE_ANY, FLAG(help, true)},
    {"--help", MODE_ANY, FLAG(help, true)},
    {"--version", MODE_ANY, FLAG(version, true)},
    {"-c", MODE_ANY, CALL(take_c)},
    {"-o", MODE_ANY, STRING(out)},
    {"--no-simplify", MODE_NOT_RUN, FLAG(simplify, false)},
    {"--uops", MODE_NOT_RUN, FLAG(uops, true)},
    {"-i", MODE_NOT_RUN, FLAG(interactive, true)},
    {"--emit", MODE_NOT_RUN, CALL(take_emit)},
    {"--arch", MODE_NOT_RUN, STRING(arch)},
    {"--device", MODE_NOT_RUN, STRING(device)},
    {"--arg", MODE_RUN, LIST(args)},
    {"--var", MODE_RUN, LIST(vars)},
    {"--print", MODE_RUN, LIST(prints)},
    {"--save", MODE_RUN, LIST(saves)},
    {"--no-bounds-check", MODE_RUN, FLAG(run_opts.bounds_check, false)},
};
#undef FLAG
#undef STRING
#undef LIST
#undef CALL

/* The spec of argv[*i] (`--name VALUE`, `--name=VALUE`, `-c VALUE`), its
 * value in *value; NULL when it is no option. */
static const OptionSpec *option_find(const char *a, const char **value) {
  for (size_t k = 0; k < sizeof option_specs / sizeof *option_specs; k++) {
    const OptionSpec *s = &option_specs[k];
    size_t n = strlen(s->name);
    if (strncmp(a, s->name, n) != 0) continue;
    if (a[n] == '\0') return *value = NULL, s;
    if (a[n] == '=' && s->kind != OPT_FLAG && s->name[1] == '-') return *value = a + n + 1, s;
  }
  return NULL;
}

static bool option_take(Options *o, const OptionSpec *s, int argc, char **argv, int *i,
                        const char *value) {
  if (s->mode == MODE_RUN && !o->run) {
    report("option '%s' is for 'uopjit run' (see uopjit --help)", s->name);
    return false;
  }
  if (s->mode == MODE_NOT_RUN && o->run) {
    report("option '%s' does not apply to 'uopjit run'", s->name);
    return false;
  }
  char *field = (char *)o + s->field;
  if (s->kind == OPT_FLAG) return (*(bool *)field = s->flag_value), true;
  if (!value && *i + 1 >= argc) {
    report("option '%s' needs an argument", s->name);
    return false;
  }
  if (!value) value = argv[++*i];
  if (s->kind == OPT_STRING) return (*(const char **)field = value), true;
  if (s->kind == OPT_CALL) return s->take(o, value);
  OptionList *list = (OptionList *)field;
  list->items[list->n++] = value;
  return true;
}

static bool options_parse(int argc, char **argv, Options *o) {
  *o = (Options){.simplify = true, .emit = EMIT_UOPS, .run_opts.bounds_check = true};
  int i = 1;
  if (argc > 1 && !strcmp(argv[1], "run")) {
    RunOptions *r = &o->run_opts;
    o->run = true, i = 2;
    /* one block for the four lists; each holds at most argc values */
    const char **block = calloc(4 * (size_t)argc, sizeof *block);
    if (!block) return report("out of memory"), false;
    r->args.items = block, r->vars.items = block + argc;
    r->prints.items = block + 2 * argc, r->saves.items = block + 3 * argc;
  }
  for (; i < argc; i++) {
    const char *a = argv[i], *value;
    const OptionSpec *s = option_find(a, &value);
    if (s) {
      if (!option_take(o, s, argc, argv, &i, value)) return false;
    } else if (a[0] == '-' && a[1] != '\0') {
      report("unknown option '%s' (see uopjit --help)", a);
      return false;
    } else if (!take_input(o, a, NULL)) {
      return false;
    }
  }
  return true;
}

/* Combinations the options cannot have. */
static bool options_check(const Options *o) {
  bool stdin_tty = !o->file && !o->text && isatty(STDIN_FILENO);
  if (o->interactive && (o->file || o->text)) report("-i reads from stdin: give no FILE or -c");
  else if (o->arch && (o->emit == EMIT_UOPS || o->emit == EMIT_DOT))
    report("--arch needs --emit=ir, ir-opt, ptx, amdgcn, hsaco or list");
  else if (o->arch && o->emit == UJ_EMIT_ASM)
    report("--arch does not apply to --emit=asm (this CPU's assembly)");
  else if (o->emit == UJ_EMIT_HSACO && (o->interactive || (!o->run && stdin_tty)))
    report("--emit=hsaco writes a binary: not at the prompt (give FILE or -c)");
  else if (o->emit == UJ_EMIT_HSACO && !o->out && isatty(STDOUT_FILENO))
    report("--emit=hsaco writes a binary code object: give -o FILE or pipe stdout");
  else if (o->run && stdin_tty) report("run: give the kernel as FILE, -c TEXT or '-' (stdin)");
  else return true;
  return false;
}

static void options_free(Options *o) {
  free(o->run_opts.args.items); /* the block */
  free(o->stdin_text);
}

/* ---- one program ---- */

static int main_once(const Options *o) {
  const char *where;
  char *text = io_read_input(o, &where);
  if (!text) return 1;
  Job job = {o->emit, o->arch, o->simplify};
  Output out;
  bool ok =
      job_output(text, where, &job, &out) && io_write_output(o->out, out.data, out.len, out.binary);
  free(out.data);
  free(text);
  return ok ? 0 : 1;
}

/* Whether the input is the IR text form rather than the tensor language:
 * --uops, --no-simplify or a FILE.uop say so; with --emit or --arch
 * alone, the text decides: a program that parses as IR is IR, one that
 * parses only as the tensor language is a tensor program (each of its
 * values printed as its kernels' stage); neither: IR, for its error. */
static bool main_reads_ir(Options *o) {
  size_t n = o->file ? strlen(o->file) : 0;
  bool uop_file = n > 4 && !strcmp(o->file + n - 4, ".uop");
  if (o->uops || !o->simplify || uop_file) return true;
  if (!o->emit_given && !o->arch) return false;
  if (o->interactive || (!o->file && !o->text && isatty(STDIN_FILENO))) return true; /* the IR prompt, as before */
  const char *where;
  char *text = io_read_input(o, &where);
  if (!text) return true; /* read again for the message */
  uj_ctx *ctx = uj_ctx_new();
  bool ir = !ctx || uj_parse(ctx, text, where) || !lang_parses(text);
  uj_ctx_free(ctx);
  if (!o->text && (!o->file || !strcmp(o->file, "-"))) o->stdin_text = text; /* stdin is read: keep it */
  else free(text);
  return ir;
}

static int main_mode(Options *o) {
  if (o->help) return fputs(usage_text, stdout) == EOF;
  if (o->version) return printf("%s\n", uj_version()) < 0;
  if (!options_check(o)) return 1;
  if (o->run) return run_main(o);
  bool prompt = o->interactive || (!o->file && !o->text && isatty(STDIN_FILENO));
  if (main_reads_ir(o)) {
    if (o->device) return report("--device is for the tensor language; an IR program is emitted, not run"), 1;
    return prompt ? repl_main(o) : main_once(o);
  }
  if (o->emit == UJ_EMIT_HSACO) return report("--emit=hsaco is one binary a kernel: give an IR kernel, or --emit=amdgcn"), 1;
  return prompt ? lang_repl_main(o) : lang_main(o);
}

int main(int argc, char **argv) {
  Options o;
  int status = options_parse(argc, argv, &o) ? main_mode(&o) : 1;
  options_free(&o);
  return status;
}
