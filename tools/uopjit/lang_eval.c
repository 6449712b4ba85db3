/* lang_eval.c — running the tensor language: statements, expressions,
 * operators, variables and the ':' commands.
 *
 * In: program text and an interpreter (Lang: a session of the lazy tensor
 * API, the variables). Out: on L->out, the value of each bare expression
 * and what commands print; on stderr, the first error as
 * `uopjit: WHERE:LINE:COL: message`, after which the program stops.
 *
 * Operators follow Python: number op number is a number (ints stay ints
 * but for '/'); tensor op tensor is uj_tensor_binary (uj_tensor_matmul for
 * '@'); tensor op number uj_tensor_binary_scalar (v_left when the number
 * is on the left). Values that no variable holds any more (temporaries,
 * overwritten variables) are freed after each statement. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lang.h"
#include "tool.h"

/* ---- variables ---- */

static Var *var_find(Lang *L, const char *name) {
  for (size_t k = 0; k < L->nvars; k++)
    if (!strcmp(L->vars[k].name, name)) return &L->vars[k];
  return NULL;
}

/* Binds name to v (taken over). */
static bool var_set(Lang *L, const Node *at, const char *name, Value *v) {
  Var *var = var_find(L, name);
  if (var) {
    value_free(&var->value);
    var->value = *v;
    return true;
  }
  if (L->nvars == L->cap) {
    size_t cap = L->cap ? 2 * L->cap : 16;
    Var *grown = realloc(L->vars, cap * sizeof *grown);
    if (!grown) goto nomem;
    L->vars = grown, L->cap = cap;
  }
  char *copy = strdup(name);
  if (!copy) goto nomem;
  L->vars[L->nvars++] = (Var){copy, *v};
  return true;
nomem:
  value_free(v);
  lang_error(&L->err, at->line, at->col, "out of memory");
  return false;
}

/* ---- numbers ---- */

static bool number_error(Lang *L, const Node *n, const char *msg) {
  lang_error(&L->err, n->line, n->col, "%s", msg);
  return false;
}

/* base ** exp (exp >= 0) by squaring: 64 steps at most, whatever exp
 * (1 ** 2**62 is 1 at once); overflow is an error. */
static bool number_int_pow(Lang *L, const Node *n, int64_t base, int64_t exp, int64_t *out) {
  int64_t r = 1;
  if (base == 0 || base == 1) return *out = exp == 0 ? 1 : base, true;
  if (base == -1) return *out = exp % 2 ? -1 : 1, true;
  for (; exp > 0; exp >>= 1) {
    if ((exp & 1) && __builtin_mul_overflow(r, base, &r)) return number_error(L, n, "integer overflow");
    if (exp > 1 && __builtin_mul_overflow(base, base, &base)) return number_error(L, n, "integer overflow");
  }
  *out = r;
  return true;
}

/* + - * ** of two ints, checked for overflow. */
static bool number_int_arith(Lang *L, const Node *n, TokKind op, int64_t a, int64_t b, int64_t *r) {
  bool over = false;
  switch (op) {
  case T_PLUS: over = __builtin_add_overflow(a, b, r); break;
  case T_MINUS: over = __builtin_sub_overflow(a, b, r); break;
  case T_STAR: over = __builtin_mul_overflow(a, b, r); break;
  default: return number_int_pow(L, n, a, b, r);
  }
  return !over || number_error(L, n, "integer overflow");
}

static bool number_compare(TokKind op, double a, double b) {
  switch (op) {
  case T_LT: return a < b;
  case T_LE: return a <= b;
  case T_GT: return a > b;
  case T_GE: return a >= b;
  case T_EQ: return a == b;
  default: return a != b;
  }
}

