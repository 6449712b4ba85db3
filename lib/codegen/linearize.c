/* linearize.c — a lowered kernel to its list (linear.h).
 *
 * Effects (SINK, END, STORE, BARRIER) are listed from the root, left to
 * right, the way the evaluator runs them; an END opens a loop. A value is
 * listed on first use and reused while the loop it was listed in is open;
 * when that loop closes it is forgotten, and a later use lists it again
 * (LLVM's LICM and GVN hoist and merge the copies). So every item is read
 * only where the item that made it dominates, with no analysis of our own.
 * A REDUCE is listed where it is first used: its loops, an accumulator per
 * loop, its step, and the group of REDUCEs that share its loops. */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/linear.h"
#include "codegen/parts.h"
#include "uop/alu.h"
#include "uop/nodemap.h"

enum { MAX_LOOPS = 64, MAX_GROUP = 32, MAX_UNROLL = 64 };

typedef struct Loop {
  const UOp *range;
  uint32_t item;               /* its LOOP; LIN_NONE: a copy of an unrolled step */
  uint32_t acc[MAX_GROUP];     /* the PHIs of the REDUCEs it runs */
  unsigned naccs;
  uint64_t serial;
} Loop;

typedef struct Frame {
  const UOp *u;
  uint32_t next;
} Frame;

typedef struct State {
  Ctx *ctx;
  Linear *l;
  NodeMap num; /* the kernel's nodes, its rescales' and its part bounds', numbered */
  /* by number: the item that holds its value, the loop depth and serial it
   * was listed in, the walk that pushed it, listed as an effect at depth 0 */
  uint32_t *val, *lvl;
  uint64_t *ser, *pushed, walks, walk_id;
  unsigned char *done0, *busy; /* busy: a REDUCE whose group is being listed */
  Frame *walk, *steps;
  size_t walk_top, walk_cap;
  Loop loops[MAX_LOOPS];
  unsigned depth;
  uint64_t serials;
  const UOp *split; /* CPU: the RANGE run in parts, or NULL */
  PartBounds parts;
  /* the REDUCEs that may share a loop with another (no REDUCE in their
   * value), each with the RANGEs its value uses beyond its own:
   * outer[first[i] .. first[i + 1]) */
  const UOp **reduces, **outer;
  size_t nreduces, *first;
  const OnlineMax *online;
  size_t nonline;
  const UOp ***rescale_nodes; /* per online max: its rescale's nodes */
  size_t *nrescale_nodes;
} State;

static uint32_t ix(const State *s, const UOp *u) {
  uint32_t k = nodemap_find(&s->num, u);
  assert(k != NODEMAP_NONE);
  return k;
}

static uint64_t serial_at(const State *s, uint32_t lvl) { return lvl ? s->loops[lvl - 1].serial : 0; }

static bool valid(const State *s, const UOp *u) {
  uint32_t k = ix(s, u), l = s->lvl[k];
  return s->val[k] != LIN_NONE && l <= s->depth && s->ser[k] == serial_at(s, l);
}

static uint32_t val(const State *s, const UOp *u) { return s->val[ix(s, u)]; }

static void set_value(State *s, const UOp *u, uint32_t item) {
  uint32_t k = ix(s, u);
  s->val[k] = item, s->lvl[k] = s->depth, s->ser[k] = serial_at(s, s->depth);
}

static bool fail(State *s, const UOp *u, const char *msg) {
  ctx_set_error(s->ctx, "linearize: %s: %s", op_table[u->op].name, msg);
  return false;
}

static bool nomem(State *s) {
  ctx_set_error(s->ctx, "linearize: out of memory");
  return false;
}

/* Appends an item; LIN_NONE (error set) when out of memory. */
static uint32_t add(State *s, LinKind kind, const UOp *u, uint8_t flags, const uint32_t *src, uint32_t n) {
  Linear *l = s->l;
  if (l->n == l->cap || l->nsrcs + n > l->srcs_cap) {
    size_t cap = l->n == l->cap ? 2 * l->cap + 256 : l->cap, scap = 2 * l->srcs_cap + n + 512;
    LinItem *items = realloc(l->items, cap * sizeof *items);
    if (items) l->items = items, l->cap = cap;
    uint32_t *srcs = items ? realloc(l->srcs, scap * sizeof *srcs) : NULL;
    if (!srcs) return nomem(s), LIN_NONE;
    l->srcs = srcs, l->srcs_cap = scap;
  }
  if (l->n >= LIN_NONE - 1) return nomem(s), LIN_NONE;
  l->items[l->n] = (LinItem){u, (uint8_t)kind, flags, n, (uint32_t)l->nsrcs};
  if (n) memcpy(l->srcs + l->nsrcs, src, n * sizeof *src);
  l->nsrcs += n;
  return (uint32_t)l->n++;
}

