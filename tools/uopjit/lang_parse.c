/* lang_parse.c — the tensor language's statements, by recursive descent.
 *
 * In: tokens (lang_lex.c). Out: a Program, its nodes in the arena. The
 * grammar (docs/language.md has it in EBNF), loosest level first, as in
 * Python:
 *
 *   statement  := ':' NAME [expr] | NAME '=' expr | expr     (ends at a newline, ';' or the end)
 *   expr       := bitor [('<'|'<='|'>'|'>='|'=='|'!=') bitor]
 *   bitor      := bitxor {'|' bitxor}      bitxor := bitand {'^' bitand}
 *   bitand     := sum {'&' sum}            sum    := term {('+'|'-') term}
 *   term       := unary {('*'|'/'|'@') unary}
 *   unary      := ('-'|'+'|'~') unary | power
 *   power      := postfix ['**' unary]     (right-associative; -x**2 is -(x**2))
 *   postfix    := atom {'.' NAME ['(' args ')']}
 *   atom       := INT | FLOAT | STRING | True | False | None | NAME ['(' args ')']
 *               | '(' [expr {',' expr} [',']] ')' | '[' [expr {',' expr} [',']] ']'
 *   args       := [arg {',' arg} [',']]    arg := [NAME '='] expr
 *
 * A parenthesized list with a comma (or none: `()`) is a tuple. Errors:
 * `expected X but found Y` at the token found. Expressions nest at most
 * LANG_MAX_DEPTH deep (brackets, calls, exponents); chains of binary,
 * prefix operators and methods are loops and may be any length, left
 * nested in the tree, which the evaluator walks by a loop too. */
#define _POSIX_C_SOURCE 200809L

#include <string.h>

#include "lang.h"

typedef struct Parser {
  const Token *t; /* the current token */
  Arena *arena;
  LangError *err;
  int depth; /* expressions being parsed inside one another */
} Parser;

static Node *parse_expr(Parser *p);

/* One level deeper (an expression inside brackets, a call's arguments, an
 * exponent); an error past LANG_MAX_DEPTH. Chains of operators, prefix
 * operators and methods are loops, not levels. */
static bool parse_deeper(Parser *p) {
  if (++p->depth <= LANG_MAX_DEPTH) return true;
  lang_error(p->err, p->t->line, p->t->col, "nested too deeply: more than %d levels of brackets, calls and '**' inside one another",
             LANG_MAX_DEPTH);
  return false;
}

static bool parse_fail(Parser *p, const char *expected) {
  char buf[64];
  lang_error(p->err, p->t->line, p->t->col, "expected %s but found %s", expected,
             lex_describe(p->t, buf, sizeof buf));
  return false;
}

static bool parse_accept(Parser *p, TokKind k) {
  if (p->t->kind != k) return false;
  p->t++;
  return true;
}

static Node *parse_node(Parser *p, NodeKind kind, const Token *at) {
  Node *n = arena_alloc(p->arena, sizeof *n);
  if (!n) return lang_error(p->err, at->line, at->col, "out of memory"), NULL;
  n->kind = kind, n->line = at->line, n->col = at->col;
  return n;
}

/* ---- lists: items, call arguments ---- */

/* Appends item (and its keyword) to n's lists, in the arena; their room
 * doubles whenever n->n reaches a power of two. */
static bool parse_push(Parser *p, Node *n, Node *item, const char *key) {
  if ((n->n & (n->n - 1)) == 0) {
    size_t cap = n->n ? 2 * n->n : 1;
    Node **items = arena_alloc(p->arena, cap * sizeof *items);
    const char **keys = arena_alloc(p->arena, cap * sizeof *keys);
    if (!items || !keys) return lang_error(p->err, n->line, n->col, "out of memory"), false;
    if (n->n) memcpy(items, n->items, n->n * sizeof *items), memcpy(keys, n->keys, n->n * sizeof *keys);
    n->items = items, n->keys = keys;
  }
  n->items[n->n] = item, n->keys[n->n] = key;
  n->n++;
  return true;
}

/* Items up to the closing token; *comma says whether one was seen. */
static bool parse_items(Parser *p, Node *n, TokKind close, bool *comma) {
  *comma = false;
  while (!parse_accept(p, close)) {
    Node *item = parse_expr(p);
    if (!item || !parse_push(p, n, item, NULL)) return false;
    if (parse_accept(p, T_COMMA)) *comma = true;
    else if (p->t->kind != close) return parse_fail(p, close == T_RPAREN ? "',' or ')'" : "',' or ']'");
  }
  return true;
}