static bool number_bitwise(Lang *L, const Node *n, TokKind op, const Value *a, const Value *b, Value *out) {
  if (a->kind == V_FLOAT || b->kind == V_FLOAT) {
    lang_error(&L->err, n->line, n->col, "unsupported operand types for %s: '%s' and '%s'",
               lex_op_text(op), value_kind_name(a), value_kind_name(b));
    return false;
  }
  int64_t r = op == T_AMP ? a->i & b->i : op == T_PIPE ? a->i | b->i : a->i ^ b->i;
  *out = (Value){.kind = a->kind == V_BOOL && b->kind == V_BOOL ? V_BOOL : V_INT, .i = r};
  return true;
}

static bool number_binary(Lang *L, const Node *n, TokKind op, const Value *a, const Value *b, Value *out) {
  bool ints = a->kind != V_FLOAT && b->kind != V_FLOAT;
  double x = value_number(a), y = value_number(b);
  if (op >= T_LT && op <= T_NE) {
    /* ints compare exactly: through the sign of their difference */
    bool r = ints ? number_compare(op, (double)((a->i > b->i) - (a->i < b->i)), 0) : number_compare(op, x, y);
    return *out = (Value){.kind = V_BOOL, .i = r}, true;
  }
  if (op == T_AMP || op == T_PIPE || op == T_CARET) return number_bitwise(L, n, op, a, b, out);
  if (op == T_AT) return number_error(L, n, "'@' needs tensors, not numbers");
  if ((op == T_SLASH && y == 0) || (op == T_POW && x == 0 && y < 0)) return number_error(L, n, "division by zero");
  if (ints && op != T_SLASH && (op != T_POW || b->i >= 0)) {
    *out = (Value){.kind = V_INT};
    return number_int_arith(L, n, op, a->i, b->i, &out->i);
  }
  double r = op == T_PLUS ? x + y : op == T_MINUS ? x - y : op == T_STAR ? x * y : op == T_SLASH ? x / y : pow(x, y);
  *out = (Value){.kind = V_FLOAT, .f = r};
  return true;
}

/* ---- operators ---- */

/* The library op of an operator token: TokKind -> uj_binop, -1 when none. */
static int eval_binop_of(TokKind op) {
  static const int map[T_COUNT] = {
      [T_PLUS] = UJ_BIN_ADD + 1, [T_MINUS] = UJ_BIN_SUB + 1, [T_STAR] = UJ_BIN_MUL + 1,
      [T_SLASH] = UJ_BIN_DIV + 1, [T_POW] = UJ_BIN_POW + 1,  [T_LT] = UJ_BIN_LT + 1,
      [T_LE] = UJ_BIN_LE + 1,     [T_GT] = UJ_BIN_GT + 1,    [T_GE] = UJ_BIN_GE + 1,
      [T_EQ] = UJ_BIN_EQ + 1,     [T_NE] = UJ_BIN_NE + 1,    [T_AMP] = UJ_BIN_AND + 1,
      [T_PIPE] = UJ_BIN_OR + 1,   [T_CARET] = UJ_BIN_XOR + 1,
  };
  return map[op] - 1; /* 0 in the table: none */
}

bool eval_lib_error(Lang *L, const Node *n, const char *what) {
  const char *msg = uj_session_error(L->session);
  lang_error(&L->err, n->line, n->col, "%s", msg && *msg ? msg : what);
  uj_session_clear_error(L->session);
  return false;
}

/* Wraps the result of a library call made at n. */
static bool eval_result(Lang *L, const Node *n, uj_tensor *t, Value *out) {
  if (!t) return eval_lib_error(L, n, "the operation failed");
  return value_tensor(t, out) || number_error(L, n, "out of memory");
}