/* A value of the lowering's own: node gives its op and type, src its operands. */
static uint32_t made(State *s, const UOp *node, const uint32_t *src, uint32_t n) {
  return node ? add(s, LIN_VALUE, node, 0, src, n) : (nomem(s), LIN_NONE);
}

static const UOp *vec_of(State *s, const UOp *x, unsigned lanes) {
  const UOp **src = x ? malloc(lanes * sizeof *src) : NULL;
  for (unsigned i = 0; src && i < lanes; i++) src[i] = x;
  const UOp *v = src ? uop_new(s->ctx, UJ_OP_VECTORIZE, (DType){x->dtype.scalar, UJ_AS_NONE, (uint16_t)lanes}, src, lanes,
                               arg_none()) : NULL;
  free(src);
  return v;
}

/* x, or x in every lane of a vector of `lanes`; NULL propagates. */
static const UOp *widened(State *s, const UOp *x, unsigned lanes) { return x && lanes > 1 ? vec_of(s, x, lanes) : x; }

/* Nodes of the lowering's own values, NULL when a source is (out of memory). */
static const UOp *binary(State *s, Op op, const UOp *a, const UOp *b) { return a && b ? uop_binary(s->ctx, op, a, b) : NULL; }
static const UOp *where(State *s, const UOp *c, const UOp *a, const UOp *b) {
  return c && a && b ? uop_ternary(s->ctx, UJ_OP_WHERE, c, a, b) : NULL;
}

/* item (of node x's type) in every lane of a vector of `lanes`. */
static uint32_t splat(State *s, uint32_t item, const UOp *x, unsigned lanes) {
  if (lanes == 1 || item == LIN_NONE) return item;
  uint32_t *src = malloc(lanes * sizeof *src);
  for (unsigned i = 0; src && i < lanes; i++) src[i] = item;
  uint32_t k = src ? made(s, vec_of(s, x, lanes), src, lanes) : (nomem(s), LIN_NONE);
  free(src);
  return k;
}

static uint32_t constant(State *s, DType d, double v) {
  return made(s, uop_const_word(s->ctx, dt_lane(d), word_from_double((uj_scalar)d.scalar, v)), NULL, 0);
}

/* ---- values ---- */

static bool emit_value(State *s, const UOp *u);
static bool loop_open(State *s, const UOp *user, const UOp *range, bool grid);
static bool loop_close(State *s, const uint32_t *next);

static bool ranges_open(const State *s, size_t i) {
  for (size_t k = s->first[i]; k < s->first[i + 1]; k++) {
    bool open = false;
    for (unsigned d = 0; d < s->depth && !open; d++) open = s->loops[d].range == s->outer[k];
    if (!open) return false;
  }
  return true;
}

/* u and the REDUCEs that run in its loops: those over the same RANGEs
 * (in order) not yet computed here, whose values hold no REDUCE and use
 * only RANGEs open here. A register-blocked GEMM's rows are such REDUCEs
 * (docs/opt.md): one loop over k feeds all their accumulators. */
static unsigned reduce_group(const State *s, const UOp *u, const UOp **group) {
  unsigned n = 0;
  group[n++] = u;
  for (size_t i = 0; i < s->nreduces && n < MAX_GROUP; i++) {
    const UOp *v = s->reduces[i];
    bool same = v != u && v->nsrc == u->nsrc && !valid(s, v) && !s->busy[ix(s, v)];
    for (uint32_t k = 1; same && k < u->nsrc; k++) same = v->src[k] == u->src[k];
    if (same && ranges_open(s, i)) group[n++] = v;
  }
  return n;
}

/* The REDUCEs in x's value, at any depth, that bind one of u's RANGEs
 * again (they shadow it: docs/semantics.md), added to found[0 .. *n)
 * once each; false when out of memory. */
static bool find_shadows(State *s, const UOp *x, const UOp *u, const UOp **found, unsigned *n, unsigned cap) {
  const UOp **nodes = NULL;
  size_t m = uop_toposort(s->ctx, x->src[0], &nodes);
  for (size_t i = 0; i < m; i++) {
    const UOp *v = nodes[i];
    bool shadow = false;
    for (uint32_t j = 1; v->op == UJ_OP_REDUCE && j < v->nsrc && !shadow; j++)
      for (uint32_t k = 1; k < u->nsrc && !shadow; k++) shadow = v->src[j] == u->src[k];
    for (unsigned k = 0; shadow && k < *n; k++) shadow = found[k] != v;
    if (shadow && *n < cap) found[(*n)++] = v;
  }
  free(nodes);
  return m > 0;
}

