/* online.c — finds the REDUCEs that read a running maximum online
 * (online.h).
 *
 * For every REDUCE A over RANGEs r.. and every MAX REDUCE M over the same
 * RANGEs read in A's value (not inside another REDUCE there), A's value
 * must be built as
 *   m    := M | VECTORIZE(M, .., M)
 *   e    := SUB(y, m) | MUL(SUB(y, m), c) | MUL(c, SUB(y, m))   y: a term of M's value; c a CONST
 *   x    := EXP2(e) | VECTORIZE(x, .., x) | MUL(x, f) | MUL(f, x)   f free of M
 *         | ADD(x, x) | MULACC(x, f, x)       (a chunk's terms: a lane fold, from 0)
 *         | GEP(x, lane)                      (a chunk's exps as one vector)
 *   value = x
 * with one M and one c for M everywhere; then A's sum, computed with the
 * maximum so far, is right once scaled by exp2((old - new) * c) at each
 * step the maximum grows. Any other read of M by a REDUCE over its RANGEs
 * leaves M out (the renderer then computes it before their loop). */
#include <stdlib.h>
#include <string.h>

#include "codegen/online.h"
#include "uop/nodemap.h"

typedef struct Candidate {
  const UOp *max, *c; /* c: the CONST scale (NULL: 1) */
  bool bad, used;
} Candidate;

typedef struct Finder {
  Ctx *ctx;
  Topo t;              /* the kernel's nodes */
  Candidate *cands;
  size_t ncands;
  unsigned char *kind; /* by place in t, in the value being checked (the enum below) */
  const UOp **which;   /* by place in t: the candidate's max a node depends on */
} Finder;

static size_t at(const Finder *f, const UOp *u) { return topo_at(&f->t, u); }

enum { FREE, IS_M, SHIFTED, SCALED, EXP, BAD };

static bool same_ranges(const UOp *a, const UOp *b) {
  if (a->nsrc != b->nsrc) return false;
  for (uint32_t i = 1; i < a->nsrc; i++)
    if (a->src[i] != b->src[i]) return false;
  return true;
}

static Candidate *candidate(Finder *f, const UOp *m) {
  for (size_t i = 0; i < f->ncands; i++)
    if (f->cands[i].max == m) return &f->cands[i];
  return NULL;
}

static bool is_const(const UOp *u) {
  if (u->op == UJ_OP_CONST) return true;
  if (u->op != UJ_OP_VECTORIZE) return false;
  for (uint32_t i = 0; i < u->nsrc; i++)
    if (u->src[i] != u->src[0] || u->src[0]->op != UJ_OP_CONST) return false;
  return true;
}

/* Whether y is a term of the maximum x: x itself, or one of MAX(a, b)'s
 * (lane >= 0: whether GEP(y, lane) is). A walk down the MAX nodes, each
 * once (no recursion: a chain of MAX may be deep). */
static bool term_of(Ctx *ctx, const UOp *y, int64_t lane, const UOp *x) {
  NodeMap seen = nodemap_make(ctx);
  const UOp **stack = NULL;
  size_t top = 0, cap = 0;
  bool found = false, ok = true;
  for (const UOp *u = x; u && !found && ok; u = top ? stack[--top] : NULL) {
    found = lane < 0 ? u == y : u->op == UJ_OP_GEP && u->src[0] == y && u->ints[0] == lane;
    for (uint32_t k = 0; u->op == UJ_OP_MAX && k < 2 && ok && !found; k++) {
      size_t before = seen.count;
      ok = nodemap_add(&seen, u->src[k]) != NODEMAP_NONE;
      if (!ok || seen.count == before) continue;
      if (top == cap) {
        const UOp **grown = realloc(stack, (cap = 2 * cap + 16) * sizeof *grown);
        if (!(ok = grown != NULL)) break;
        stack = grown;
      }
      stack[top++] = u->src[k];
    }
  }
  nodemap_free(&seen), free(stack);
  return found;
}

/* Whether y is a term of max's value, or each lane of y is one (a
 * VECTORIZE of terms, or a vector whose GEPs are): then y <= the maximum
 * so far, and while that is -inf, so is y. */
static bool is_value_of(Ctx *ctx, const UOp *y, const UOp *max) {
  if (term_of(ctx, y, -1, max->src[0])) return true;
  for (unsigned i = 0; y->dtype.lanes > 1 && i < y->dtype.lanes; i++)
    if (y->op == UJ_OP_VECTORIZE ? !term_of(ctx, y->src[i], -1, max->src[0]) : !term_of(ctx, y, i, max->src[0])) return false;
  return y->dtype.lanes > 1;
}

