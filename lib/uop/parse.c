/* parse.c — the parser of the text form (docs/text-form.md).
 *
 * In: program text and a name for it in messages ("<stdin>"). Out: the
 * interned root node, every node checked against the op table as it is
 * built (arity, arg layout, type rule); or NULL with "where:line:col:
 * message" in the context, at the first error. Iterative: an explicit stack
 * of open '(' frames, so nesting a million deep parses without recursion.
 * All scratch memory is the parser's and is freed before returning. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/hash.h"
#include "uop/spec.h"
#include "uop/text.h"

/* ---- lexer ---- */

typedef enum TokKind {
  TOK_EOF,
  TOK_LPAREN,
  TOK_RPAREN,
  TOK_EQUALS,
  TOK_COLON,
  TOK_REF,    /* %name, text includes the '%' */
  TOK_WORD,   /* op, dtype, name, number or keyword */
  TOK_STRING, /* "quoted name", text includes the quotes */
  TOK_BAD,    /* a lexical error; `bad` says what */
} TokKind;

typedef struct Token {
  TokKind kind;
  const char *text;
  size_t len;
  uint32_t line, col;
  const char *bad;
} Token;

typedef struct Lexer {
  const char *pos;
  uint32_t line, col;
} Lexer;

static void lex_step(Lexer *lx) {
  if (*lx->pos == '\n')
    lx->line++, lx->col = 1;
  else
    lx->col++;
  lx->pos++;
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
static bool is_ref_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}
static bool is_word_char(char c) { return c && !is_space(c) && !strchr("()=:;%\"", c); }

static void lex_skip_space(Lexer *lx) {
  for (;;) {
    if (*lx->pos == ';')
      while (*lx->pos && *lx->pos != '\n') lex_step(lx);
    else if (is_space(*lx->pos))
      lex_step(lx);
    else
      return;
  }
}

/* A quoted name: up to the closing '"' on the same line; '\' escapes. */
static void lex_string(Lexer *lx, Token *t) {
  lex_step(lx);
  while (*lx->pos && *lx->pos != '"' && *lx->pos != '\n') {
    if (*lx->pos == '\\' && lx->pos[1] && lx->pos[1] != '\n') lex_step(lx);
    lex_step(lx);
  }
  if (*lx->pos != '"') {
    t->kind = TOK_BAD, t->bad = "unterminated string";
    return;
  }
  lex_step(lx);
  t->kind = TOK_STRING;
}

static Token lex_next(Lexer *lx) {
  lex_skip_space(lx);
  Token t = {TOK_EOF, lx->pos, 0, lx->line, lx->col, NULL};
  char c = *lx->pos;
  if (c == '(' || c == ')' || c == '=' || c == ':') {
    t.kind = c == '(' ? TOK_LPAREN : c == ')' ? TOK_RPAREN : c == '=' ? TOK_EQUALS : TOK_COLON;
    lex_step(lx);
  } else if (c == '%') {
    lex_step(lx);
    while (is_ref_char(*lx->pos)) lex_step(lx);
    t.kind = lx->pos - t.text > 1 ? TOK_REF : TOK_BAD;
    t.bad = "expected a reference name after '%'";
  } else if (c == '"') {
    lex_string(lx, &t);
  } else if (c) {
    while (is_word_char(*lx->pos)) lex_step(lx);
    t.kind = TOK_WORD;
  }
  t.len = (size_t)(lx->pos - t.text);
  return t;
}

/* ---- parser state ---- */

/* An open '(': the node's parts so far. */
typedef struct Frame {
  uint32_t line, col; /* of the '(' */
  Op op;
  DType dtype;
  bool has_dtype;
  const char *name;  /* interned */
  size_t ints_start; /* its arg ints in Parser.ints */
  size_t src_start;  /* its sources in Parser.srcs */
} Frame;

typedef struct Binding {
  const char *name; /* in the text, after the '%' */
  size_t len;
  const UOp *node;
} Binding;

typedef struct Parser {
  Ctx *ctx;
  const char *where;
  Lexer lx;
  Token tok; /* the current token; lx is just past it */
  Frame *frames;
  size_t nframes, cap_frames;
  const UOp **srcs;
  size_t nsrcs, cap_srcs;
  int64_t *ints;
  size_t nints, cap_ints;
  Binding *refs; /* open addressing, cap a power of two */
  size_t nrefs, cap_refs;
  UOp *scratch; /* a provisional node for type inference */
  size_t cap_scratch;
  char *chars; /* a decoded string */
  size_t cap_chars;
} Parser;