static const OnlineMax *online_of(const State *s, const UOp *u, size_t *at) {
  for (size_t i = 0; i < s->nonline; i++)
    if (s->online[i].max == u) return *at = i, &s->online[i];
  return NULL;
}

/* exp2((old - now) * c) of online max i, 1 where old == now (both -inf
 * at the start of a masked row); its graph listed afresh each time. */
static uint32_t emit_rescale(State *s, size_t i, uint32_t old, uint32_t now) {
  const OnlineMax *o = &s->online[i];
  for (size_t k = 0; k < s->nrescale_nodes[i]; k++) s->val[ix(s, s->rescale_nodes[i][k])] = LIN_NONE;
  set_value(s, o->old, old), set_value(s, o->now, now);
  if (!emit_value(s, o->rescale)) return LIN_NONE;
  const UOp *same = uop_binary(s->ctx, UJ_OP_CMPEQ, o->old, o->now);
  uint32_t eq = made(s, same, (uint32_t[]){old, now}, 2), one = constant(s, o->max->dtype, 1.0);
  const UOp *pick = same ? uop_ternary(s->ctx, UJ_OP_WHERE, same, o->old, o->old) : NULL;
  return eq == LIN_NONE || one == LIN_NONE ? LIN_NONE : made(s, pick, (uint32_t[]){eq, one, val(s, o->rescale)}, 3);
}

/* Whether every RANGE of REDUCE u has a bound above 0 (its loops ran);
 * the bounds were listed before the loops. */
static uint32_t loops_ran(State *s, const UOp *u) {
  uint32_t ran = LIN_NONE;
  const UOp *ran_node = NULL;
  for (uint32_t k = 1; k < u->nsrc; k++) {
    const UOp *b = u->src[k]->src[0], *zero = uop_const_int(s->ctx, b->dtype, 0);
    bool sign = dt_is_signed(b->dtype);
    const UOp *more = zero ? (sign ? uop_binary(s->ctx, UJ_OP_CMPLT, zero, b) : uop_binary(s->ctx, UJ_OP_CMPNE, b, zero)) : NULL;
    uint32_t z = made(s, zero, NULL, 0);
    uint32_t m = z == LIN_NONE ? LIN_NONE : made(s, more, sign ? (uint32_t[]){z, val(s, b)} : (uint32_t[]){val(s, b), z}, 2);
    if (m == LIN_NONE) return LIN_NONE;
    if (ran == LIN_NONE) {
      ran = m, ran_node = more;
      continue;
    }
    ran_node = uop_binary(s->ctx, UJ_OP_AND, ran_node, more);
    if ((ran = made(s, ran_node, (uint32_t[]){ran, m}, 2)) == LIN_NONE) return LIN_NONE;
  }
  return ran;
}

/* REDUCE(v, r0, r1, ...): loops over r0 (outermost) .. rn, an accumulator
 * PHI in each; acc = op(acc, v) in the innermost body, in loop order (the
 * evaluator's order, so float sums agree bit for bit). An innermost rn of
 * kind `unroll` (constant bound U) is no loop: the body holds U copies of
 * the step, rn = 0 .. U-1, in that order. The REDUCEs of its group
 * (reduce_group) run in the same loops, each with its own accumulators. A
 * REDUCE a value of the group reads that binds the group's RANGEs again
 * (a shadow) is computed before the loops; an online max (codegen/online.h)
 * instead runs in them first, as the maximum so far, and the accumulators
 * of the REDUCEs that read it are scaled by its rescale before they add
 * their values. */
typedef struct Group {
  const UOp *m[MAX_GROUP];
  unsigned n;
  int online[MAX_GROUP];    /* the online table's index of a maximum so far, else -1 */
  int reads_max[MAX_GROUP]; /* the member whose maximum so far it reads, or -1 */
  Op op[MAX_GROUP];
  uint32_t acc[MAX_GROUP], next[MAX_GROUP], scale[MAX_GROUP], empty[MAX_GROUP];
} Group;

/* One step: each member's accumulator advanced by its value (maxima so
 * far first: the others read them), next[] the new ones. */