/* Call arguments after '(' up to ')': positional first, then NAME=expr. */
static bool parse_args(Parser *p, Node *n) {
  bool keyword = false;
  while (!parse_accept(p, T_RPAREN)) {
    const char *key = NULL;
    const Token *at = p->t;
    if (p->t[0].kind == T_NAME && p->t[1].kind == T_ASSIGN) key = p->t->text, p->t += 2;
    if (!key && keyword) {
      lang_error(p->err, at->line, at->col, "positional argument after a keyword argument");
      return false;
    }
    keyword = key != NULL;
    Node *item = parse_expr(p);
    if (!item || !parse_push(p, n, item, key)) return false;
    if (!parse_accept(p, T_COMMA) && p->t->kind != T_RPAREN) return parse_fail(p, "',' or ')'");
  }
  return true;
}

/* ---- expressions ---- */

static Node *parse_group(Parser *p, const Token *at) {
  Node *n = parse_node(p, N_TUPLE, at);
  bool comma;
  if (!n || !parse_items(p, n, T_RPAREN, &comma)) return NULL;
  return n->n == 1 && !comma ? n->items[0] : n; /* (x) is x */
}

static Node *parse_name(Parser *p, const Token *at) {
  static const struct { const char *name; NodeKind kind; int64_t value; } words[] = {
      {"True", N_BOOL, 1}, {"False", N_BOOL, 0}, {"None", N_NONE, 0}};
  for (size_t k = 0; k < sizeof words / sizeof *words; k++) {
    if (strcmp(at->text, words[k].name)) continue;
    Node *n = parse_node(p, words[k].kind, at);
    if (n) n->i = words[k].value;
    return n;
  }
  bool call = parse_accept(p, T_LPAREN);
  Node *n = parse_node(p, call ? N_CALL : N_NAME, at);
  if (n) n->name = at->text;
  return n && (!call || parse_args(p, n)) ? n : NULL;
}

static Node *parse_atom(Parser *p) {
  const Token *at = p->t;
  bool comma;
  Node *n = NULL;
  switch (at->kind) {
  case T_INT:
  case T_FLOAT:
  case T_STR:
    p->t++;
    n = parse_node(p, at->kind == T_INT ? N_INT : at->kind == T_FLOAT ? N_FLOAT : N_STR, at);
    if (n) n->i = at->i, n->f = at->f, n->name = at->text;
    return n;
  case T_NAME: return p->t++, parse_name(p, at);
  case T_LPAREN: return p->t++, parse_group(p, at);
  case T_LBRACK:
    p->t++;
    n = parse_node(p, N_LIST, at);
    return n && parse_items(p, n, T_RBRACK, &comma) ? n : NULL;
  default: parse_fail(p, "an expression"); return NULL;
  }
}

static Node *parse_postfix(Parser *p) {
  Node *n = parse_atom(p);
  while (n && parse_accept(p, T_DOT)) {
    const Token *at = p->t;
    if (at->kind != T_NAME) return parse_fail(p, "a method or attribute name"), NULL;
    p->t++;
    bool call = parse_accept(p, T_LPAREN);
    Node *m = parse_node(p, call ? N_METHOD : N_ATTR, at);
    if (!m) return NULL;
    m->name = at->text, m->a = n;
    if (call && !parse_args(p, m)) return NULL;
    n = m;
  }
  return n;
}

static Node *parse_binary_node(Parser *p, const Token *op, Node *a, Node *b) {
  Node *n = a && b ? parse_node(p, N_BINARY, op) : NULL;
  if (n) n->op = op->kind, n->a = a, n->b = b;
  return n;
}

static Node *parse_unary(Parser *p);

static Node *parse_power(Parser *p) {
  Node *n = parse_postfix(p);
  const Token *op = p->t;
  if (!n || !parse_accept(p, T_POW)) return n;
  if (!parse_deeper(p)) return NULL;
  Node *e = parse_unary(p); /* the exponent: right-associative */
  p->depth--;
  return parse_binary_node(p, op, n, e);
}

static bool parse_is_prefix(TokKind k) { return k == T_MINUS || k == T_PLUS || k == T_TILDE; }

/* Prefix operators, any number of them (a loop): the innermost applies
 * first. */
static Node *parse_unary(Parser *p) {
  const Token *first = p->t;
  while (parse_is_prefix(p->t->kind)) p->t++;
  size_t nops = (size_t)(p->t - first);
  Node *n = parse_power(p);
  for (size_t k = nops; n && k-- > 0;) {
    Node *u = parse_node(p, N_UNARY, &first[k]);
    if (u) u->op = first[k].kind, u->a = n;
    n = u;
  }
  return n;
}

/* The binary levels, tightest last; each is left-associative. */
static const TokKind levels[][4] = {
    {T_PIPE}, {T_CARET}, {T_AMP}, {T_PLUS, T_MINUS}, {T_STAR, T_SLASH, T_AT},
};
enum { LEVELS = sizeof levels / sizeof *levels };

static bool parse_at_level(const Parser *p, int level) {
  for (int k = 0; k < 4 && levels[level][k]; k++)
    if (p->t->kind == levels[level][k]) return true;
  return false;
}

