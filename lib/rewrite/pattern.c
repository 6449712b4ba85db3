/* pattern.c — compiles rule patterns (grammar in rewrite.h) into matchers
 * and matches them against nodes.
 *
 * In: an array of Rules. Out: a RuleSet — each pattern as a tree of Pats,
 * and per root op the list of rules that can match it, in their order.
 * Matching binds letters to nodes (Binds) and calls the rule's function. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite.h"
#include "uop/alu.h"

typedef enum DClass {
  DC_ANY, DC_INT, DC_SINT, DC_UINT, DC_FLOAT, DC_BOOL, DC_PTR, DC_EXACT
} DClass;

typedef struct Pat {
  uint64_t ops[2];      /* set of ops; all zero: any op */
  DClass dclass;
  DType dtype;          /* for DC_EXACT */
  int8_t bind;          /* letter index, -1 for none */
  bool swap;            /* '~': also try the sources swapped */
  bool more;            /* '...': further sources allowed */
  bool has_value;       /* a CONST value to compare */
  bool value_is_float;
  int64_t ivalue;
  double fvalue;
  uint32_t nsrc;
  struct Pat *src;      /* nsrc sub-patterns, or NULL for "any sources" */
} Pat;

typedef struct RuleRef { const Pat *pat; RuleFn fn; } RuleRef;

struct RuleSet {
  Pat *pats;            /* every Pat of every rule, one allocation */
  size_t npats, cap_pats;
  RuleRef *by_op[UJ_OP_COUNT];
  size_t count[UJ_OP_COUNT];
};

/* ---- compiling ---- */

typedef struct PatParser {
  Ctx *ctx;
  RuleSet *rs;
  const char *text, *p;
  bool failed;
} PatParser;

static void pp_fail(PatParser *pp, const char *what) {
  if (!pp->failed)
    ctx_set_error(pp->ctx, "pattern \"%s\" at column %d: %s", pp->text,
                  (int)(pp->p - pp->text) + 1, what);
  pp->failed = true;
}

static void pp_skip(PatParser *pp) {
  while (isspace((unsigned char)*pp->p)) pp->p++;
}

static size_t pp_word(PatParser *pp) {
  size_t n = 0;
  while (isalnum((unsigned char)pp->p[n]) || pp->p[n] == '_' || pp->p[n] == '.' ||
         pp->p[n] == '-' || pp->p[n] == '*')
    n++;
  return n;
}

static const struct { const char *name; DClass dc; } dclass_names[] = {
  {"int", DC_INT}, {"sint", DC_SINT}, {"uint", DC_UINT}, {"float", DC_FLOAT},
  {"bool", DC_BOOL}, {"ptr", DC_PTR},
};

static void pp_dclass(PatParser *pp, Pat *pat) {
  size_t n = pp_word(pp);
  for (size_t i = 0; i < sizeof dclass_names / sizeof *dclass_names; i++) {
    if (strlen(dclass_names[i].name) == n && memcmp(dclass_names[i].name, pp->p, n) == 0) {
      pat->dclass = dclass_names[i].dc;
      pp->p += n;
      return;
    }
  }
  if (!dtype_parse(pp->p, n, &pat->dtype)) return pp_fail(pp, "unknown dtype class");
  pat->dclass = DC_EXACT;
  pp->p += n;
}

static void pp_ops(PatParser *pp, Pat *pat) {
  for (;;) {
    size_t n = 0;
    while (isupper((unsigned char)pp->p[n]) || pp->p[n] == '_' || isdigit((unsigned char)pp->p[n])) n++;
    Op op;
    if (!op_from_name(pp->p, n, &op)) return pp_fail(pp, "unknown op");
    pat->ops[op / 64] |= 1ull << (op % 64);
    pp->p += n;
    if (*pp->p != '|') break;
    pp->p++;
  }
  if (*pp->p == '~') pat->swap = true, pp->p++;
  if (*pp->p == ':') pp->p++, pp_dclass(pp, pat);
}