/* A binary operator on two values (numbers, tensors); errors at n. */
static bool eval_binary(Lang *L, const Node *n, TokKind op, const Value *a, const Value *b, Value *out) {
  bool ta = a->kind == V_TENSOR, tb = b->kind == V_TENSOR;
  if (value_is_number(a) && value_is_number(b)) return number_binary(L, n, op, a, b, out);
  if (!(ta && tb) && !(ta && value_is_number(b)) && !(tb && value_is_number(a))) {
    lang_error(&L->err, n->line, n->col, "unsupported operand types for %s: '%s' and '%s'",
               lex_op_text(op), value_kind_name(a), value_kind_name(b));
    return false;
  }
  if (op == T_AT && !(ta && tb)) return number_error(L, n, "'@' needs two tensors");
  if (op == T_AT) return eval_result(L, n, uj_tensor_matmul(a->t->t, b->t->t), out);
  uj_binop bop = (uj_binop)eval_binop_of(op);
  if (ta && tb) return eval_result(L, n, uj_tensor_binary(bop, a->t->t, b->t->t), out);
  if (ta) return eval_result(L, n, uj_tensor_binary_scalar(bop, a->t->t, value_number(b), false), out);
  return eval_result(L, n, uj_tensor_binary_scalar(bop, b->t->t, value_number(a), true), out);
}

static bool eval_unary_number(Lang *L, const Node *n, const Value *a, Value *out) {
  if (a->kind == V_FLOAT && n->op == T_TILDE) return number_error(L, n, "bad operand type for unary ~: 'float'");
  if (a->kind == V_FLOAT) return *out = (Value){.kind = V_FLOAT, .f = n->op == T_MINUS ? -a->f : a->f}, true;
  if (n->op == T_TILDE) return *out = (Value){.kind = a->kind, .i = a->kind == V_BOOL ? !a->i : ~a->i}, true;
  if (n->op == T_MINUS && a->i == INT64_MIN) return number_error(L, n, "integer overflow");
  *out = (Value){.kind = V_INT, .i = n->op == T_MINUS ? -a->i : a->i};
  return true;
}

static bool eval_unary(Lang *L, const Node *n, const Value *a, Value *out) {
  if (value_is_number(a)) return eval_unary_number(L, n, a, out);
  if (a->kind != V_TENSOR) {
    lang_error(&L->err, n->line, n->col, "bad operand type for unary %s: '%s'", lex_op_text(n->op),
               value_kind_name(a));
    return false;
  }
  if (n->op == T_PLUS) return value_copy(a, out) || number_error(L, n, "out of memory");
  return eval_result(L, n, uj_tensor_unary(n->op == T_MINUS ? UJ_UN_NEG : UJ_UN_NOT, a->t->t), out);
}

/* ---- expressions ---- */

static bool eval_items(Lang *L, const Node *n, Value *out) {
  *out = (Value){.kind = n->kind == N_LIST ? V_LIST : V_TUPLE};
  if (n->n && !(out->items = calloc(n->n, sizeof *out->items))) return number_error(L, n, "out of memory");
  for (; out->n < n->n; out->n++)
    if (!lang_eval_expr(L, n->items[out->n], &out->items[out->n])) return value_free(out), false;
  return true;
}

static bool eval_name(Lang *L, const Node *n, Value *out) {
  Var *v = var_find(L, n->name);
  if (!v) {
    lang_error(&L->err, n->line, n->col, "unknown name '%s'", n->name);
    return false;
  }
  return value_copy(&v->value, out) || number_error(L, n, "out of memory");
}

/* An operator, method or attribute: what works on its operand n->a. */
static bool eval_is_compound(const Node *n) {
  return n->kind == N_BINARY || n->kind == N_UNARY || n->kind == N_METHOD || n->kind == N_ATTR;
}

/* n applied to its evaluated first operand a (the right operand and the
 * arguments evaluated here). */
static bool eval_apply(Lang *L, const Node *n, const Value *a, Value *out) {
  Value b = {.kind = V_NONE};
  bool ok;
  if (n->kind == N_BINARY) ok = lang_eval_expr(L, n->b, &b) && eval_binary(L, n, n->op, a, &b, out);
  else if (n->kind == N_UNARY) ok = eval_unary(L, n, a, out);
  else if (n->kind == N_METHOD) ok = method_call(L, n, a, out);
  else ok = method_attr(L, n, a, out);
  value_free(&b);
  return ok;
}

