/* lang_lex.c — the tensor language's tokens, its first error and an arena.
 *
 * In: program text (several statements, lines). Out: an array of tokens
 * ending in T_EOF, each with its line and column (1-based, in bytes).
 * Comments (# to the end of the line) and blanks are dropped; so are
 * newlines inside () or [] and after a '\', so that an expression
 * continues across lines while a bracket is open. Names and strings are
 * copied into the arena, escapes (\n \t \\ \' \") resolved. */
#define _POSIX_C_SOURCE 200809L

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"

void lang_error(LangError *e, int line, int col, const char *fmt, ...) {
  if (e->set) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  e->set = true, e->line = line, e->col = col;
}

/* ---- the arena ---- */

struct ArenaBlock {
  ArenaBlock *next;
  max_align_t data[];
};

void *arena_alloc(Arena *a, size_t size) {
  ArenaBlock *b = calloc(1, sizeof *b + size + 1);
  if (!b) return NULL;
  b->next = a->head;
  a->head = b;
  return b->data;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  if (p) memcpy(p, s, n);
  return p;
}

void arena_free(Arena *a) {
  while (a->head) {
    ArenaBlock *next = a->head->next;
    free(a->head);
    a->head = next;
  }
}

/* ---- operators ---- */

static const char *const op_texts[T_COUNT] = {
    [T_LPAREN] = "(", [T_RPAREN] = ")", [T_LBRACK] = "[", [T_RBRACK] = "]",
    [T_COMMA] = ",",  [T_DOT] = ".",    [T_COLON] = ":",  [T_SEMI] = ";",
    [T_ASSIGN] = "=", [T_PLUS] = "+",   [T_MINUS] = "-",  [T_STAR] = "*",
    [T_SLASH] = "/",  [T_AT] = "@",     [T_POW] = "**",   [T_LT] = "<",
    [T_LE] = "<=",    [T_GT] = ">",     [T_GE] = ">=",    [T_EQ] = "==",
    [T_NE] = "!=",    [T_AMP] = "&",    [T_PIPE] = "|",   [T_CARET] = "^",
    [T_TILDE] = "~",
};

const char *lex_op_text(TokKind k) { return op_texts[k] ? op_texts[k] : "?"; }

/* The operator at p (two-byte ones first), or T_EOF when none. */
static TokKind lex_op_at(const char *p, size_t *len) {
  for (int pass = 2; pass >= 1; pass--)
    for (int k = 0; k < T_COUNT; k++)
      if (op_texts[k] && strlen(op_texts[k]) == (size_t)pass && !strncmp(p, op_texts[k], (size_t)pass))
        return *len = (size_t)pass, (TokKind)k;
  return T_EOF;
}

/* ---- the scanner ---- */

typedef struct Lexer {
  const char *p, *line_start;
  int line;
  int depth; /* open brackets */
  Arena *arena;
  Tokens *out;
  size_t cap;
  LangError *err;
} Lexer;

static int lex_col(const Lexer *x, const char *at) { return (int)(at - x->line_start) + 1; }

static Token *lex_push(Lexer *x, TokKind kind, const char *start, size_t len) {
  if (x->out->n == x->cap) {
    size_t cap = x->cap ? 2 * x->cap : 64;
    Token *grown = realloc(x->out->items, cap * sizeof *grown);
    if (!grown) return lang_error(x->err, x->line, 1, "out of memory"), NULL;
    x->out->items = grown, x->cap = cap;
  }
  Token *t = &x->out->items[x->out->n++];
  *t = (Token){.kind = kind, .line = x->line, .col = lex_col(x, start), .start = start, .len = len};
  return t;
}

/* Skips blanks, comments and the newlines that do not end a statement;
 * false when a newline token is due. */
static bool lex_skip(Lexer *x) {
  for (;;) {
    char c = *x->p;
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f') x->p++;
    else if (c == '#') x->p += strcspn(x->p, "\n");
    else if (c == '\\' && x->p[1 + strspn(x->p + 1, " \t\r")] == '\n')
      x->p += strcspn(x->p, "\n") + 1, x->line++, x->line_start = x->p;
    else if (c == '\n' && x->depth > 0) x->p++, x->line++, x->line_start = x->p;
    else return c != '\n';
  }
}