static Node *parse_level(Parser *p, int level) {
  if (level == LEVELS) return parse_unary(p);
  Node *n = parse_level(p, level + 1);
  while (n && parse_at_level(p, level)) {
    const Token *op = p->t++;
    n = parse_binary_node(p, op, n, parse_level(p, level + 1));
  }
  return n;
}

static bool parse_is_comparison(TokKind k) { return k >= T_LT && k <= T_NE; }

static Node *parse_comparison(Parser *p) {
  Node *n = parse_level(p, 0);
  if (!n || !parse_is_comparison(p->t->kind)) return n;
  const Token *op = p->t++;
  n = parse_binary_node(p, op, n, parse_level(p, 0));
  if (n && parse_is_comparison(p->t->kind)) {
    lang_error(p->err, p->t->line, p->t->col, "comparisons cannot be chained: use (a < b) & (b < c)");
    return NULL;
  }
  return n;
}

static Node *parse_expr(Parser *p) {
  if (!parse_deeper(p)) return NULL;
  Node *n = parse_comparison(p);
  p->depth--;
  return n;
}

/* ---- statements ---- */

static bool parse_at_end(const Parser *p) {
  TokKind k = p->t->kind;
  return k == T_NEWLINE || k == T_SEMI || k == T_EOF;
}

/* An arch word after a command (sm_80, gfx942): a name of that form
 * with an expression after it (two names in a row are no expression). */
static bool parse_arch_word(const Parser *p) {
  const Token *t = p->t;
  if (t[0].kind != T_NAME || (strncmp(t[0].text, "sm_", 3) != 0 && strncmp(t[0].text, "gfx", 3) != 0)) return false;
  TokKind k = t[1].kind;
  return k == T_NAME || k == T_INT || k == T_FLOAT || k == T_LPAREN || k == T_LBRACK;
}

/* :dot's view before its expression: graph, schedule, or kernel N (in
 * n->arch, N in n->i). */
static bool parse_view_word(Parser *p, Node *n) {
  const Token *t = p->t;
  bool view = t[0].kind == T_NAME && (!strcmp(t[0].text, "graph") || !strcmp(t[0].text, "schedule"));
  bool kernel = t[0].kind == T_NAME && !strcmp(t[0].text, "kernel") && t[1].kind == T_INT;
  if (!view && !kernel) return false;
  TokKind k = t[kernel ? 2 : 1].kind;
  if (k != T_NAME && k != T_INT && k != T_FLOAT && k != T_LPAREN && k != T_LBRACK) return false;
  n->arch = t[0].text;
  if (kernel) n->i = t[1].i;
  p->t += kernel ? 2 : 1;
  return true;
}

static Node *parse_command(Parser *p, const Token *at) {
  if (p->t->kind != T_NAME) return parse_fail(p, "a command name after ':'"), NULL;
  Node *n = parse_node(p, N_COMMAND, at);
  if (!n) return NULL;
  n->name = p->t->text;
  p->t++;
  bool view = !strcmp(n->name, "dot") && parse_view_word(p, n);
  if (!view && parse_arch_word(p)) n->arch = (p->t++)->text;
  if (!parse_at_end(p) && !(n->a = parse_expr(p))) return NULL;
  return n;
}

static Node *parse_statement(Parser *p) {
  const Token *at = p->t;
  if (parse_accept(p, T_COLON)) return parse_command(p, at);
  if (at[0].kind == T_NAME && at[1].kind == T_ASSIGN) {
    static const char *const words[] = {"True", "False", "None"};
    for (size_t k = 0; k < 3; k++)
      if (!strcmp(at->text, words[k]))
        return lang_error(p->err, at->line, at->col, "cannot assign to %s", at->text), NULL;
    p->t += 2;
    Node *n = parse_node(p, N_ASSIGN, &at[1]);
    if (n) n->name = at->text;
    return n && (n->a = parse_expr(p)) ? n : NULL;
  }
  Node *e = parse_expr(p);
  Node *n = e ? parse_node(p, N_EXPR, at) : NULL;
  if (n) n->a = e;
  return n;
}

bool parse_program(const Tokens *t, Arena *arena, Program *out, LangError *err) {
  Parser p = {t->items, arena, err, -1}; /* a statement's expression is level 0 */
  Node holder = {0}; /* collects the statements through parse_push */
  *out = (Program){0};
  for (;;) {
    while (parse_accept(&p, T_NEWLINE) || parse_accept(&p, T_SEMI)) {}
    if (p.t->kind == T_EOF) break;
    Node *s = parse_statement(&p);
    if (!s || !parse_push(&p, &holder, s, NULL)) return false;
    if (!parse_at_end(&p)) return parse_fail(&p, p.t->kind == T_ASSIGN ? "'==' (a comparison) or the end of the statement" : "the end of the statement");
  }
  out->stmts = holder.items, out->n = holder.n;
  return true;
}