/* A float CONST 0 or -0 (a word is a double's bits: all but the sign 0),
 * or one in every lane. */
static bool is_zero(const UOp *u) {
  if (u->op == UJ_OP_VECTORIZE) {
    for (uint32_t i = 0; i < u->nsrc; i++)
      if (!is_zero(u->src[i])) return false;
    return true;
  }
  return u->op == UJ_OP_CONST && dt_is_float(u->dtype) && (uop_const_value(u) << 1) == 0;
}

static const UOp *scalar_const(const UOp *u) { return u->op == UJ_OP_VECTORIZE ? u->src[0] : u; }

/* The kind of u from its sources' (sources first); marks candidates bad. */
static unsigned char classify(Finder *f, const UOp *u, const UOp *reduce) {
  const UOp *m = NULL;
  unsigned char k[3] = {FREE, FREE, FREE};
  bool dep = false;
  for (uint32_t i = 0; i < u->nsrc && i < 3; i++) {
    k[i] = f->kind[at(f, u->src[i])];
    if (k[i] == FREE) continue;
    if (m && f->which[at(f, u->src[i])] != m) return BAD; /* two maxima */
    m = f->which[at(f, u->src[i])], dep = true;
  }
  for (uint32_t i = 3; i < u->nsrc; i++)
    if (f->kind[at(f, u->src[i])] != FREE) {
      if (m && f->which[at(f, u->src[i])] != m) return BAD;
      m = f->which[at(f, u->src[i])], dep = true, k[2] = f->kind[at(f, u->src[i])];
    }
  if (u->op == UJ_OP_REDUCE && u->nsrc > 1 && u->name && !strcmp(u->name, "MAX") && same_ranges(u, reduce) &&
      candidate(f, u)) {
    f->which[at(f, u)] = u;
    return IS_M;
  }
  if (!dep) return FREE;
  f->which[at(f, u)] = m;
  Candidate *c = candidate(f, m);
  switch (u->op) {
  case UJ_OP_VECTORIZE: {
    unsigned char first = f->kind[at(f, u->src[0])];
    for (uint32_t i = 1; i < u->nsrc; i++)
      if (f->kind[at(f, u->src[i])] != first) return BAD;
    return first == IS_M || first == EXP ? first : BAD;
  }
  case UJ_OP_GEP: return k[0] == EXP ? EXP : BAD; /* a lane of exps (a chunk's, opt/lanes.c) */
  case UJ_OP_SUB: return k[0] == FREE && k[1] == IS_M && is_value_of(f->ctx, u->src[0], m) ? SHIFTED : BAD;
  case UJ_OP_MUL:
    if ((k[0] == SHIFTED && is_const(u->src[1])) || (k[1] == SHIFTED && is_const(u->src[0]))) {
      const UOp *cst = scalar_const(k[0] == SHIFTED ? u->src[1] : u->src[0]);
      if (c->c && c->c != cst) return BAD;
      if (!c->c && c->used) return BAD; /* read unscaled before */
      c->c = cst;
      return SCALED;
    }
    return (k[0] == EXP && k[1] == FREE) || (k[0] == FREE && k[1] == EXP) ? EXP : BAD;
  case UJ_OP_ADD: /* terms all scaled alike (a lane fold adds from -0.0) */
    return (k[0] == EXP || is_zero(u->src[0])) && (k[1] == EXP || is_zero(u->src[1])) ? EXP : BAD;
  case UJ_OP_MULACC: /* a * b + c, the product and c scaled alike */
    return ((k[0] == EXP && k[1] == FREE) || (k[0] == FREE && k[1] == EXP)) && (k[2] == EXP || is_zero(u->src[2])) ? EXP : BAD;
  case UJ_OP_EXP2:
    if (k[0] == SHIFTED && c->c) return BAD; /* read scaled before */
    if (k[0] == SHIFTED || k[0] == SCALED) return c->used = true, EXP;
    return BAD;
  default: return BAD;
  }
}

/* Whether a candidate over the RANGEs of a is read under nested REDUCE r. */
static bool reads_candidate(Finder *f, const UOp *r, const UOp *a, bool *ok) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(f->ctx, r->src[0], &nodes);
  *ok = n > 0;
  bool reads = false;
  for (size_t i = 0; i < n; i++) {
    Candidate *c = nodes[i]->op == UJ_OP_REDUCE ? candidate(f, nodes[i]) : NULL;
    if (c && same_ranges(nodes[i], a)) c->bad = true, reads = true;
  }
  free(nodes);
  return reads;
}