static bool group_step(State *s, Group *g) {
  for (unsigned i = 0; i < g->n; i++) {
    if (g->online[i] < 0) continue;
    const UOp *m = g->m[i], *x = m->src[0];
    const OnlineMax *o = &s->online[g->online[i]];
    if (!emit_value(s, x)) return false;
    g->next[i] = add(s, LIN_ACC, m, 0, (uint32_t[]){g->acc[i], val(s, x)}, 2);
    if (g->next[i] == LIN_NONE) return false;
    g->scale[i] = emit_rescale(s, (size_t)g->online[i], g->acc[i], g->next[i]);
    uint32_t ninf = constant(s, m->dtype, -INFINITY);
    const UOp *is_ninf = uop_binary(s->ctx, UJ_OP_CMPEQ, o->old, o->old);
    g->empty[i] = g->scale[i] == LIN_NONE || ninf == LIN_NONE ? LIN_NONE : made(s, is_ninf, (uint32_t[]){g->next[i], ninf}, 2);
    if (g->empty[i] == LIN_NONE) return false;
    set_value(s, m, g->next[i]);
  }
  for (unsigned i = 0; i < g->n; i++) {
    if (g->online[i] >= 0) continue;
    const UOp *m = g->m[i], *x = m->src[0];
    unsigned lanes = m->dtype.lanes;
    if (!emit_value(s, x)) return false;
    uint32_t a = g->acc[i];
    if (g->reads_max[i] >= 0) { /* scaled to the new maximum; while it is -inf, every value read is -inf: none adds */
      const UOp *max = g->m[g->reads_max[i]];
      uint32_t f = splat(s, g->scale[g->reads_max[i]], max, lanes);
      const UOp *mul = binary(s, UJ_OP_MUL, m, widened(s, max, lanes));
      if (f == LIN_NONE || (a = made(s, mul, (uint32_t[]){a, f}, 2)) == LIN_NONE) return false;
    }
    const UOp *product = reduce_fused_product(m); /* fused (docs/semantics.md) */
    uint32_t src[4] = {a, val(s, x), product ? val(s, x->src[0]) : 0, product ? val(s, x->src[1]) : 0};
    if ((g->next[i] = add(s, LIN_ACC, m, 0, src, product ? 4 : 2)) == LIN_NONE) return false;
    if (g->reads_max[i] >= 0) {
      const UOp *max = g->m[g->reads_max[i]];
      const UOp *cond = binary(s, UJ_OP_CMPEQ, max, max);
      uint32_t e = cond ? splat(s, g->empty[g->reads_max[i]], cond, lanes) : (nomem(s), LIN_NONE);
      const UOp *keep = where(s, widened(s, cond, lanes), m, m);
      if (e == LIN_NONE || (g->next[i] = made(s, keep, (uint32_t[]){e, g->acc[i], g->next[i]}, 3)) == LIN_NONE)
        return false;
    }
  }
  return true;
}

/* The innermost RANGE of REDUCE u when it is an `unroll` RANGE with a
 * constant bound above 0 (opt/unroll.c): its steps are listed as that
 * many copies of the step, not a loop. */
static const UOp *unrolled_range(const UOp *u) {
  const UOp *r = u->nsrc > 1 ? u->src[u->nsrc - 1] : NULL, *b = r ? r->src[0] : NULL;
  return r && range_kind(r) == AXIS_UNROLL && b->op == UJ_OP_CONST && b->bounded && b->vmin > 0 && b->vmin <= MAX_UNROLL ? r : NULL;
}

/* A copy of an unrolled step: a scope like a loop's (the values listed
 * in it are forgotten when it ends), its RANGE the constant c. */
static bool copy_open(State *s, const UOp *range, int64_t c) {
  if (s->depth == MAX_LOOPS) return fail(s, range, "loops nest deeper than 64");
  uint32_t k = made(s, uop_const_int(s->ctx, range->dtype, c), NULL, 0);
  s->loops[s->depth] = (Loop){.range = range, .item = LIN_NONE, .serial = ++s->serials};
  s->depth++;
  set_value(s, range, k);
  return k != LIN_NONE;
}

/* Closes the group's loops (their PHIs' values after them are the
 * results); the NaN of a max still -inf; the group's values set. */