static bool lex_number(Lexer *x) {
  const char *s = x->p, *e = s;
  e += strspn(e, "0123456789");
  bool is_float = *e == '.' || *e == 'e' || *e == 'E';
  if (*e == '.') e++, e += strspn(e, "0123456789");
  if ((*e == 'e' || *e == 'E') && (isdigit((unsigned char)e[1]) || ((e[1] == '+' || e[1] == '-') && isdigit((unsigned char)e[2]))))
    e += 2, e += strspn(e, "0123456789");
  if (isalnum((unsigned char)*e) || *e == '_')
    return lang_error(x->err, x->line, lex_col(x, s), "bad number '%.*s'", (int)(e - s + 1), s), false;
  Token *t = lex_push(x, is_float ? T_FLOAT : T_INT, s, (size_t)(e - s));
  if (!t) return false;
  errno = 0;
  if (is_float) t->f = strtod(s, NULL);
  else t->i = strtoll(s, NULL, 10);
  if (errno == ERANGE && !is_float)
    return lang_error(x->err, t->line, t->col, "integer %.*s is too large", (int)t->len, s), false;
  x->p = e;
  return true;
}

static bool lex_name(Lexer *x) {
  const char *s = x->p;
  while (isalnum((unsigned char)*x->p) || *x->p == '_') x->p++;
  Token *t = lex_push(x, T_NAME, s, (size_t)(x->p - s));
  if (!t) return false;
  if (!(t->text = arena_strndup(x->arena, s, t->len)))
    return lang_error(x->err, t->line, t->col, "out of memory"), false;
  return true;
}

static char lex_escape(char c) {
  switch (c) {
  case 'n': return '\n';
  case 't': return '\t';
  case '0': return '\0';
  default: return c; /* \\ \' \" and any other: itself */
  }
}

/* A string in '...' or "..." on one line. */
static bool lex_string(Lexer *x) {
  const char *s = x->p, *e = s + 1;
  for (; *e && *e != *s && *e != '\n'; e++)
    if (*e == '\\' && e[1] && e[1] != '\n') e++;
  if (*e != *s) return lang_error(x->err, x->line, lex_col(x, s), "unterminated string"), false;
  Token *t = lex_push(x, T_STR, s, (size_t)(e - s + 1));
  char *text = t ? arena_alloc(x->arena, (size_t)(e - s)) : NULL;
  if (!text) return lang_error(x->err, x->line, lex_col(x, s), "out of memory"), false;
  size_t n = 0;
  for (const char *p = s + 1; p < e; p++) text[n++] = *p == '\\' ? lex_escape(*++p) : *p;
  t->text = text;
  x->p = e + 1;
  return true;
}

static bool lex_punct(Lexer *x) {
  size_t len = 0;
  TokKind k = lex_op_at(x->p, &len);
  if (k == T_EOF) {
    unsigned char c = (unsigned char)*x->p;
    if (isprint(c)) lang_error(x->err, x->line, lex_col(x, x->p), "unexpected character '%c'", c);
    else lang_error(x->err, x->line, lex_col(x, x->p), "unexpected byte 0x%02x", c);
    return false;
  }
  if (k == T_LPAREN || k == T_LBRACK) x->depth++;
  if ((k == T_RPAREN || k == T_RBRACK) && x->depth > 0) x->depth--;
  if (!lex_push(x, k, x->p, len)) return false;
  x->p += len;
  return true;
}

static bool lex_one(Lexer *x) {
  if (!lex_skip(x)) {
    if (!lex_push(x, T_NEWLINE, x->p, 1)) return false;
    x->p++, x->line++, x->line_start = x->p;
    return true;
  }
  char c = *x->p;
  if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)x->p[1]))) return lex_number(x);
  if (isalpha((unsigned char)c) || c == '_') return lex_name(x);
  if (c == '"' || c == '\'') return lex_string(x);
  return lex_punct(x);
}

bool lex_text(const char *text, Arena *arena, Tokens *out, LangError *err) {
  *out = (Tokens){0};
  Lexer x = {text, text, 1, 0, arena, out, 0, err};
  for (;;) {
    if (lex_skip(&x) && *x.p == '\0') break;
    if (!lex_one(&x)) {
      lex_free(out);
      return false;
    }
  }
  out->open = x.depth;
  if (!lex_push(&x, T_EOF, x.p, 0)) {
    lex_free(out);
    return false;
  }
  return true;
}

void lex_free(Tokens *t) {
  free(t->items);
  *t = (Tokens){0};
}

const char *lex_describe(const Token *t, char *buf, size_t size) {
  if (t->kind == T_EOF) return "end of input";
  if (t->kind == T_NEWLINE) return "end of line";
  snprintf(buf, size, "'%.*s'", t->len > 40 ? 40 : (int)t->len, t->start);
  return buf;
}

bool lex_incomplete(const char *text) {
  Arena arena = {0};
  Tokens t;
  LangError err = {0};
  bool more = false;
  if (lex_text(text, &arena, &t, &err)) {
    more = t.open > 0;
    lex_free(&t);
  }
  size_t n = strlen(text);
  while (n > 0 && strchr(" \t\r\n", text[n - 1])) n--;
  arena_free(&arena);
  return more || (n > 0 && text[n - 1] == '\\');
}