static void parser_free(Parser *p) {
  free(p->frames);
  free(p->srcs);
  free(p->ints);
  free(p->refs);
  free(p->scratch);
  free(p->chars);
}

/* ---- errors ---- */

/* Every fail_* sets the message and returns NULL, so `return fail_...`
 * also serves a function that returns false. */

static void *fail_at(Parser *p, uint32_t line, uint32_t col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void *fail_at(Parser *p, uint32_t line, uint32_t col, const char *fmt, ...) {
  char msg[sizeof p->ctx->error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ctx_set_error(p->ctx, "%s:%" PRIu32 ":%" PRIu32 ": %s", p->where, line, col, msg);
  return NULL;
}

enum { TOKEN_SHOWN = 40 }; /* longer tokens are cut in messages */

/* "expected WHAT but found 'TOKEN'", at the current token; `op` names the
 * node whose arg is being read, or is NULL. */
static void *fail_expected(Parser *p, const char *op, const char *what) {
  const Token *t = &p->tok;
  const char *sep = op ? ": " : "";
  if (!op) op = "";
  if (t->kind == TOK_EOF)
    return fail_at(p, t->line, t->col, "%s%sunexpected end of input, expected %s", op, sep, what);
  int shown = t->len > TOKEN_SHOWN ? TOKEN_SHOWN : (int)t->len;
  return fail_at(p, t->line, t->col, "%s%sexpected %s but found '%.*s%s'", op, sep, what, shown,
                 t->text, t->len > TOKEN_SHOWN ? "..." : "");
}

static void *fail_nomem(Parser *p) {
  ctx_set_error(p->ctx, "%s: out of memory while parsing", p->where);
  return NULL;
}

/* A message from the op table, named by its op unless it starts so. */
static void *fail_rule(Parser *p, const Frame *f, const char *msg) {
  const char *name = op_info(f->op)->name;
  size_t n = strlen(name);
  if (strncmp(msg, name, n) == 0 && msg[n] == ' ') return fail_at(p, f->line, f->col, "%s", msg);
  return fail_at(p, f->line, f->col, "%s: %s", name, msg);
}

static bool advance(Parser *p) {
  p->tok = lex_next(&p->lx);
  if (p->tok.kind != TOK_BAD) return true;
  fail_at(p, p->tok.line, p->tok.col, "%s", p->tok.bad);
  return false;
}

static TokKind peek_kind(const Parser *p) {
  Lexer copy = p->lx;
  return lex_next(&copy).kind;
}

/* ---- growing arrays ---- */

/* Room for `need` elements: returns the (maybe moved) array, or NULL with
 * the old one untouched. */
static void *vec_grow(void *data, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return data;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need) n *= 2;
  void *d = realloc(data, n * elem);
  if (d) *cap = n;
  return d;
}

static bool push_src(Parser *p, const UOp *u) {
  const UOp **v = vec_grow(p->srcs, &p->cap_srcs, p->nsrcs + 1, sizeof *v);
  if (!v) return fail_nomem(p);
  p->srcs = v;
  p->srcs[p->nsrcs++] = u;
  return true;
}

static bool push_int(Parser *p, int64_t x) {
  int64_t *v = vec_grow(p->ints, &p->cap_ints, p->nints + 1, sizeof *v);
  if (!v) return fail_nomem(p);
  p->ints = v;
  p->ints[p->nints++] = x;
  return true;
}

static bool push_frame(Parser *p, const Frame *f) {
  Frame *v = vec_grow(p->frames, &p->cap_frames, p->nframes + 1, sizeof *v);
  if (!v) return fail_nomem(p);
  p->frames = v;
  p->frames[p->nframes++] = *f;
  return true;
}

/* ---- references ---- */

static size_t ref_hash(const char *s, size_t len) { return (size_t)fnv1a(FNV_OFFSET, s, len); }

/* The slot of a name: its binding, or the empty slot where it would go. */
static Binding *ref_slot(Binding *table, size_t cap, const char *name, size_t len) {
  size_t mask = cap - 1;
  for (size_t j = ref_hash(name, len) & mask;; j = (j + 1) & mask) {
    Binding *b = &table[j];
    if (!b->name || (b->len == len && memcmp(b->name, name, len) == 0)) return b;
  }
}

static bool refs_grow(Parser *p) {
  size_t cap = p->cap_refs ? p->cap_refs * 2 : 64;
  Binding *t = calloc(cap, sizeof *t);
  if (!t) return fail_nomem(p);
  for (size_t i = 0; i < p->cap_refs; i++)
    if (p->refs[i].name) *ref_slot(t, cap, p->refs[i].name, p->refs[i].len) = p->refs[i];
  free(p->refs);
  p->refs = t;
  p->cap_refs = cap;
  return true;
}

static const UOp *ref_lookup(const Parser *p, const Token *t) {
  if (!p->cap_refs) return NULL;
  return ref_slot(p->refs, p->cap_refs, t->text + 1, t->len - 1)->node;
}

static bool ref_define(Parser *p, const Token *t, const UOp *u) {
  if ((p->nrefs + 1) * 2 > p->cap_refs && !refs_grow(p)) return false;
  *ref_slot(p->refs, p->cap_refs, t->text + 1, t->len - 1) = (Binding){t->text + 1, t->len - 1, u};
  p->nrefs++;
  return true;
}

/* ---- literals ---- */

typedef enum IntParse { INT_OK, INT_SYNTAX, INT_RANGE } IntParse;

/* [+-]digits as a sign and a magnitude. */
static IntParse parse_integer(const Token *t, bool *neg, uint64_t *mag) {
  const char *s = t->text, *end = t->text + t->len;
  *neg = false;
  if (s < end && (*s == '+' || *s == '-')) *neg = *s++ == '-';
  if (s == end) return INT_SYNTAX;
  bool over = false;
  for (*mag = 0; s < end; s++) {
    if (*s < '0' || *s > '9') return INT_SYNTAX;
    unsigned d = (unsigned)(*s - '0');
    if (*mag > (UINT64_MAX - d) / 10)
      over = true;
    else
      *mag = *mag * 10 + d;
  }
  return over ? INT_RANGE : INT_OK;
}

static bool token_is(const Token *t, const char *s) {
  return t->kind == TOK_WORD && t->len == strlen(s) && memcmp(t->text, s, t->len) == 0;
}

/* Decimal or hex-float literal, or inf, -inf, nan. */
static bool parse_float(const Token *t, double *out) {
  if (token_is(t, "inf") || token_is(t, "-inf") || token_is(t, "nan")) {
    *out = t->text[0] == 'n' ? NAN : t->text[0] == '-' ? -INFINITY : INFINITY;
    return true;
  }
  const char *s = t->text + (t->text[0] == '+' || t->text[0] == '-');
  if (!((*s >= '0' && *s <= '9') || *s == '.')) return false;
  char *end;
  *out = strtod(t->text, &end);
  return end == t->text + t->len;
}

static bool is_name(const Token *t) {
  return t->kind == TOK_WORD && text_name_is_bare(t->text, t->len);
}

static int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* The bytes of a quoted name, escapes \" \\ \xHH decoded, in p->chars. */
static bool decode_string(Parser *p, const Token *t, size_t *len) {
  char *v = vec_grow(p->chars, &p->cap_chars, t->len, 1);
  if (!v) return fail_nomem(p);
  p->chars = v;
  *len = 0;
  for (size_t i = 1; i + 1 < t->len; i++) {
    char c = t->text[i], e = t->text[i + 1];
    if (c == '\\') {
      int hi = hex_value(t->text[i + 2]), lo = hi < 0 ? -1 : hex_value(t->text[i + 3]);
      if (e == '"' || e == '\\')
        c = e, i += 1;
      else if (e == 'x' && lo >= 0 && hi + lo > 0 && i + 4 < t->len)
        c = (char)(hi * 16 + lo), i += 3;
      else
        return fail_at(p, t->line, t->col + (uint32_t)i,
                       "bad escape in string (write \\\" \\\\ or \\xHH, HH not 00)");
    }
    p->chars[(*len)++] = c;
  }
  return true;
}

/* ---- the arg of a node, read per its ArgKind ---- */

static const char *op_name(const Frame *f) { return op_info(f->op)->name; }

/* The current token as [+-]digits, within int64 when `int64` is set, else
 * within uint64 in magnitude. */
static bool read_integer(Parser *p, const char *op, const char *what, bool int64, bool *neg,
                         uint64_t *mag) {
  IntParse r = p->tok.kind == TOK_WORD ? parse_integer(&p->tok, neg, mag) : INT_SYNTAX;
  if (r == INT_SYNTAX) return fail_expected(p, op, what);
  if (r == INT_RANGE || (int64 && *mag > (uint64_t)INT64_MAX + *neg))
    return fail_at(p, p->tok.line, p->tok.col, "integer %.*s out of range", (int)p->tok.len,
                   p->tok.text);
  return true;
}

static bool arg_int(Parser *p, const Frame *f, const char *what) {
  bool neg = false;
  uint64_t mag = 0;
  if (!read_integer(p, op_name(f), what, true, &neg, &mag)) return false;
  return push_int(p, neg ? (int64_t)(0 - mag) : (int64_t)mag) && advance(p);
}

static bool arg_name(Parser *p, Frame *f, const char *what) {
  const char *s = p->tok.text;
  size_t len = p->tok.len;
  if (p->tok.kind == TOK_STRING) {
    if (!decode_string(p, &p->tok, &len)) return false;
    s = p->chars;
  } else if (!is_name(&p->tok)) {
    return fail_expected(p, op_name(f), what);
  }
  f->name = ctx_intern_string(p->ctx, s, len);
  if (!f->name) return fail_nomem(p);
  return advance(p);
}

/* An integer literal that must fit the int scalar s; the canonical word. */
static bool const_int_word(Parser *p, uj_scalar s, uint64_t *word) {
  bool neg = false;
  uint64_t mag = 0;
  if (!read_integer(p, "CONST", "an integer", false, &neg, &mag)) return false;
  unsigned bits = scalar_table[s].bits;
  uint64_t max = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  if (scalar_table[s].is_signed) max >>= 1;
  bool fits = neg ? mag == 0 || (scalar_table[s].is_signed && mag <= max + 1) : mag <= max;
  if (!fits)
    return fail_at(p, p->tok.line, p->tok.col, "CONST: %.*s out of range for %s", (int)p->tok.len,
                   p->tok.text, scalar_table[s].name);
  *word = word_from_int(s, (int64_t)(neg ? 0 - mag : mag));
  return true;
}

static bool arg_const(Parser *p, const Frame *f) {
  uj_scalar s = (uj_scalar)f->dtype.scalar;
  uint64_t word = 0;
  double d;
  char dt[40];
  if (dt_is_ptr(f->dtype) || s == UJ_VOID)
    return fail_at(p, f->line, f->col, "CONST must have a value dtype, not %s",
                   dtype_str(f->dtype, dt, sizeof dt));
  if (p->tok.kind != TOK_WORD) return fail_expected(p, "CONST", "a value");
  if (s == UJ_BOOL) {
    if (!token_is(&p->tok, "true") && !token_is(&p->tok, "false") && !token_is(&p->tok, "1") &&
        !token_is(&p->tok, "0"))
      return fail_expected(p, "CONST", "true or false");
    word = p->tok.text[0] == 't' || p->tok.text[0] == '1';
  } else if (scalar_table[s].is_int) {
    if (!const_int_word(p, s, &word)) return false;
  } else {
    if (!parse_float(&p->tok, &d)) return fail_expected(p, "CONST", "a number");
    word = word_from_double(s, d);
  }
  return push_int(p, (int64_t)word) && advance(p);
}

/* Any number of int atoms. */
static bool arg_ints(Parser *p, Frame *f, const char *what) {
  while (p->tok.kind == TOK_WORD)
    if (!arg_int(p, f, what)) return false;
  return true;
}

static bool read_arg(Parser *p, Frame *f) {
  bool ok = true;
  switch (op_info(f->op)->arg) {
  case ARG_NONE:
    break;
  case ARG_CONST:
    ok = arg_const(p, f);
    break;
  case ARG_SLOT:
    ok = arg_int(p, f, "a slot number");
    break;
  case ARG_VAR:
    ok = arg_name(p, f, "a name") && arg_int(p, f, "a min") && arg_int(p, f, "a max");
    break;
  case ARG_BUFFER:
    ok = arg_int(p, f, "an id") && arg_int(p, f, "a size") && arg_name(p, f, "a device name");
    break;
  case ARG_CALL:
    ok = arg_name(p, f, "a callee name") && arg_ints(p, f, "a launch dimension");
    break;
  case ARG_RANGE:
    ok = arg_name(p, f, "an axis kind") && arg_int(p, f, "an axis number");
    break;
  case ARG_LANE:
    ok = arg_int(p, f, "a lane number");
    break;
  case ARG_INTS:
    ok = arg_ints(p, f, "an int");
    break;
  case ARG_REDUCE:
    ok = arg_name(p, f, "an op name") && arg_ints(p, f, "an axis");
    break;
  }
  if (ok && (p->tok.kind == TOK_WORD || p->tok.kind == TOK_STRING))
    return fail_at(p, p->tok.line, p->tok.col, "%s: unexpected arg '%.*s'", op_name(f),
                   (int)(p->tok.len > TOKEN_SHOWN ? TOKEN_SHOWN : p->tok.len), p->tok.text);
  return ok;
}

/* ---- one node: '(' OP [':' DTYPE] atoms ... ')' ---- */

static bool read_op(Parser *p, Frame *f) {
  if (p->tok.kind != TOK_WORD) return fail_expected(p, NULL, "an op name");
  if (!op_from_name(p->tok.text, p->tok.len, &f->op))
    return fail_at(p, p->tok.line, p->tok.col, "unknown op '%.*s'", (int)p->tok.len, p->tok.text);
  return advance(p);
}

/* What to suggest when a dtype the op needs is missing. */
static const char *dtype_example(Op op) {
  ArgKind k = op_info(op)->arg;
  return k == ARG_VAR ? "int32" : k == ARG_BUFFER || k == ARG_SLOT ? "float32*" : "float32";
}

static bool read_dtype(Parser *p, Frame *f) {
  f->dtype = dt_scalar(UJ_VOID);
  if (p->tok.kind != TOK_COLON) {
    if (op_info(f->op)->dtype_inferred) return true;
    const char *name = op_name(f);
    return fail_at(p, f->line, f->col, "%s needs a dtype (write %s:%s)", name, name,
                   dtype_example(f->op));
  }
  if (!advance(p)) return false;
  if (p->tok.kind != TOK_WORD) return fail_expected(p, NULL, "a dtype");
  if (!token_is(&p->tok, "void") && !dtype_parse(p->tok.text, p->tok.len, &f->dtype))
    return fail_at(p, p->tok.line, p->tok.col, "unknown dtype '%.*s'", (int)p->tok.len,
                   p->tok.text);
  f->has_dtype = true;
  return advance(p);
}

static bool open_frame(Parser *p) {
  Frame f = {.line = p->tok.line, .col = p->tok.col, .ints_start = p->nints, .src_start = p->nsrcs};
  if (!advance(p) || !read_op(p, &f) || !read_dtype(p, &f) || !read_arg(p, &f)) return false;
  return push_frame(p, &f);
}

/* The dtype the op's type rule gives a provisional node with these parts. */
static bool infer_dtype(Parser *p, const Frame *f, const UOp *const *src, size_t nsrc, Arg arg,
                        DType *out) {
  size_t need = sizeof(UOp) + nsrc * sizeof(UOp *);
  if (need > p->cap_scratch) {
    UOp *s = realloc(p->scratch, need);
    if (!s) return fail_nomem(p);
    p->scratch = s, p->cap_scratch = need;
  }
  UOp *u = p->scratch;
  memset(u, 0, sizeof *u);
  u->op = (uint16_t)f->op, u->dtype = dt_scalar(UJ_VOID), u->nsrc = (uint32_t)nsrc;
  u->name = arg.name, u->ints = arg.ints, u->nints = arg.nints;
  if (nsrc) memcpy(u->src, src, nsrc * sizeof *src);
  char buf[256];
  *out = u->dtype;
  const char *err = op_info(f->op)->type_rule(u, out, buf, sizeof buf);
  if (err) fail_rule(p, f, err);
  return err == NULL;
}

static const UOp *build_node(Parser *p, const Frame *f, const UOp *const *src, size_t nsrc,
                             Arg arg) {
  if (!spec_check_shape(p->ctx, f->op, f->dtype, nsrc, arg))
    return fail_at(p, f->line, f->col, "%s", p->ctx->error);
  DType dt = f->dtype;
  if (!f->has_dtype && !infer_dtype(p, f, src, nsrc, arg, &dt)) return NULL;
  const UOp *u = uop_new(p->ctx, f->op, dt, src, nsrc, arg);
  if (!u) return fail_at(p, f->line, f->col, "%s", p->ctx->error);
  char buf[256];
  const char *err = spec_node_error(u, buf, sizeof buf);
  return err ? fail_rule(p, f, err) : u;
}

/* At ')': builds the innermost open node from its parts. */
static const UOp *close_frame(Parser *p) {
  Frame f = p->frames[--p->nframes];
  size_t nints = p->nints - f.ints_start;
  Arg arg = {f.name, nints ? p->ints + f.ints_start : NULL, (uint32_t)nints};
  const UOp *u = build_node(p, &f, p->srcs + f.src_start, p->nsrcs - f.src_start, arg);
  p->nsrcs = f.src_start;
  p->nints = f.ints_start;
  return u && advance(p) ? u : NULL;
}

static const UOp *take_ref(Parser *p) {
  const UOp *u = ref_lookup(p, &p->tok);
  if (!u)
    return fail_at(p, p->tok.line, p->tok.col, "undefined reference '%.*s'", (int)p->tok.len,
                   p->tok.text);
  return advance(p) ? u : NULL;
}

/* ---- expressions and the program ---- */

static const UOp *parse_expr(Parser *p) {
  if (p->tok.kind == TOK_REF) return take_ref(p);
  if (p->tok.kind != TOK_LPAREN) return fail_expected(p, NULL, "an expression");
  if (!open_frame(p)) return NULL;
  for (;;) {
    const UOp *done;
    if (p->tok.kind == TOK_LPAREN) {
      if (!open_frame(p)) return NULL;
      continue;
    }
    if (p->tok.kind == TOK_REF)
      done = take_ref(p);
    else if (p->tok.kind == TOK_RPAREN)
      done = close_frame(p);
    else
      return fail_expected(p, NULL, "')'");
    if (!done || p->nframes == 0) return done;
    if (!push_src(p, done)) return NULL;
  }
}

static bool parse_binding(Parser *p) {
  Token name = p->tok;
  if (ref_lookup(p, &name))
    return fail_at(p, name.line, name.col, "reference '%.*s' defined twice", (int)name.len,
                   name.text);
  if (!advance(p) || !advance(p)) return false; /* the name, the '=' */
  const UOp *u = parse_expr(p);
  return u && ref_define(p, &name, u);
}

static const UOp *parse_program(Parser *p) {
  if (!advance(p)) return NULL;
  if (p->tok.kind == TOK_EOF) return fail_at(p, p->tok.line, p->tok.col, "empty program");
  while (p->tok.kind == TOK_REF && peek_kind(p) == TOK_EQUALS)
    if (!parse_binding(p)) return NULL;
  const UOp *root = parse_expr(p);
  if (!root || p->tok.kind == TOK_EOF) return root;
  if (p->tok.kind == TOK_LPAREN || p->tok.kind == TOK_REF)
    return fail_at(p, p->tok.line, p->tok.col, "more than one expression at top level");
  return fail_expected(p, NULL, "end of input");
}

const UOp *text_parse(Ctx *ctx, const char *text, const char *where) {
  Parser p = {.ctx = ctx, .where = where ? where : "<input>", .lx = {text, 1, 1}};
  /* srcs is never NULL: a node without sources gets a valid empty array */
  p.srcs = vec_grow(NULL, &p.cap_srcs, 64, sizeof *p.srcs);
  const UOp *root = p.srcs ? parse_program(&p) : fail_nomem(&p);
  parser_free(&p);
  return root;
}

const uj_uop *uj_parse(uj_ctx *ctx, const char *text, const char *where) {
  ctx_clear_error(ctx);
  if (!text) {
    ctx_set_error(ctx, "%s: no text to parse", where ? where : "<input>");
    return NULL;
  }
  return text_parse(ctx, text, where);
}
