/* lang.h — the tensor language of the uopjit tool (docs/language.md): its
 * internal interface, one section per file.
 *
 *   lang_lex.c     text -> tokens (newlines inside brackets dropped)
 *   lang_parse.c   tokens -> statements (an AST in one arena)
 *   lang_eval.c    statements -> values: variables, operators, commands
 *   lang_value.c   values (numbers, strings, lists, shared tensor handles)
 *   lang_args.c    binding call arguments to parameters, converting them
 *   lang_func.c    the functions (zeros, tensor, conv2d, ...)
 *   lang_method.c  the methods and attributes of tensors
 *   lang_train.c   parameters, backward, grads, optimizers
 *   lang_print.c   printing values, tensors in NumPy's layout
 *   lang_repl.c    the entry points: a program, or the `uj> ` prompt
 *
 * Errors: the first one is kept in a LangError (position and message) and
 * every function returns false (or NULL) up to the statement loop, which
 * reports it as `WHERE:LINE:COL: message`. Nothing aborts; every path
 * frees what it made. */
#ifndef UOPJIT_LANG_H
#define UOPJIT_LANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uopjit/tensor.h"

/* ---- errors and the arena (lang_lex.c) ---- */

typedef struct LangError {
  bool set;
  int line, col;
  char msg[512];
} LangError;