static bool group_close(State *s, const UOp *u, Group *g, unsigned first) {
  while (s->depth > first) {
    Loop *L = &s->loops[s->depth - 1];
    uint32_t exit_value[MAX_GROUP];
    memcpy(exit_value, L->acc, g->n * sizeof *exit_value);
    if (!loop_close(s, g->next)) return false;
    memcpy(g->next, exit_value, g->n * sizeof *g->next);
  }
  /* a maximum still -inf after steps ran: the evaluator read x - M = -inf - -inf, NaN, at every step */
  uint32_t ran = LIN_NONE;
  for (unsigned i = 0; i < g->n; i++) {
    if (g->reads_max[i] < 0) continue;
    const UOp *m = g->m[i], *max = g->m[g->reads_max[i]];
    unsigned lanes = m->dtype.lanes;
    if (ran == LIN_NONE && (ran = loops_ran(s, u)) == LIN_NONE) return false;
    uint32_t ninf = constant(s, max->dtype, -INFINITY), nan = constant(s, m->dtype, NAN);
    const UOp *is_ninf = binary(s, UJ_OP_CMPEQ, max, max);
    const UOp *none = binary(s, UJ_OP_AND, is_ninf, is_ninf);
    const UOp *nan_node = uop_const_word(s->ctx, dt_lane(m->dtype), 0);
    const UOp *pick = where(s, widened(s, none, lanes), widened(s, nan_node, lanes), m);
    uint32_t e = ninf == LIN_NONE || nan == LIN_NONE ? LIN_NONE : made(s, is_ninf, (uint32_t[]){g->next[g->reads_max[i]], ninf}, 2);
    uint32_t n = e == LIN_NONE ? LIN_NONE : made(s, none, (uint32_t[]){ran, e}, 2);
    n = none ? splat(s, n, none, lanes) : LIN_NONE, nan = nan_node ? splat(s, nan, nan_node, lanes) : LIN_NONE;
    if (n == LIN_NONE || nan == LIN_NONE || (g->next[i] = made(s, pick, (uint32_t[]){n, nan, g->next[i]}, 3)) == LIN_NONE)
      return s->ctx->error[0] ? false : nomem(s);
  }
  for (unsigned i = 0; i < g->n; i++) set_value(s, g->m[i], g->next[i]);
  return true;
}

/* The group's shadows listed first (those not online), and each member's
 * role: a maximum so far, or a reader of one. */
static bool group_roles(State *s, const UOp *u, Group *g) {
  const UOp *reads_online[MAX_GROUP] = {NULL};
  bool drop[MAX_GROUP] = {false};
  for (unsigned i = 0; i < g->n; i++) { /* a shadow not online: computed first, unless it is u */
    const UOp *reads[MAX_GROUP];
    unsigned nreads = 0;
    if (!find_shadows(s, g->m[i], u, reads, &nreads, MAX_GROUP)) return nomem(s);
    for (unsigned k = 0; k < nreads; k++) {
      size_t at;
      unsigned h = 0;
      while (h < g->n && g->m[h] != reads[k]) h++;
      if (h < g->n && online_of(s, reads[k], &at)) {
        reads_online[i] = reads[k];
        continue;
      }
      if (reads[k] == u) drop[i] = true; /* i runs after u, on its own */
      else if (h < g->n) drop[h] = true;
      if (reads[k] != u && !emit_value(s, reads[k])) return false;
    }
  }
  unsigned kept = 0;
  for (unsigned i = 0; i < g->n; i++)
    if (!drop[i]) g->m[kept] = g->m[i], reads_online[kept++] = reads_online[i];
  g->n = kept;
  for (unsigned i = 0; i < g->n; i++) {
    size_t at;
    g->online[i] = online_of(s, g->m[i], &at) ? (int)at : -1;
    g->reads_max[i] = -1;
    for (unsigned h = 0; h < g->n && g->online[i] < 0; h++)
      if (g->m[h] == reads_online[i]) g->reads_max[i] = (int)h;
    op_from_name(g->m[i]->name, strlen(g->m[i]->name), &g->op[i]);
    g->acc[i] = LIN_NONE; /* the identity */
  }
  return true;
}

static bool emit_group(State *s, const UOp *u, Group *g) {
  unsigned n = u->nsrc - 1, first = s->depth;
  if (!group_roles(s, u, g)) return false;
  const UOp *unrolled = unrolled_range(u);
  if (unrolled) {
    if (s->depth == MAX_LOOPS) return fail(s, u, "loops nest deeper than 64");
    if (!emit_value(s, u->src[n]->src[0])) return false; /* its bound: loops_ran reads it */
    n--;
  }
  for (unsigned k = 0; k < n; k++) {
    if (!loop_open(s, u, u->src[1 + k], false)) return false;
    Loop *L = &s->loops[s->depth - 1];
    for (unsigned i = 0; i < g->n; i++)
      if ((L->acc[i] = g->acc[i] = add(s, LIN_PHI, g->m[i], 0, (uint32_t[]){L->item, g->acc[i]}, 2)) == LIN_NONE)
        return false;
    L->naccs = g->n;
  }
  if (!unrolled) return group_step(s, g) && group_close(s, u, g, first);
  if (g->acc[0] == LIN_NONE) /* no loop around the copies: the first reads the identities */
    for (unsigned i = 0; i < g->n; i++) {
      const UOp *m = g->m[i];
      uint64_t w = alu_identity(g->op[i], (uj_scalar)m->dtype.scalar);
      uint32_t c = made(s, uop_const_word(s->ctx, dt_lane(m->dtype), w), NULL, 0);
      if ((g->acc[i] = splat(s, c, uop_const_word(s->ctx, dt_lane(m->dtype), w), m->dtype.lanes)) == LIN_NONE) return false;
    }
  for (int64_t c = 0; c < unrolled->src[0]->vmin; c++) { /* the innermost RANGE's steps, one copy each, in order */
    if (!copy_open(s, unrolled, c)) return false;
    bool ok = group_step(s, g);
    s->depth--; /* the copy's values are forgotten: the next one computes its own */
    if (!ok) return false;
    memcpy(g->acc, g->next, g->n * sizeof *g->acc);
  }
  return group_close(s, u, g, first);
}