/* Checks the value of REDUCE a against every candidate it reads: a's own
 * nodes are those reached from its value without entering a REDUCE. */
static bool check_reduce(Finder *f, const UOp *a) {
  Topo v;
  bool ok = topo_make(f->ctx, a->src[0], &v);
  unsigned char *own = ok ? calloc(v.n, 1) : NULL; /* by place in v */
  ok = own != NULL;
  if (ok) own[v.n - 1] = 1; /* the value */
  for (size_t i = v.n; ok && i-- > 0;) { /* users first */
    const UOp *u = v.nodes[i];
    if (!own[i]) continue;
    if (u->op == UJ_OP_REDUCE) {
      if (!candidate(f, u)) reads_candidate(f, u, a, &ok);
      continue;
    }
    for (uint32_t k = 0; k < u->nsrc; k++) own[topo_at(&v, u->src[k])] = 1;
  }
  for (size_t i = 0; ok && i < v.n; i++) {
    const UOp *u = v.nodes[i];
    if (!own[i]) continue;
    unsigned char k = classify(f, u, a);
    f->kind[at(f, u)] = k;
    if (k == BAD) {
      Candidate *c = candidate(f, f->which[at(f, u)]);
      if (c) c->bad = true;
      f->kind[at(f, u)] = FREE; /* checked: its users see no M */
    }
  }
  unsigned char root = ok ? f->kind[at(f, a->src[0])] : FREE;
  if (root != FREE && root != EXP) {
    Candidate *c = candidate(f, f->which[at(f, a->src[0])]);
    if (c) c->bad = true;
  }
  for (size_t i = 0; i < v.n; i++) f->kind[at(f, v.nodes[i])] = FREE, f->which[at(f, v.nodes[i])] = NULL;
  free(own), topo_free(&v);
  if (!ok) ctx_set_error(f->ctx, "online: out of memory");
  return ok;
}

static const UOp *placeholder(Ctx *ctx, DType d, int64_t slot) {
  return uop_new(ctx, UJ_OP_PARAM, d, NULL, 0, (Arg){NULL, &slot, 1});
}

bool online_find(Ctx *ctx, const UOp *kernel, OnlineMax **out, size_t *nout) {
  *out = NULL, *nout = 0;
  Finder f = {.ctx = ctx};
  if (!topo_make(ctx, kernel, &f.t)) return false;
  size_t n = f.t.n;
  const UOp *const *nodes = f.t.nodes;
  f.cands = calloc(n, sizeof *f.cands), f.kind = calloc(n, 1), f.which = calloc(n, sizeof *f.which);
  bool ok = f.cands && f.kind && f.which;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_REDUCE && u->nsrc > 1 && !strcmp(u->name, "MAX") && dt_is_float(u->dtype) && u->dtype.lanes == 1)
      f.cands[f.ncands++] = (Candidate){u, NULL, false, false};
  }
  for (size_t i = 0; ok && f.ncands && i < n; i++)
    if (nodes[i]->op == UJ_OP_REDUCE && nodes[i]->nsrc > 1) ok = check_reduce(&f, nodes[i]);
  size_t count = 0;
  for (size_t i = 0; ok && i < f.ncands; i++) count += f.cands[i].used && !f.cands[i].bad;
  OnlineMax *list = ok && count ? malloc(count * sizeof *list) : NULL;
  ok = ok && (!count || list);
  for (size_t i = 0, at = 0; ok && i < f.ncands; i++) {
    const Candidate *c = &f.cands[i];
    if (!c->used || c->bad) continue;
    DType d = c->max->dtype;
    const UOp *old = placeholder(ctx, d, INT32_MAX - 1), *now = placeholder(ctx, d, INT32_MAX);
    const UOp *e = uop_binary(ctx, UJ_OP_SUB, old, now);
    if (e && c->c) e = uop_binary(ctx, UJ_OP_MUL, e, c->c);
    const UOp *rescale = e ? uop_unary(ctx, UJ_OP_EXP2, e) : NULL;
    ok = rescale != NULL;
    list[at++] = (OnlineMax){c->max, rescale, old, now};
  }
  free(f.cands), free(f.kind), free(f.which), topo_free(&f.t);
  if (!ok) {
    free(list);
    return ctx_set_error(ctx, "online: out of memory"), false;
  }
  *out = list, *nout = count;
  return true;
}