/* A chain of compounds down the first operands (x + 1 + 2 + ..., -(-(x)),
 * x.neg().neg()...), any length, by a loop: the operand at its bottom
 * first, then each op upwards. Only the other operands recurse, and the
 * parser bounds how deep they nest. */
static bool eval_compound(Lang *L, const Node *n, Value *out) {
  enum { NEAR = 32 };
  const Node *near[NEAR], **chain = near;
  size_t len = 0;
  for (const Node *m = n; eval_is_compound(m); m = m->a) len++;
  if (len > NEAR && !(chain = malloc(len * sizeof *chain))) return number_error(L, n, "out of memory");
  len = 0;
  for (const Node *m = n; eval_is_compound(m); m = m->a) chain[len++] = m;
  Value acc;
  bool ok = lang_eval_expr(L, chain[len - 1]->a, &acc);
  for (size_t k = len; ok && k-- > 0;) {
    Value next = {.kind = V_NONE};
    ok = eval_apply(L, chain[k], &acc, &next);
    value_free(&acc);
    acc = next;
  }
  if (ok) *out = acc;
  else value_free(&acc);
  if (chain != near) free(chain);
  return ok;
}

bool lang_eval_expr(Lang *L, const Node *n, Value *out) {
  *out = (Value){.kind = V_NONE};
  switch (n->kind) {
  case N_INT: return *out = (Value){.kind = V_INT, .i = n->i}, true;
  case N_FLOAT: return *out = (Value){.kind = V_FLOAT, .f = n->f}, true;
  case N_BOOL: return *out = (Value){.kind = V_BOOL, .i = n->i}, true;
  case N_NONE: return true;
  case N_STR: return value_str(n->name, out) || number_error(L, n, "out of memory");
  case N_NAME: return eval_name(L, n, out);
  case N_LIST:
  case N_TUPLE: return eval_items(L, n, out);
  case N_CALL: return func_call(L, n, out);
  default: return eval_compound(L, n, out);
  }
}

/* ---- commands ---- */

static const char lang_help[] =
    "The uopjit tensor language (docs/language.md). Statements:\n"
    "  x = rand(64, 32, seed=1)        bind a name\n"
    "  (x @ w + 1.5).relu().sum(axis=1, keepdim=True)   print a value\n"
    "Functions: zeros ones full arange rand randn tensor load save where matmul\n"
    "  conv2d maxpool2d avgpool2d layernorm cross_entropy attention cat stack print\n"
    "  sgd adamw manual_seed rng_next,\n"
    "  and every method as f(x, ...)\n"
    "Methods: reshape permute expand pad shrink flip transpose sum max min mean\n"
    "  argmax argmin softmax log_softmax cast gather matmul realize numel, the\n"
    "  elementwise ops (exp log sqrt relu gelu sigmoid tanh sin cos abs neg\n"
    "  maximum minimum ...), requires_grad backward zero_grad dropout; attributes .T\n"
    "  .shape .dtype .ndim .grad\n"
    "Optimizers: opt = adamw([w, b], lr=1e-3); opt.step(loss) opt.zero_grad()\n"
    "  opt.set_lr(x); attributes .lr .grad_norm\n"
    "Commands:\n"
    "  :kernels EXPR   the kernels realizing EXPR would run\n"
    "  :uops EXPR      their UOps\n"
    "  :ir [ARCH] EXPR       their LLVM IR after the passes (ARCH: a GPU's, sm_90, gfx942...)\n"
    "  :ptx [ARCH] EXPR      their PTX, shaped for ARCH (default sm_90)\n"
    "  :amdgcn [ARCH] EXPR   their AMD GCN assembly, shaped for ARCH (default gfx90a)\n"
    "  :asm EXPR             their assembly for this CPU\n"
    "  :list [ARCH] EXPR     the lowered list each backend renders\n"
    "  :dot [VIEW] EXPR      Graphviz DOT of EXPR (dot -Tsvg): VIEW schedule\n"
    "                        (default: kernels and buffers), graph (the tensor\n"
    "                        graph) or kernel N (kernel N's UOps)\n"
    "  :time EXPR      realize EXPR and print the time it took\n"
    "  :help           this text\n"
    "  :quit           leave (so does end of input)\n";