static bool emit_reduce(State *s, const UOp *u) {
  Group g;
  g.n = reduce_group(s, u, g.m);
  unsigned n = g.n;
  const UOp *members[MAX_GROUP];
  memcpy(members, g.m, n * sizeof *members);
  for (unsigned i = 0; i < n; i++) s->busy[ix(s, members[i])] = 1; /* the shadows computed first do not take them */
  bool ok = emit_group(s, u, &g);
  for (unsigned i = 0; i < n; i++) s->busy[ix(s, members[i])] = 0;
  return ok;
}

static bool emit_node(State *s, const UOp *u) {
  switch (u->op) {
  case UJ_OP_RANGE: return fail(s, u, "RANGE is used outside its END");
  case UJ_OP_ALLOC: return fail(s, u, "an ALLOC the kernel's entry did not make");
  case UJ_OP_REDUCE:
    if (u->nsrc == 1) return fail(s, u, "a tensor REDUCE (over axes) reaches the lowering: kernels reduce over RANGEs");
    return emit_reduce(s, u);
  case UJ_OP_CONST:
  case UJ_OP_DEFINE_VAR:
  case UJ_OP_PARAM:
  case UJ_OP_INDEX:
  case UJ_OP_LOAD:
  case UJ_OP_VECTORIZE:
  case UJ_OP_GEP: break;
  default:
    if (!op_has((Op)u->op, OPF_ALU)) return fail(s, u, "not a value op a kernel computes");
  }
  uint32_t small[8], *src = u->nsrc + 2 <= 8 ? small : malloc((u->nsrc + 2) * sizeof *src), n = 0;
  if (!src) return nomem(s);
  for (uint32_t i = 0; i < u->nsrc; i++) src[n++] = val(s, u->src[i]);
  if (u->op == UJ_OP_INDEX) {
    const UOp *i = u->src[1];
    if (u->nsrc == 2) src[n++] = LIN_NONE;
    if (i->op == UJ_OP_ADD && i->src[1]->op == UJ_OP_CONST) src[n++] = val(s, i->src[0]); /* e + k: codegen/offsets.h */
  }
  uint32_t k = add(s, LIN_VALUE, u, 0, src, n);
  if (src != small) free(src);
  if (k != LIN_NONE) set_value(s, u, k);
  return k != LIN_NONE;
}

static bool needed(const State *s, const UOp *u) {
  return !op_has(u->op, OPF_EFFECT) && !valid(s, u) && s->pushed[ix(s, u)] != s->walk_id;
}

static bool walk_push(State *s, const UOp *u) {
  if (s->walk_top == s->walk_cap) {
    size_t cap = 2 * s->walk_cap + 64;
    Frame *w = realloc(s->walk, cap * sizeof *w);
    if (!w) return nomem(s);
    s->walk = w, s->walk_cap = cap;
  }
  s->walk[s->walk_top++] = (Frame){u, 0};
  s->pushed[ix(s, u)] = s->walk_id;
  return true;
}

/* Lists value u after the sources it needs; iterative (any depth). A
 * REDUCE's sources are its own business (emit_reduce), which walks again,
 * nested, above this walk on the same stack. */
static bool emit_value(State *s, const UOp *u) {
  uint64_t outer = s->walk_id;
  size_t base = s->walk_top;
  bool ok = true;
  s->walk_id = ++s->walks;
  if (needed(s, u)) ok = walk_push(s, u);
  while (ok && s->walk_top > base) {
    Frame *f = &s->walk[s->walk_top - 1];
    if (f->u->op != UJ_OP_REDUCE && f->next < f->u->nsrc) {
      const UOp *src = f->u->src[f->next++];
      if (needed(s, src)) ok = walk_push(s, src);
      continue;
    }
    const UOp *v = f->u;
    s->walk_top--;
    ok = emit_node(s, v);
  }
  s->walk_top = base, s->walk_id = outer;
  return ok;
}

/* ---- loops ---- */

/* Opens the loop of range (for `user`, an END or REDUCE, in messages);
 * grid: it may be a grid index (an END's). */