static void pp_value(PatParser *pp, Pat *pat) {
  size_t n = pp_word(pp);
  char buf[64];
  if (n == 0 || n >= sizeof buf) return;
  memcpy(buf, pp->p, n);
  buf[n] = '\0';
  char *end;
  pat->has_value = true;
  if (strcmp(buf, "true") == 0 || strcmp(buf, "false") == 0) {
    pat->ivalue = buf[0] == 't';
  } else if (pat->ivalue = strtoll(buf, &end, 10), *end == '\0') {
    pat->fvalue = (double)pat->ivalue;
  } else if (pat->fvalue = strtod(buf, &end), *end == '\0') {
    pat->value_is_float = true;
  } else {
    return pp_fail(pp, "bad CONST value");
  }
  pp->p += n;
}

static Pat *pp_alloc(PatParser *pp, size_t n) {
  RuleSet *rs = pp->rs;
  if (rs->npats + n > rs->cap_pats) return pp_fail(pp, "pattern too large"), NULL;
  Pat *p = rs->pats + rs->npats;
  rs->npats += n;
  for (size_t i = 0; i < n; i++) p[i] = (Pat){.bind = -1};
  return p;
}

static void pp_pattern(PatParser *pp, Pat *pat);

/* Sources are parsed into a temporary array, then copied contiguously. */
static void pp_sources(PatParser *pp, Pat *pat) {
  Pat tmp[8];
  uint32_t n = 0;
  for (pp_skip(pp); *pp->p && *pp->p != ')' && !pp->failed; pp_skip(pp)) {
    if (strncmp(pp->p, "...", 3) == 0) {
      pat->more = true, pp->p += 3;
      continue;
    }
    if (n == 8) return pp_fail(pp, "more than 8 sources");
    tmp[n] = (Pat){.bind = -1};
    pp_pattern(pp, &tmp[n++]);
  }
  if (*pp->p != ')') return pp_fail(pp, "expected ')'");
  pp->p++;
  pat->nsrc = n;
  pat->src = pp_alloc(pp, n);
  if (pat->src) memcpy(pat->src, tmp, n * sizeof *tmp);
}

static void pp_pattern(PatParser *pp, Pat *pat) {
  pp_skip(pp);
  if (islower((unsigned char)pp->p[0]) && !isalnum((unsigned char)pp->p[1])) {
    pat->bind = (int8_t)(pp->p[0] - 'a');
    pp->p++;
    if (*pp->p != '=') return;
    pp->p++;
  } else if (*pp->p == '_') {
    pp->p++;
    return;
  }
  if (*pp->p != '(') return pp_fail(pp, "expected '(', '_' or a letter");
  pp->p++;
  pp_ops(pp, pat);
  pp_skip(pp);
  if (*pp->p && *pp->p != '(' && *pp->p != ')' && !(islower((unsigned char)pp->p[0]) &&
      !isalnum((unsigned char)pp->p[1])) && *pp->p != '_' && *pp->p != '.')
    pp_value(pp, pat);
  pp_sources(pp, pat);
}

static bool ruleset_index(RuleSet *rs, const Rule *rules, size_t n, const Pat *roots) {
  for (int op = 0; op < UJ_OP_COUNT; op++) {
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
      size_t k = 0;
      for (size_t i = 0; i < n; i++) {
        const Pat *p = &roots[i];
        bool any = !p->ops[0] && !p->ops[1];
        if (!any && !(p->ops[op / 64] >> (op % 64) & 1)) continue;
        if (pass) rs->by_op[op][k] = (RuleRef){p, rules[i].fn};
        k++;
      }
      if (pass) rs->count[op] = k;
      else if (!(rs->by_op[op] = malloc((k ? k : 1) * sizeof(RuleRef)))) return false;
    }
  }
  return true;
}