static bool command_tensor(Lang *L, const Node *n, Value *v) {
  if (!n->a) {
    lang_error(&L->err, n->line, n->col, ":%s needs a tensor expression after it", n->name);
    return false;
  }
  if (!lang_eval_expr(L, n->a, v)) return false;
  if (v->kind == V_TENSOR) return true;
  lang_error(&L->err, n->a->line, n->a->col, ":%s needs a tensor, not %s", n->name, value_a_kind(v));
  value_free(v);
  return false;
}

static bool command_schedule(Lang *L, const Node *n, const char *what) {
  Value v;
  if (!command_tensor(L, n, &v)) return false;
  char *text = uj_tensor_schedule_text(v.t->t, what);
  bool ok = text ? (io_write_text(L->out, text), true) : eval_lib_error(L, n, "no schedule"); /* write errors: lang_run */
  free(text);
  value_free(&v);
  return ok;
}

/* A tensor's kernels printed as stage kind (EMIT_UOPS: their UOps as
 * scheduled; EMIT_DOT: the schedule as Graphviz DOT; else uj_tensor_emit's,
 * shaped for arch). */
static bool print_kernels(Lang *L, const Node *at, const Value *v, int kind, const char *arch) {
  char *text = kind == EMIT_UOPS ? uj_tensor_schedule_text(v->t->t, "uops")
               : kind == EMIT_DOT ? uj_tensor_dot(v->t->t, "schedule")
                                  : uj_tensor_emit(v->t->t, (uj_emit_kind)kind, arch);
  bool ok = text ? (io_write_text(L->out, text), true) : eval_lib_error(L, at, "no kernels");
  free(text);
  return ok;
}

/* :ir, :ptx, :amdgcn, :asm, :list: every kernel shaped for the target
 * and printed as that stage (uj_tensor_emit). */
static bool command_emit(Lang *L, const Node *n, uj_emit_kind kind) {
  Value v;
  if (!command_tensor(L, n, &v)) return false;
  bool ok = print_kernels(L, n, &v, kind, n->arch);
  value_free(&v);
  return ok;
}

/* :dot [graph | schedule | kernel N] EXPR: a picture of EXPR as Graphviz
 * DOT (uj_tensor_dot); the schedule when no view is given. */
