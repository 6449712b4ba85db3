/* linear.c — decomposition of integer expressions into linear forms and
 * their canonical rebuild (see linear.h).
 *
 * Arithmetic on coefficients is done in the ring of the dtype (mod 2^w),
 * exactly like the IR's wrap-around integers, so a form and its rebuild are
 * equal for every input. Bounds are computed over the integers, and a caller
 * that needs exact values (division, comparison) checks they fit the dtype. */
#include <stdlib.h>
#include <string.h>

#include "symbolic/linear.h"

int64_t ring_norm(DType d, uint64_t v) {
  unsigned bits = dt_bits(d);
  if (bits >= 64) return (int64_t)v;
  uint64_t mask = (1ull << bits) - 1;
  v &= mask;
  if (v >> (bits - 1) & 1) v |= ~mask;
  return (int64_t)v;
}

static int order_rank(const UOp *u) {
  return u->op == UJ_OP_DEFINE_VAR ? 0 : u->op == UJ_OP_CONST ? 2 : 1;
}

int uop_term_order(const UOp *a, const UOp *b) {
  if (a == b) return 0;
  int ra = order_rank(a), rb = order_rank(b);
  if (ra != rb) return ra - rb;
  if (ra == 0) {
    int c = strcmp(a->name, b->name);
    if (c) return c;
  }
  if (a->op != b->op) return (int)a->op - (int)b->op;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->id < b->id ? -1 : 1;
}

/* ---- decomposition ---- */

typedef struct Item { const UOp *node; int64_t coef; } Item;

static bool add_term(Linear *lin, const UOp *node, int64_t coef) {
  for (int i = 0; i < lin->nterms; i++) {
    if (lin->terms[i].node == node) {
      lin->terms[i].coef = ring_norm(lin->dtype, (uint64_t)lin->terms[i].coef + (uint64_t)coef);
      return true;
    }
  }
  if (lin->nterms == LINEAR_MAX_TERMS) return false;
  lin->terms[lin->nterms++] = (Term){node, coef, false};
  return true;
}

static const UOp *const_side(const UOp *u, const UOp **other) {
  if (u->src[1]->op == UJ_OP_CONST) return *other = u->src[0], u->src[1];
  if (u->src[0]->op == UJ_OP_CONST) return *other = u->src[1], u->src[0];
  return NULL;
}

/* Expands one item: pushes its parts, or records it as a term/constant. */
static bool expand(Linear *lin, Item it, Item *stack, int *top) {
  const UOp *u = it.node, *other;
  DType d = lin->dtype;
  switch ((Op)u->op) {
  case UJ_OP_CONST:
    lin->k = ring_norm(d, (uint64_t)lin->k + (uint64_t)it.coef * (uint64_t)u->ints[0]);
    return true;
  case UJ_OP_ADD: case UJ_OP_SUB:
    stack[(*top)++] = (Item){u->src[0], it.coef};
    stack[(*top)++] = (Item){u->src[1], u->op == UJ_OP_SUB ? ring_norm(d, 0 - (uint64_t)it.coef) : it.coef};
    return true;
  case UJ_OP_NEG:
    stack[(*top)++] = (Item){u->src[0], ring_norm(d, 0 - (uint64_t)it.coef)};
    return true;
  case UJ_OP_MUL: {
    const UOp *c = const_side(u, &other);
    if (c) {
      stack[(*top)++] = (Item){other, ring_norm(d, (uint64_t)it.coef * (uint64_t)c->ints[0])};
      return true;
    }
    return add_term(lin, u, it.coef);
  }
  default: return add_term(lin, u, it.coef);
  }
}

static int term_cmp(const void *a, const void *b) {
  return uop_term_order(((const Term *)a)->node, ((const Term *)b)->node);
}

static void drop_zero_terms(Linear *lin) {
  int n = 0;
  for (int i = 0; i < lin->nterms; i++)
    if (lin->terms[i].coef != 0) lin->terms[n++] = lin->terms[i];
  lin->nterms = n;
}