static bool loop_open(State *s, const UOp *user, const UOp *range, bool grid) {
  for (unsigned i = 0; i < s->depth; i++)
    if (s->loops[i].range == range) return fail(s, user, "its RANGE is already open (inside its own loop)");
  if (s->depth == MAX_LOOPS) return fail(s, user, "loops nest deeper than 64");
  bool part = range == s->split;
  const UOp *bound = part ? s->parts.bound : range->src[0];
  if (!emit_value(s, bound) || (part && !emit_value(s, s->parts.start))) return false;
  uint32_t src[2] = {val(s, bound), part ? val(s, s->parts.start) : 0};
  uint32_t k = add(s, LIN_LOOP, range, grid ? LIN_GRID : 0, src, part ? 2 : 1);
  if (k == LIN_NONE) return false;
  s->loops[s->depth] = (Loop){.range = range, .item = k, .serial = ++s->serials};
  s->depth++;
  set_value(s, range, k);
  return true;
}

/* Closes the innermost loop; next: its accumulators' values at the end of
 * a step (NULL when it has none). */
static bool loop_close(State *s, const uint32_t *next) {
  Loop *L = &s->loops[--s->depth];
  uint32_t src[1 + 2 * MAX_GROUP];
  src[0] = L->item;
  for (unsigned i = 0; i < L->naccs; i++) src[1 + 2 * i] = L->acc[i], src[2 + 2 * i] = next[i];
  return add(s, LIN_ENDLOOP, L->range, 0, src, 1 + 2 * L->naccs) != LIN_NONE;
}

/* ---- effects ---- */

static bool effect_start(State *s, const UOp *u, size_t *top) {
  if (s->depth == 0) { /* outside loops an effect runs once */
    if (s->done0[ix(s, u)]) return true;
    s->done0[ix(s, u)] = 1;
  }
  if (u->op == UJ_OP_SINK || u->op == UJ_OP_BARRIER) {
    s->steps[(*top)++] = (Frame){u, 0};
    return true;
  }
  if (u->op == UJ_OP_END) {
    if (!loop_open(s, u, u->src[0], true)) return false;
    s->steps[(*top)++] = (Frame){u, 1};
    return true;
  }
  if (!emit_value(s, u->src[0]) || !emit_value(s, u->src[1])) return false;
  return add(s, LIN_STORE, u, 0, (uint32_t[]){val(s, u->src[0]), val(s, u->src[1])}, 2) != LIN_NONE;
}

/* A BARRIER, its effects listed. After it every value listed inside the
 * workgroup is forgotten, the loops' own indices excepted, so a LOAD of
 * local memory is listed again: values after a BARRIER are computed after
 * it (docs/semantics.md, "Workgroups"). */
static bool emit_barrier(State *s, const UOp *u) {
  unsigned first = s->depth;
  for (unsigned i = s->depth; i-- > 0;)
    if (range_kind(s->loops[i].range) == AXIS_LOCAL) first = i;
  if (add(s, LIN_BARRIER, u, first < s->depth ? LIN_WORKGROUP : 0, NULL, 0) == LIN_NONE) return false;
  for (unsigned i = first; i < s->depth; i++) {
    uint32_t r = ix(s, s->loops[i].range);
    bool index_here = valid(s, s->loops[i].range) && s->lvl[r] == i + 1;
    s->loops[i].serial = ++s->serials;
    if (index_here) s->ser[r] = s->loops[i].serial;
  }
  return true;
}

static bool emit_effects(State *s, const UOp *root) {
  size_t top = 0;
  if (!effect_start(s, root, &top)) return false;
  while (top > 0) {
    Frame *f = &s->steps[top - 1];
    if (f->next < f->u->nsrc) {
      if (!effect_start(s, f->u->src[f->next++], &top)) return false;
      continue;
    }
    if (f->u->op == UJ_OP_END && !loop_close(s, NULL)) return false;
    if (f->u->op == UJ_OP_BARRIER && !emit_barrier(s, f->u)) return false;
    top--;
  }
  return true;
}

/* ---- the tables ---- */

static bool number_graph(State *s, const UOp *root, const UOp ***nodes_out, size_t *n_out) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(s->ctx, root, &nodes);
  bool ok = n > 0;
  for (size_t k = 0; ok && k < n; k++) ok = nodemap_add(&s->num, nodes[k]) != NODEMAP_NONE;
  if (nodes_out && ok) *nodes_out = nodes, *n_out = n;
  else free(nodes);
  return ok;
}

/* Numbers the kernel's nodes, its rescales' and its part bounds'; lists
 * the REDUCEs that may share loops and the ALLOCs. */