RuleSet *ruleset_new(Ctx *ctx, const Rule *rules, size_t n) {
  RuleSet *rs = calloc(1, sizeof *rs);
  size_t cap = n * 24 + 1;
  if (!rs || !(rs->pats = calloc(cap, sizeof(Pat)))) goto nomem;
  rs->cap_pats = cap;
  Pat *roots = rs->pats;
  rs->npats = n;
  for (size_t i = 0; i < n; i++) {
    PatParser pp = {ctx, rs, rules[i].pattern, rules[i].pattern, false};
    roots[i] = (Pat){.bind = -1};
    pp_pattern(&pp, &roots[i]);
    pp_skip(&pp);
    if (!pp.failed && *pp.p) pp_fail(&pp, "text after the pattern");
    if (pp.failed) {
      ruleset_free(rs);
      return NULL;
    }
  }
  if (!ruleset_index(rs, rules, n, roots)) goto nomem;
  return rs;
nomem:
  ruleset_free(rs);
  ctx_set_error(ctx, "out of memory compiling rules");
  return NULL;
}

void ruleset_free(RuleSet *rs) {
  if (!rs) return;
  for (int op = 0; op < UJ_OP_COUNT; op++) free(rs->by_op[op]);
  free(rs->pats);
  free(rs);
}

/* ---- matching ---- */

static bool dclass_match(const Pat *pat, DType d) {
  switch (pat->dclass) {
  case DC_ANY: return true;
  case DC_INT: return dt_is_int(d);
  case DC_SINT: return dt_is_int(d) && dt_is_signed(d);
  case DC_UINT: return dt_is_int(d) && !dt_is_signed(d);
  case DC_FLOAT: return dt_is_float(d);
  case DC_BOOL: return dt_is_bool(d);
  case DC_PTR: return dt_is_ptr(d);
  case DC_EXACT: return dt_eq(d, pat->dtype);
  }
  return false;
}

static bool value_match(const Pat *pat, const UOp *u) {
  if (u->op != UJ_OP_CONST) return false;
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  if (dt_is_float(u->dtype)) return uop_const_value(u) == word_from_double(s, pat->fvalue);
  return !pat->value_is_float && uop_const_value(u) == word_from_int(s, pat->ivalue);
}

static bool match(const Pat *pat, const UOp *u, Binds *b);

static bool match_sources(const Pat *pat, const UOp *u, Binds *b, bool swapped) {
  for (uint32_t i = 0; i < pat->nsrc; i++) {
    uint32_t k = swapped ? 1 - i : i;
    if (!match(&pat->src[i], u->src[k], b)) return false;
  }
  return true;
}

static bool match(const Pat *pat, const UOp *u, Binds *b) {
  if ((pat->ops[0] || pat->ops[1]) && !(pat->ops[u->op / 64] >> (u->op % 64) & 1)) return false;
  if (!dclass_match(pat, u->dtype)) return false;
  if (pat->has_value && !value_match(pat, u)) return false;
  if (pat->bind >= 0) {
    if (b->slot[pat->bind] && b->slot[pat->bind] != u) return false;
    b->slot[pat->bind] = u;
  }
  if (!pat->src) return true; /* a bare letter or '_': any sources */
  if (pat->more ? u->nsrc < pat->nsrc : u->nsrc != pat->nsrc) return false;
  Binds saved = *b;
  if (match_sources(pat, u, b, false)) return true;
  if (!pat->swap || pat->nsrc != 2) return false;
  *b = saved;
  return match_sources(pat, u, b, true);
}

const UOp *ruleset_apply(Rewriter *rw, const UOp *u) {
  const RuleSet *rs = rw->rules;
  for (size_t i = 0; i < rs->count[u->op]; i++) {
    const RuleRef *r = &rs->by_op[u->op][i];
    Binds b = {{0}};
    if (!match(r->pat, u, &b)) continue;
    const UOp *out = r->fn(rw, u, &b);
    if (out && out != u) return out;
  }
  return u;
}