/* Keeps the first error only. */
void lang_error(LangError *e, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Memory that is freed all at once: tokens' text and the AST. */
typedef struct ArenaBlock ArenaBlock;
typedef struct Arena {
  ArenaBlock *head;
} Arena;

void *arena_alloc(Arena *a, size_t size); /* zeroed; NULL on no memory */
char *arena_strndup(Arena *a, const char *s, size_t n);
void arena_free(Arena *a);

/* ---- lang_lex.c ---- */

typedef enum TokKind {
  T_EOF, T_NEWLINE, T_NAME, T_INT, T_FLOAT, T_STR,
  T_LPAREN, T_RPAREN, T_LBRACK, T_RBRACK, T_COMMA, T_DOT, T_COLON, T_SEMI, T_ASSIGN,
  T_PLUS, T_MINUS, T_STAR, T_SLASH, T_AT, T_POW,
  T_LT, T_LE, T_GT, T_GE, T_EQ, T_NE, T_AMP, T_PIPE, T_CARET, T_TILDE,
  T_COUNT
} TokKind;

typedef struct Token {
  TokKind kind;
  int line, col;
  const char *start; /* in the source text */
  size_t len;
  const char *text; /* T_NAME, T_STR: NUL-terminated, in the arena */
  int64_t i;        /* T_INT */
  double f;         /* T_FLOAT */
} Token;

typedef struct Tokens {
  Token *items; /* malloc'd; the last is T_EOF */
  size_t n;
  int open; /* brackets still open at the end of the text */
} Tokens;

/* Splits text into tokens (text must outlive them). False with *err set
 * on a bad character, an unterminated string or a bad number. */
bool lex_text(const char *text, Arena *arena, Tokens *out, LangError *err);
void lex_free(Tokens *t);
/* How a token looks in a message: "')'", "'name'", "end of line". */
const char *lex_describe(const Token *t, char *buf, size_t size);
/* The spelling of an operator token ("+", "**", "<="). */
const char *lex_op_text(TokKind k);
/* Whether the text needs more lines: brackets left open or a final '\'. */
bool lex_incomplete(const char *text);

/* ---- lang_parse.c ---- */

typedef enum NodeKind {
  N_INT, N_FLOAT, N_STR, N_BOOL, N_NONE, N_NAME, N_LIST, N_TUPLE,
  N_UNARY, N_BINARY, N_CALL, N_METHOD, N_ATTR,
  N_ASSIGN, N_EXPR, N_COMMAND
} NodeKind;

typedef struct Node Node;
struct Node {
  NodeKind kind;
  int line, col;     /* of the operator, name or literal */
  TokKind op;        /* N_UNARY, N_BINARY */
  const char *name;  /* N_NAME, N_CALL, N_METHOD, N_ATTR, N_ASSIGN, N_COMMAND; N_STR's text */
  const char *arch;  /* N_COMMAND: the word before its expression: a GPU arch (:ptx sm_80 EXPR), :dot's view
                        (graph, schedule, kernel), or NULL */
  int64_t i;         /* N_INT, N_BOOL; :dot kernel N's N */
  double f;          /* N_FLOAT */
  Node *a, *b;       /* operands; N_METHOD/N_ATTR object; N_ASSIGN/N_EXPR/N_COMMAND expression */
  Node **items;      /* N_LIST, N_TUPLE items; N_CALL, N_METHOD arguments */
  const char **keys; /* per argument: its keyword, or NULL */
  size_t n;
};

typedef struct Program {
  Node **stmts;
  size_t n;
} Program;

/* How deep expressions may nest inside one another (brackets, call
 * arguments, exponents of '**'): the parser and the evaluator recurse
 * that deep, within any C stack (docs/language.md, "Limits"). */
enum { LANG_MAX_DEPTH = 1000 };

/* Parses tokens into statements, allocated in arena. */
bool parse_program(const Tokens *t, Arena *arena, Program *out, LangError *err);

/* ---- lang_value.c ---- */

/* A tensor handle shared by values: uj_tensor_free when the last goes. */
typedef struct TensorRef {
  uj_tensor *t;
  long refs;
} TensorRef;

/* An optimizer shared by values: uj_optim_free when the last goes; it
 * holds its parameters' values (a list), so they live as long as it. */
typedef struct OptimRef {
  uj_optimizer *o;
  const char *kind; /* "sgd", "adamw" */
  struct Value *params;
  long refs;
} OptimRef;

typedef enum ValueKind { V_NONE, V_INT, V_FLOAT, V_BOOL, V_STR, V_LIST, V_TUPLE, V_TENSOR, V_OPTIM } ValueKind;

typedef struct Value {
  ValueKind kind;
  int64_t i;           /* V_INT; V_BOOL 0 or 1 */
  double f;            /* V_FLOAT */
  char *s;             /* V_STR, malloc'd */
  struct Value *items; /* V_LIST, V_TUPLE, malloc'd */
  size_t n;
  TensorRef *t; /* V_TENSOR */
  OptimRef *opt; /* V_OPTIM */
} Value;

/* Each value owns what it points to; value_free releases it, value_copy
 * shares a tensor (one more reference) and copies the rest. */
void value_free(Value *v);
bool value_copy(const Value *v, Value *out);
/* A value holding t (taken over: freed on failure); false on no memory. */
bool value_tensor(uj_tensor *t, Value *out);
bool value_str(const char *s, Value *out);
const char *value_kind_name(const Value *v); /* "int", "tensor", ... */
const char *value_a_kind(const Value *v);    /* "an int", "a tensor", ... */
bool value_is_number(const Value *v);        /* int, float or bool */
double value_number(const Value *v);

/* ---- lang_eval.c ---- */

typedef struct Var {
  char *name;
  Value value;
} Var;

/* The interpreter: a session, its variables, where output goes, the first
 * error. */
typedef struct Lang {
  uj_session *session;
  Var *vars;
  size_t nvars, cap;
  FILE *out;
  const char *out_name; /* in messages: "<stdout>" unless set after lang_init */
  LangError err;
  bool quit;      /* :quit was run */
  bool lost;      /* writing to out failed (reported): nothing more runs */
  bool emit;       /* --emit: a tensor value prints its kernels as emit_kind, not its values */
  int emit_kind;   /* EMIT_UOPS or a uj_emit_kind */
  const char *arch; /* --arch, for emit */
} Lang;

/* A session on device (NULL: UJ_DEVICE, else the CPU) writing to out. */
bool lang_init(Lang *L, FILE *out, const char *device);
void lang_free(Lang *L);
/* Lexes, parses and runs text (named where in messages). On an error, it
 * is reported on stderr and false returned (L keeps going). Output is
 * flushed after each statement; a write that fails is reported as
 * "cannot write 'OUT': why" and sets L->lost. */
bool lang_run(Lang *L, const char *text, const char *where);

/* Evaluates an expression into an owned value. */
bool lang_eval_expr(Lang *L, const Node *n, Value *out);
/* Records the session's error at node n (falling back to what). */
bool eval_lib_error(Lang *L, const Node *n, const char *what);

/* ---- lang_args.c ---- */

enum { CALL_MAX_PARAMS = 8 };

/* One call of a function or method, its arguments evaluated. */
typedef struct Call {
  Lang *L;
  const Node *at; /* where errors point */
  const char *name;
  Value *pos; /* positional arguments */
  size_t npos;
  const char **keys; /* keyword arguments */
  Value *kw;
  size_t nkw;
  const Value *self; /* a method's tensor, or NULL */
  const Value *arg[CALL_MAX_PARAMS]; /* bound: per parameter, or NULL */
} Call;

typedef struct Callable Callable;
typedef bool (*CallFn)(Call *c, const Callable *f, Value *out);
/* A function or method: its parameters in order, how many are needed, and
 * whether positional arguments are all gathered (star: `zeros(*shape)`,
 * its parameters then keyword-only). */
struct Callable {
  const char *name;
  CallFn fn;
  const char *params[CALL_MAX_PARAMS]; /* NULL ends */
  unsigned required;
  bool star;
  int code; /* an op number for shared handlers */
};

/* Evaluates the argument nodes of call node n into c (c->at = n);
 * call_free(c) afterwards, whether it succeeded or not. */
bool call_eval_args(Lang *L, const Node *n, const char *name, Call *c);
void call_free(Call *c);
/* Binds c's arguments to f's parameters (c->arg). */
bool call_bind(Call *c, const Callable *f);
/* Records an error at the call, prefixed "NAME: ". */
bool call_error(Call *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
bool call_lib_error(Call *c);
/* Conversions of one argument (what names it in messages). */
bool arg_tensor(Call *c, const Value *v, const char *what, uj_tensor **t);
bool arg_int(Call *c, const Value *v, const char *what, int64_t *i);
bool arg_bool(Call *c, const Value *v, const char *what, bool *b);
bool arg_str(Call *c, const Value *v, const char *what, const char **s);
bool arg_dtype(Call *c, const Value *v, uj_scalar *dt);
/* An int or a list/tuple of ints, at most max of them. */
bool arg_ints(Call *c, const Value *v, const char *what, int64_t *out, unsigned max, unsigned *n);
/* Shape from star arguments: ints, or one list/tuple of ints. */
bool arg_shape(Call *c, const Value *vals, size_t n, int64_t *shape, unsigned *ndim);
/* An int or a pair of ints into out[2]. */
bool arg_pair(Call *c, const Value *v, const char *what, int64_t out[2]);
/* None (every axis: *n = 0), an int or a list of ints. */
bool arg_axes(Call *c, const Value *v, int *axes, unsigned *n);
/* One axis (what names it); an int past C int's range is an error, not
 * an axis it wraps to. */
bool arg_axis(Call *c, const Value *v, const char *what, int *axis);
/* n ints as axes, the same rule. */
bool arg_narrow_axes(Call *c, const int64_t *wide, unsigned n, int *axes);
/* Returns t in out, or the session's error when t is NULL. */
bool call_return(Call *c, uj_tensor *t, Value *out);
/* The name of a dtype ("float32"). */
const char *dtype_name(uj_scalar s, char *buf, size_t size);

/* ---- lang_func.c ---- */

/* Calls function `name` (node n holds the arguments). */
bool func_call(Lang *L, const Node *n, Value *out);
/* Receives names, one call each (completion at the prompt). */
typedef void (*NameSink)(void *acc, const char *name);
/* The functions' names, the training ones included. */
void func_names(NameSink add, void *acc);
/* The methods' names: tensor methods, elementwise ops, training and
 * optimizer methods. */
void method_names(NameSink add, void *acc);
/* The training functions' (methods false) or methods' names. */
void train_names(bool methods, NameSink add, void *acc);

/* ---- lang_method.c ---- */

/* The method named name into *out (the library's elementwise ops by
 * their names included); false when there is none. */
bool method_find(const char *name, Callable *out);
/* Calls method n->name on n->a's value self. */
bool method_call(Lang *L, const Node *n, const Value *self, Value *out);
/* Calls f with c's arguments where the first positional one is self. */
bool method_call_with(Call *c, const Callable *f, Value *out);
/* Attribute n->name (T, shape, dtype, ndim) of self. */
bool method_attr(Lang *L, const Node *n, const Value *self, Value *out);

/* ---- lang_train.c ---- */

/* The training methods of tensors (requires_grad, backward, zero_grad, dropout). */
bool train_method_find(const char *name, Callable *out);
/* t.grad into out (a handle of its own). */
bool train_grad_attr(Call *c, uj_tensor *t, Value *out);
/* sgd, adamw, manual_seed, rng_next; NULL for another name. */
const Callable *train_function_find(const char *name);
/* A method or attribute of an optimizer (c->self). */
bool train_optim_method(Call *c, const char *name, Value *out);
bool train_optim_attr(Call *c, const OptimRef *r, const char *name, Value *out);

/* ---- lang_print.c ---- */

/* Prints a value as a bare expression statement does (nothing for None). */
bool print_value(Lang *L, const Node *at, const Value *v);

#endif