static bool state_alloc(State *s, const UOp *root) {
  const UOp **nodes = NULL;
  size_t n = 0;
  if (!number_graph(s, root, &nodes, &n)) return false;
  s->rescale_nodes = calloc(s->nonline + 1, sizeof *s->rescale_nodes);
  s->nrescale_nodes = calloc(s->nonline + 1, sizeof *s->nrescale_nodes);
  bool ok = s->rescale_nodes && s->nrescale_nodes;
  for (size_t i = 0; ok && i < s->nonline; i++) {
    ok = (s->nrescale_nodes[i] = uop_toposort(s->ctx, s->online[i].rescale, &s->rescale_nodes[i])) > 0;
    for (size_t k = 0; ok && k < s->nrescale_nodes[i]; k++) ok = nodemap_add(&s->num, s->rescale_nodes[i][k]) != NODEMAP_NONE;
  }
  for (size_t i = 0; ok && s->split && i < n; i++) /* the CPU entry passes these; a kernel's own would be taken for them */
    if (nodes[i]->op == UJ_OP_DEFINE_VAR && (!strcmp(nodes[i]->name, "_part") || !strcmp(nodes[i]->name, "_nparts")))
      ok = fail(s, nodes[i], "the variable names _part and _nparts are the CPU's part split's (codegen/parts.h)");
  if (ok && s->split) ok = parts_bounds(s->ctx, s->split, &s->parts) && number_graph(s, s->parts.start, NULL, NULL) &&
                           number_graph(s, s->parts.bound, NULL, NULL);
  size_t m = s->num.count;
  s->val = malloc(m * sizeof *s->val), s->lvl = calloc(m, sizeof *s->lvl), s->ser = calloc(m, sizeof *s->ser);
  s->pushed = calloc(m, sizeof *s->pushed), s->done0 = calloc(m, 1), s->busy = calloc(m, 1);
  s->steps = malloc(m * sizeof *s->steps);
  s->reduces = malloc((n + 1) * sizeof *s->reduces), s->first = calloc(n + 2, sizeof *s->first);
  ok = ok && s->val && s->lvl && s->ser && s->pushed && s->done0 && s->busy && s->steps && s->reduces && s->first;
  for (size_t k = 0; ok && k < m; k++) s->val[k] = LIN_NONE;
  size_t nranges = 0;
  for (size_t i = 0; i < n; i++) nranges += nodes[i]->op == UJ_OP_RANGE;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_ALLOC) { /* in the entry block, before anything */
      uint32_t k = add(s, LIN_VALUE, u, 0, NULL, 0);
      if (k == LIN_NONE) ok = false;
      else set_value(s, u, k);
    }
    if (ok && u->op == UJ_OP_REDUCE && u->nsrc > 1) { /* the RANGEs its value uses beyond its own */
      const UOp **inner = NULL;
      size_t mi = uop_toposort(s->ctx, u->src[0], &inner), at = s->first[s->nreduces];
      const UOp **outer = mi ? realloc(s->outer, (at + nranges) * sizeof *outer) : NULL;
      if (outer) s->outer = outer;
      for (size_t k = 0; k < mi && outer; k++) {
        bool own = inner[k]->op != UJ_OP_RANGE;
        for (uint32_t j = 1; j < u->nsrc && !own; j++) own = u->src[j] == inner[k];
        for (size_t i2 = 0; i2 < mi && !own; i2++) /* bound inside */
          for (uint32_t j = 1; inner[i2]->op == UJ_OP_REDUCE && j < inner[i2]->nsrc && !own; j++) own = inner[i2]->src[j] == inner[k];
        if (!own) s->outer[at++] = inner[k];
      }
      if (outer) s->reduces[s->nreduces] = u, s->first[++s->nreduces] = at;
      free(inner);
      ok = outer != NULL;
    }
  }
  free(nodes);
  return ok;
}

static void state_free(State *s) {
  void *owned[] = {s->val, s->lvl, s->ser, s->pushed, s->done0, s->busy, s->walk, s->steps,
                   s->reduces, s->outer, s->first, s->nrescale_nodes};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
  for (size_t i = 0; s->rescale_nodes && i < s->nonline; i++) free(s->rescale_nodes[i]);
  free(s->rescale_nodes);
  nodemap_free(&s->num);
}

void linear_free(Linear *l) {
  free(l->items), free(l->srcs);
  memset(l, 0, sizeof *l);
}

bool linearize(Ctx *ctx, const UOp *k, const OnlineMax *online, size_t nonline, const UOp *split, Linear *out) {
  memset(out, 0, sizeof *out);
  State s = {.ctx = ctx, .l = out, .num = nodemap_make(ctx), .online = online, .nonline = nonline, .split = split};
  bool ok = state_alloc(&s, k);
  if (!ok && !ctx->error[0]) nomem(&s);
  ok = ok && emit_effects(&s, k);
  if (ok && split) out->part = s.parts.part, out->nparts = s.parts.nparts;
  state_free(&s);
  if (!ok) linear_free(out);
  return ok;
}