/* ---- digit slices ----
 * A slice of x is (x//d)%m, d >= 1, m >= 1 or 0 for "no modulo": x%m is
 * (1, m), x//d is (d, 0), x is (1, 0), and (x%M)//d with d dividing M is
 * (d, M/d). Two slices of one x whose digits are adjacent join, by the
 * truncating division identities (true for every sign of x, so no bounds
 * are needed; a and b are positive):
 *   (x//a)%b + b·((x//(a·b))%c) = (x//a)%(b·c)      and with no c:
 *   (x//a)%b + b·(x//(a·b))     = x//a
 * so k·slice(d, m) + k·m·slice(d·m, m') -> k·slice(d, m·m'), where m' = 0
 * makes the result slice(d, 0). Undoing a reshape in rangeify gives such
 * sums: x%4 + ((x//4)%8)·4 + (x//32)·32 -> x. */
typedef struct Slice { const UOp *x; int64_t d, m; } Slice;

static int64_t positive_const_of(const UOp *c) {
  return c->op == UJ_OP_CONST && c->ints[0] > 0 ? c->ints[0] : 0;
}

static Slice as_slice(const UOp *u) {
  int64_t c = u->nsrc == 2 ? positive_const_of(u->src[1]) : 0;
  if (u->op == UJ_OP_MOD && c) {
    const UOp *y = u->src[0];
    int64_t d = y->op == UJ_OP_IDIV ? positive_const_of(y->src[1]) : 0;
    return d ? (Slice){y->src[0], d, c} : (Slice){y, 1, c};
  }
  if (u->op == UJ_OP_IDIV && c) {
    const UOp *y = u->src[0];
    int64_t big = y->op == UJ_OP_MOD ? positive_const_of(y->src[1]) : 0;
    if (big && big % c == 0) return (Slice){y->src[0], c, big / c};
    return (Slice){y, c, 0};
  }
  return (Slice){u, 1, 0};
}

/* The node of slice s; NULL when out of memory. */
static const UOp *slice_node(Ctx *ctx, DType dt, Slice s) {
  const UOp *u = s.x;
  if (s.d > 1) u = uop_binary(ctx, UJ_OP_IDIV, u, uop_const_int(ctx, dt, s.d));
  if (u && s.m) u = uop_binary(ctx, UJ_OP_MOD, u, uop_const_int(ctx, dt, s.m));
  return u;
}

/* Joins adjacent slices of one x until none are left (see above). */
static bool join_slices(Ctx *ctx, Linear *lin) {
  bool joined = true;
  while (joined) {
    joined = false;
    for (int i = 0; i < lin->nterms && !joined; i++) {
      Slice lo = as_slice(lin->terms[i].node);
      int64_t next, wide = 0;
      if (!lin->terms[i].coef || !lo.m || __builtin_mul_overflow(lo.d, lo.m, &next)) continue;
      for (int j = 0; j < lin->nterms && !joined; j++) {
        Slice hi = as_slice(lin->terms[j].node);
        if (j == i || hi.x != lo.x || hi.d != next || !linear_fits(lin->dtype, next, next) ||
            lin->terms[j].coef != ring_norm(lin->dtype, (uint64_t)lin->terms[i].coef * (uint64_t)lo.m) ||
            (hi.m && (__builtin_mul_overflow(lo.m, hi.m, &wide) || !linear_fits(lin->dtype, wide, wide))))
          continue;
        const UOp *u = slice_node(ctx, lin->dtype, (Slice){lo.x, lo.d, hi.m ? wide : 0});
        if (!u) return false;
        int64_t coef = lin->terms[i].coef;
        lin->terms[i].coef = lin->terms[j].coef = 0;
        drop_zero_terms(lin);
        if (!add_term(lin, u, coef)) return false;
        for (int t = 0; t < lin->nterms; t++)
          if (lin->terms[t].node == u) lin->terms[t].fresh |= u != lo.x;
        joined = true;
      }
    }
  }
  return true;
}

bool linear_decompose(Ctx *ctx, const UOp *u, Linear *lin) {
  Item stack[LINEAR_MAX_SPINE + 2];
  int top = 0, visited = 0;
  memset(lin, 0, sizeof *lin);
  lin->dtype = u->dtype;
  stack[top++] = (Item){u, 1};
  while (top) {
    Item it = stack[--top];
    if (++visited > LINEAR_MAX_SPINE || !expand(lin, it, stack, &top)) return false;
  }
  if (!join_slices(ctx, lin)) return false;
  drop_zero_terms(lin);
  qsort(lin->terms, (size_t)lin->nterms, sizeof *lin->terms, term_cmp);
  return true;
}

/* ---- rebuild ---- */