static bool command_dot(Lang *L, const Node *n) {
  Value v;
  if (!command_tensor(L, n, &v)) return false;
  char view[48];
  if (n->arch && !strcmp(n->arch, "kernel")) snprintf(view, sizeof view, "kernel %lld", (long long)n->i);
  else snprintf(view, sizeof view, "%s", n->arch ? n->arch : "schedule");
  char *text = uj_tensor_dot(v.t->t, view);
  bool ok = text ? (io_write_text(L->out, text), true) : eval_lib_error(L, n, "no picture");
  free(text);
  value_free(&v);
  return ok;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static bool command_time(Lang *L, const Node *n) {
  Value v;
  if (!command_tensor(L, n, &v)) return false;
  size_t kernels = uj_tensor_kernel_count(v.t->t);
  double t0 = now_ms();
  uj_status st = uj_tensor_realize(&v.t->t, 1);
  double ms = now_ms() - t0;
  bool ok = st == UJ_OK ? (fprintf(L->out, "%.3f ms (%zu kernel%s)\n", ms, kernels, kernels == 1 ? "" : "s"), true)
                        : eval_lib_error(L, n, "realize failed");
  value_free(&v);
  return ok;
}

static bool command_run(Lang *L, const Node *n) {
  const char *c = n->name;
  bool none = !strcmp(c, "help") || !strcmp(c, "quit") || !strcmp(c, "q");
  if (none && n->a) {
    lang_error(&L->err, n->a->line, n->a->col, ":%s takes no expression", c);
    return false;
  }
  static const struct {
    const char *name;
    uj_emit_kind kind;
    bool arch;
  } stages[] = {{"ir", UJ_EMIT_IR_OPT, true}, {"ptx", UJ_EMIT_PTX, true}, {"amdgcn", UJ_EMIT_AMDGCN, true},
                {"asm", UJ_EMIT_ASM, false}, {"list", UJ_EMIT_LIST, true}};
  if (!strcmp(c, "dot")) return command_dot(L, n);
  if (n->arch && !none) {
    bool takes = false;
    for (size_t k = 0; k < sizeof stages / sizeof *stages; k++) takes |= !strcmp(c, stages[k].name) && stages[k].arch;
    if (!takes) {
      lang_error(&L->err, n->line, n->col, ":%s takes no arch (%s)", c, n->arch);
      return false;
    }
  }
  for (size_t k = 0; k < sizeof stages / sizeof *stages; k++)
    if (!strcmp(c, stages[k].name)) return command_emit(L, n, stages[k].kind);
  if (!strcmp(c, "kernels") || !strcmp(c, "uops")) return command_schedule(L, n, c);
  if (!strcmp(c, "time")) return command_time(L, n);
  if (!strcmp(c, "help")) return fputs(lang_help, L->out), true;
  if (none) return L->quit = true;
  lang_error(&L->err, n->line, n->col, "unknown command ':%s' (try :help)", c);
  return false;
}

/* ---- statements ---- */

static bool eval_statement(Lang *L, const Node *s) {
  Value v;
  switch (s->kind) {
  case N_ASSIGN: return lang_eval_expr(L, s->a, &v) && var_set(L, s, s->name, &v);
  case N_COMMAND: return command_run(L, s);
  default: break;
  }
  if (!lang_eval_expr(L, s->a, &v)) return false;
  bool ok = L->emit && v.kind == V_TENSOR ? print_kernels(L, s->a, &v, L->emit_kind, L->arch) : print_value(L, s->a, &v);
  value_free(&v);
  return ok;
}

bool lang_parses(const char *text) {
  Arena arena = {0};
  Tokens toks = {0};
  Program prog;
  LangError err = {0};
  bool ok = lex_text(text, &arena, &toks, &err) && parse_program(&toks, &arena, &prog, &err);
  lex_free(&toks);
  arena_free(&arena);
  return ok;
}

bool lang_init(Lang *L, FILE *out, const char *device) {
  const char *why = NULL;
  *L = (Lang){.out = out, .out_name = "<stdout>"};
  if ((L->session = uj_session_new(device, &why))) return true; /* NULL: UJ_DEVICE, else the CPU */
  report("cannot start a session: %s", why ? why : "unknown reason");
  return false;
}

void lang_free(Lang *L) {
  for (size_t k = 0; k < L->nvars; k++) {
    free(L->vars[k].name);
    value_free(&L->vars[k].value);
  }
  free(L->vars);
  if (L->session) uj_session_free(L->session);
  *L = (Lang){0};
}

/* What the statement wrote, out now; a failed write (now or buffered
 * before) is reported once. */
static bool lang_flush(Lang *L) {
  L->lost = L->lost || !io_flush(L->out, L->out_name);
  return !L->lost;
}

bool lang_run(Lang *L, const char *text, const char *where) {
  Arena arena = {0};
  Tokens toks = {0};
  Program prog;
  L->err = (LangError){0};
  bool ok = !L->lost && lex_text(text, &arena, &toks, &L->err) && parse_program(&toks, &arena, &prog, &L->err);
  for (size_t k = 0; ok && k < prog.n && !L->quit; k++) {
    ok = eval_statement(L, prog.stmts[k]);
    ok = lang_flush(L) && ok; /* what came before an error is out first */
  }
  if (L->err.set) report("%s:%d:%d: %s", where, L->err.line, L->err.col, L->err.msg);
  lex_free(&toks);
  arena_free(&arena);
  return ok;
}