static const UOp *scaled(Ctx *ctx, DType d, const UOp *t, int64_t coef) {
  if (coef == 1) return t;
  const UOp *c = uop_const_int(ctx, d, coef);
  return c ? uop_binary(ctx, UJ_OP_MUL, t, c) : NULL;
}

/* acc + coef·t, as SUB when coef is negative (and its negation is too). */
static const UOp *join(Ctx *ctx, DType d, const UOp *acc, const UOp *t, int64_t coef) {
  int64_t neg = ring_norm(d, 0 - (uint64_t)coef);
  bool sub = coef < 0 && neg > 0;
  const UOp *part = t ? scaled(ctx, d, t, sub ? neg : coef) : uop_const_int(ctx, d, sub ? neg : coef);
  if (!part) return NULL;
  if (!acc) return part;
  return uop_binary(ctx, sub ? UJ_OP_SUB : UJ_OP_ADD, acc, part);
}

const UOp *linear_build(Ctx *ctx, const Linear *lin) {
  DType d = lin->dtype;
  const UOp *acc = NULL;
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < lin->nterms; i++) {
      const Term *t = &lin->terms[i];
      if ((t->coef > 0) != (pass == 0)) continue;
      if (!acc && t->coef == -1) acc = uop_unary(ctx, UJ_OP_NEG, t->node);
      else if (!acc && t->coef < 0) acc = scaled(ctx, d, t->node, t->coef);
      else acc = join(ctx, d, acc, t->node, t->coef);
      if (!acc) return NULL;
    }
  }
  if (!acc) return uop_const_int(ctx, d, lin->k);
  return lin->k ? join(ctx, d, acc, NULL, lin->k) : acc;
}

/* ---- bounds and cost ---- */

bool linear_bounds(const Linear *lin, int64_t *lo, int64_t *hi) {
  *lo = *hi = lin->k;
  for (int i = 0; i < lin->nterms; i++) {
    const UOp *t = lin->terms[i].node;
    int64_t c = lin->terms[i].coef, a, b;
    if (!t->bounded || __builtin_mul_overflow(t->vmin, c, &a) ||
        __builtin_mul_overflow(t->vmax, c, &b))
      return false;
    if (a > b) { int64_t s = a; a = b; b = s; }
    if (__builtin_add_overflow(*lo, a, lo) || __builtin_add_overflow(*hi, b, hi)) return false;
  }
  return true;
}

bool linear_fits(DType d, int64_t lo, int64_t hi) {
  int64_t dlo, dhi;
  if (!dtype_full_bounds(d, &dlo, &dhi)) dlo = 0, dhi = INT64_MAX; /* uint64 */
  return lo >= dlo && hi <= dhi;
}

/* A term that was below the decomposed node (not one join_slices made). */
static bool is_term(const Linear *lin, const UOp *u) {
  for (int i = 0; i < lin->nterms; i++)
    if (lin->terms[i].node == u) return !lin->terms[i].fresh;
  return false;
}

/* What u costs: its distinct nodes down to the terms of lin, not counting
 * nodes that other users keep alive anyway (shared ones), except
 * `replaced` itself, whose users all move to its replacement. */
static int linear_cost(const Rewriter *rw, const UOp *u, const UOp *replaced, const Linear *lin) {
  const UOp *seen[4 * LINEAR_MAX_SPINE], *stack[4 * LINEAR_MAX_SPINE];
  int nseen = 0, top = 0, cost = 0;
  stack[top++] = u;
  while (top) {
    const UOp *v = stack[--top];
    bool dup = is_term(lin, v) || (v != replaced && rewrite_is_shared(rw, v));
    for (int i = 0; i < nseen && !dup; i++) dup = seen[i] == v;
    if (dup) continue;
    if (nseen == 4 * LINEAR_MAX_SPINE) return cost; /* big enough to lose */
    seen[nseen++] = v;
    cost += v->op == UJ_OP_IDIV || v->op == UJ_OP_MOD ? LINEAR_DIVMOD_COST : 1;
    for (uint32_t i = 0; i < v->nsrc && top < 4 * LINEAR_MAX_SPINE; i++) stack[top++] = v->src[i];
  }
  return cost;
}

const UOp *linear_not_larger(const Rewriter *rw, const UOp *out, const UOp *root,
                             const Linear *lin) {
  if (!out || out == root) return out;
  return linear_cost(rw, out, root, lin) <= linear_cost(rw, root, root, lin) ? out : NULL;
}
