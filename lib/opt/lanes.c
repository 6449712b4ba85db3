/* lanes.c — long reductions in vector lanes (lanes.h). One rewrite rule
 * on REDUCE, in two forms:
 *
 *   REDUCE(v(j, R(j)), j)   j < W <= 16,  R(j) = REDUCE(x(j), k..)     nested
 *   -> fold(v(0, GEP(V, 0)), .., v(W-1, GEP(V, W-1)))
 *      V = REDUCE(VECTORIZE(x(0), .., x(W-1)), k..)
 *
 *   REDUCE(x(r), .., r)     r < B = 32n, MAX or an integer ADD/MUL     order-free
 *   -> fold(GEP(V, 0), .., GEP(V, 31))
 *      V = REDUCE(VECTORIZE(x(32c + 0), .., x(32c + 31)), .., c)   c < n
 *
 * fold(a_0, ..) = op(..op(a_0, a_1).., a_{W-1}) (op(identity, a_0) is a_0) is the outer
 * REDUCE's own loop unrolled (from -0.0 for a float sum), and lane j of V
 * reduces what R(j) reduced, in the same order: the nested form computes
 * what it did, bit for bit. The order-free form regroups a reduction
 * whose result does not depend on its order (docs/opt.md, "Lanes"); it
 * is taken only when every load along r reads consecutive elements. The
 * lanes of V are pushed down through the ALU ops (opt_vectorize): LLVM
 * sees one W-lane accumulator fed by vector loads. */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "uop/nodemap.h"
#include "opt/lanes.h"
#include "rewrite/rewrite.h"
#include "uop/alu.h"

/* The order-free form's lanes: 32, as MAX's chain (a maximum that keeps
 * NaN and orders -0 below +0) is longer than an add's (docs/opt.md). */
enum { LANES_FREE_WIDTH = 32, LANES_MAX_VECTOR = 64, LANES_MAX_INNER = 8, LANES_MAX_RANGES = 8 };

/* ---- lanes ---- */

static const UOp *gep(Ctx *ctx, const UOp *v, unsigned lane) {
  int64_t at = lane;
  return uop_new(ctx, UJ_OP_GEP, dt_lane(v->dtype), &v, 1, (Arg){NULL, &at, 1});
}

/* x in lane j: the range replaced by its value in the lane (at), each
 * inner REDUCE by the lane's element of its vector REDUCE: inner[i] ->
 * GEP(vec[i], j). */
static const UOp *in_lane(Ctx *ctx, const UOp *x, const UOp *range, const UOp *at,
                          const UOp *const *inner, const UOp *const *vec, size_t n, unsigned j) {
  const UOp *from[1 + LANES_MAX_INNER] = {range}, *to[1 + LANES_MAX_INNER] = {at};
  for (size_t i = 0; i < n; i++) from[1 + i] = inner[i], to[1 + i] = gep(ctx, vec[i], j);
  return opt_substitute(ctx, x, from, to, 1 + n);
}

/* The lanes v[0..w) folded in lane order by reduce's op, from its identity. */
static const UOp *lane_fold(Ctx *ctx, const UOp *reduce, const UOp *const *v, unsigned w) {
  Op op = opt_reduce_op(reduce);
  const UOp *acc =
      uop_const_word(ctx, reduce->dtype, alu_identity(op, (uj_scalar)reduce->dtype.scalar));
  bool first = w > 0 && (op != UJ_OP_MULACC || v[0]->op != UJ_OP_MUL);
  if (first) acc = v[0]; /* op(identity, a) is a, bit for bit (MAX keeps NaN, -0 + a is a; a MULACC of a lane adds it) */
  for (unsigned j = first; j < w && acc && v[j]; j++) acc = opt_reduce_step(ctx, op, acc, v[j]);
  return acc;
}

/* REDUCE(VECTORIZE(x[0..w)) pushed down, ranges) by like's op; NULL when
 * the lanes lose the product a MULACC reduce fuses. */
static const UOp *vector_reduce(Ctx *ctx, const UOp *like, const UOp *const *x, unsigned w,
                                const UOp *const *ranges, uint32_t nranges) {
  const UOp *src[1 + LANES_MAX_RANGES];
  if (nranges > LANES_MAX_RANGES || !(src[0] = opt_vectorize(ctx, x, w))) return NULL;
  if (opt_reduce_op(like) == UJ_OP_MULACC && like->src[0]->op == UJ_OP_MUL && src[0]->op != UJ_OP_MUL)
    return NULL;
  memcpy(src + 1, ranges, nranges * sizeof *ranges);
  DType d = uj_dtype_vec((uj_scalar)like->dtype.scalar, w);
  return uop_new(ctx, UJ_OP_REDUCE, d, src, 1 + nranges, (Arg){like->name, NULL, 0});
}

/* The bound of range r when it is a constant in [lo, hi], else 0. */
static int64_t const_bound(const UOp *r, int64_t lo, int64_t hi) {
  int64_t b = opt_const_bound(r);
  return b >= lo && b <= hi ? b : 0;
}

/* The scalar REDUCEs in value that depend on j, none nesting another and
 * none with a range that depends on j; 0 when there are none, or more
 * than fit out, or such a nesting, or a REDUCE over j itself. */
static size_t inner_reduces(Ctx *ctx, const UOp *value, const UOp *j, const UOp **out) {
  const UOp **nodes = NULL;
  size_t count = uop_toposort(ctx, value, &nodes), n = 0;
  bool ok = count > 0;
  for (size_t i = 0; ok && i < count; i++) {
    const UOp *u = nodes[i];
    for (uint32_t k = 1; ok && u->op == UJ_OP_REDUCE && k < u->nsrc; k++)
      ok = u->src[k] != j; /* a REDUCE over j itself (a max sharing the sum's loop: shadow.c) would lose its range to a lane's constant */
    if (!ok || u->op != UJ_OP_REDUCE || u->dtype.lanes != 1 || !opt_depends(ctx, u, j)) continue;
    for (uint32_t k = 1; ok && k < u->nsrc; k++) ok = !opt_contains(ctx, u->src[k], j);
    for (size_t o = 0; ok && o < n; o++) ok = !opt_contains(ctx, u->src[0], out[o]);
    ok = ok && n < LANES_MAX_INNER;
    if (ok) out[n++] = u;
  }
  free(nodes);
  return ok ? n : 0;
}

/* The nested form: REDUCE over j (W lanes) of a value with REDUCEs over k. */
static const UOp *split_nested(Ctx *ctx, const UOp *root) {
  const UOp *j = root->src[1], *inner[LANES_MAX_INNER], *vec[LANES_MAX_INNER], *v[LANES_WIDTH];
  unsigned w = root->nsrc == 2 ? (unsigned)const_bound(j, 2, LANES_WIDTH) : 0;
  size_t n = w ? inner_reduces(ctx, root->src[0], j, inner) : 0;
  for (size_t i = 0; i < n; i++) {
    const UOp *x[LANES_WIDTH];
    for (unsigned u = 0; u < w; u++)
      if (!(x[u] = in_lane(ctx, inner[i]->src[0], j, uop_const_int(ctx, j->dtype, u), NULL, NULL, 0,
                           u)))
        return NULL;
    if (!(vec[i] = vector_reduce(ctx, inner[i], x, w, inner[i]->src + 1, inner[i]->nsrc - 1)))
      return NULL;
  }
  for (unsigned u = 0; n && u < w; u++)
    if (!(v[u] = in_lane(ctx, root->src[0], j, uop_const_int(ctx, j->dtype, u), inner, vec, n, u)))
      return NULL;
  return n ? lane_fold(ctx, root, v, w) : NULL;
}

/* Whether the reduction may be regrouped: its result is the same in
 * every order (MAX: NaN is one value and MAX(-0, +0) = MAX(+0, -0) = +0,
 * docs/semantics.md; the integer ADD and MUL, wrapping: a ring), or it is
 * a float sum and the target allows reassociation (docs/semantics.md,
 * "Reassociation": the result is then within the evaluator's bound). */
static bool float_sum(const UOp *reduce) {
  Op op = opt_reduce_op(reduce);
  return dt_is_float(reduce->dtype) && (op == UJ_OP_ADD || op == UJ_OP_MULACC);
}

static bool order_free(const UOp *reduce, bool reassociate) {
  if (float_sum(reduce)) return reassociate;
  Op op = opt_reduce_op(reduce);
  return op == UJ_OP_MAX || (!dt_is_float(reduce->dtype) && (op == UJ_OP_ADD || op == UJ_OP_MUL));
}

/* The lanes of the order-free form: a float sum's LANES_WIDTH (its lane
 * j adds the elements 16c + j, in order of c: the order the tensor API
 * used to write into graphs), 32 for the others. */
static unsigned free_width(const UOp *reduce) { return float_sum(reduce) ? LANES_WIDTH : LANES_FREE_WIDTH; }

/* Whether idx is r + (something without r): down the ADDs (and SUBs
 * of something without r: a gathered row, index - clamp(..) * width),
 * each time into the one source that reads r (a loop: an index may be
 * deep). */
static bool unit_stride(Ctx *ctx, const UOp *idx, const UOp *r) {
  while (idx != r) {
    if ((idx->op != UJ_OP_ADD && idx->op != UJ_OP_SUB) || idx->nsrc != 2) return false;
    bool left = opt_contains(ctx, idx->src[0], r), right = opt_contains(ctx, idx->src[1], r);
    if (left == right || (idx->op == UJ_OP_SUB && right)) return false;
    idx = left ? idx->src[0] : idx->src[1];
  }
  return true;
}

/* Whether x loads along r, every such load ungated and from consecutive
 * elements (the lanes then load one vector), and nests no REDUCE that
 * reads r. */
static bool loads_consecutive(Ctx *ctx, const UOp *x, const UOp *r) {
  const UOp **nodes = NULL;
  size_t count = uop_toposort(ctx, x, &nodes), loads = 0;
  bool ok = count > 0;
  for (size_t i = 0; ok && i < count; i++) {
    const UOp *u = nodes[i];
    ok = u->op != UJ_OP_REDUCE || !opt_contains(ctx, u, r); /* softmax's maximum, over a range of its own: a value */
    if (!ok || u->op != UJ_OP_INDEX || !opt_contains(ctx, u, r)) continue;
    ok = u->nsrc == 2 && unit_stride(ctx, u->src[1], r);
    loads++;
  }
  free(nodes);
  return ok && loads > 0;
}

/* Whether a load along r in x is shared by several outputs: it reads no
 * RANGE that another load, or the value, reads beside root's own (a
 * matrix product's row, the same for every column). Such a reduction is
 * a GEMM's or a GEMV's: upcast and tile shape it over its outputs, as
 * register tiles reading each element once (docs/opt.md); lanes would
 * split its dot products instead. A sum of an elementwise value (a row
 * sum, softmax's, a variance) reads each element for one output. */
/* Drops from ranges[0 .. *n) those reduce binds. */
static void unbind(const UOp **ranges, size_t *n, const UOp *reduce) {
  for (uint32_t k = 1; k < reduce->nsrc; k++)
    for (size_t o = 0; o < *n;)
      if (ranges[o] == reduce->src[k]) ranges[o] = ranges[--*n];
      else o++;
}

/* Whether load (along r) misses one of the outputs' RANGEs outer[0..n). */
static bool missing_output(Ctx *ctx, const UOp *load, const UOp *const *outer, size_t n) {
  for (size_t o = 0; o < n; o++)
    if (!opt_contains(ctx, load, outer[o])) return true;
  return false;
}

/* Per node of x, sources first: whether it reads r, whether a load along
 * r is under it, and whether one that serves a single output (reads every
 * output RANGE) is. */
enum { READS_R = 1, ALONG = 2, UNSHARED = 4 };

/* A product whose one factor loads only what the outputs share (a row of
 * a, the vector of a GEMV) and whose other factor loads along r too: a
 * dot product of a matrix product. A shared load only added (a bias
 * under a layernorm's mean or variance) makes none. One pass over x. */
static bool shared_loads(Ctx *ctx, const UOp *root, const UOp *x, const UOp *r) {
  const UOp *outer[LANES_MAX_RANGES];
  Topo t;
  if (!topo_make(ctx, x, &t)) return true; /* out of memory: no lanes */
  size_t nouter = 0;
  for (size_t i = 0; i < t.n && nouter < LANES_MAX_RANGES; i++) /* the RANGEs x reads */
    if (t.nodes[i]->op == UJ_OP_RANGE) outer[nouter++] = t.nodes[i];
  unbind(outer, &nouter, root); /* those root or a REDUCE inside x binds (softmax's maximum) are no output's */
  for (size_t i = 0; i < t.n; i++)
    if (t.nodes[i]->op == UJ_OP_REDUCE) unbind(outer, &nouter, t.nodes[i]);
  unsigned char *flag = calloc(t.n ? t.n : 1, 1);
  bool shared = flag == NULL || t.n == 0;
  for (size_t i = 0; i < t.n && !shared; i++) {
    const UOp *u = t.nodes[i];
    unsigned char f = u == r ? READS_R : 0;
    for (uint32_t k = 0; k < u->nsrc; k++) f |= flag[topo_at(&t, u->src[k])];
    if (u->op == UJ_OP_LOAD && f & READS_R) f |= ALONG | (missing_output(ctx, u, outer, nouter) ? 0 : UNSHARED);
    flag[i] = f;
    if ((u->op != UJ_OP_MUL && u->op != UJ_OP_MULACC) || u->nsrc < 2) continue;
    unsigned char a = flag[topo_at(&t, u->src[0])], b = flag[topo_at(&t, u->src[1])];
    shared = a & ALONG && b & ALONG && (!(a & UNSHARED) || !(b & UNSHARED));
  }
  free(flag), topo_free(&t);
  return shared;
}

/* The order-free form: the last range of root split into free_width lanes. */
static const UOp *split_order_free(Ctx *ctx, const UOp *root, bool reassociate) {
  const UOp *r = root->src[root->nsrc - 1], *ranges[LANES_MAX_RANGES], *x[LANES_FREE_WIDTH],
            *v[LANES_FREE_WIDTH];
  unsigned w = free_width(root);
  int64_t b = const_bound(r, LANES_MIN_EXTENT, INT64_MAX);
  if (!order_free(root, reassociate) || !b || b % w || root->nsrc > 1 + LANES_MAX_RANGES ||
      !loads_consecutive(ctx, root->src[0], r) || (w == LANES_WIDTH && shared_loads(ctx, root, root->src[0], r)))
    return NULL;
  const UOp *bound = uop_const_int(ctx, r->dtype, b / w);
  const UOp *c = uop_new(ctx, UJ_OP_RANGE, r->dtype, &bound, 1, (Arg){r->name, r->ints, r->nints});
  const UOp *base = uop_binary(ctx, UJ_OP_MUL, c, uop_const_int(ctx, r->dtype, w));
  for (unsigned u = 0; u < w; u++) {
    const UOp *at = uop_binary(ctx, UJ_OP_ADD, base, uop_const_int(ctx, r->dtype, u));
    if (!(x[u] = in_lane(ctx, root->src[0], r, at, NULL, NULL, 0, u))) return NULL;
  }
  memcpy(ranges, root->src + 1, (root->nsrc - 2) * sizeof *ranges);
  ranges[root->nsrc - 2] = c;
  const UOp *vec = vector_reduce(ctx, root, x, w, ranges, root->nsrc - 1);
  for (unsigned u = 0; vec && u < w; u++) v[u] = gep(ctx, vec, u);
  return vec ? lane_fold(ctx, root, v, w) : NULL;
}

typedef struct Shadows {
  Topo t;            /* the kernel's nodes */
  unsigned char *of; /* by place in t (find_shadows) */
  bool reassociate;  /* the target's: float sums may be regrouped */
} Shadows;

static bool is_shadow(const Shadows *sh, const UOp *u) {
  uint32_t at = topo_at(&sh->t, u);
  return at != NODEMAP_NONE && sh->of[at];
}

static const UOp *rw_lanes(Rewriter *rw, const UOp *root, const Binds *m) {
  (void)m;
  const Shadows *sh = rw->user;
  if (root->dtype.lanes != 1 || root->nsrc < 2 || is_shadow(sh, root)) return NULL;
  const UOp *nested = split_nested(rw->ctx, root);
  return nested ? nested : split_order_free(rw->ctx, root, sh->reassociate);
}

/* Whether x reads a GEP outside the REDUCEs in it. */
static bool reads_gep(Ctx *ctx, const UOp *x) {
  Topo t;
  unsigned char *own = topo_make(ctx, x, &t) ? calloc(t.n, 1) : NULL; /* by place in t */
  bool found = false;
  if (own) own[t.n - 1] = 1; /* x */
  for (size_t i = t.n; own && i-- > 0 && !found;) { /* users first */
    const UOp *u = t.nodes[i];
    if (!own[i]) continue;
    found = u->op == UJ_OP_GEP;
    for (uint32_t k = 0; u->op != UJ_OP_REDUCE && k < u->nsrc; k++) own[topo_at(&t, u->src[k])] = 1;
  }
  free(own), topo_free(&t);
  return found;
}

/* op(GEP(V, u), s) -> GEP(op(V, VECTORIZE(s, .., s)), u), s reading no
 * GEP (a fold's running value reads the lanes before)
 * (a unary op likewise; both operands GEPs of lane u: op(V, W)): a lane
 * fold's terms computed as one vector op for all lanes (online softmax's
 * exp of a chunk of scores, docs/opt.md) rather than once per lane. */
static const UOp *rw_lift_gep(Rewriter *rw, const UOp *root, const Binds *m) {
  (void)m;
  Ctx *ctx = rw->ctx;
  if (root->dtype.lanes != 1 || !dt_is_float(root->dtype) || root->nsrc > 2) return NULL;
  const UOp *v = NULL;
  int64_t lane = -1;
  for (uint32_t k = 0; k < root->nsrc && !v; k++)
    if (root->src[k]->op == UJ_OP_GEP) v = root->src[k]->src[0], lane = root->src[k]->ints[0];
  if (!v || v->dtype.lanes < 2) return NULL;
  const UOp *src[2];
  for (uint32_t k = 0; k < root->nsrc; k++) {
    const UOp *x = root->src[k];
    if (x->op == UJ_OP_GEP && x->ints[0] == lane && x->src[0]->dtype.lanes == v->dtype.lanes) src[k] = x->src[0];
    else if (x->dtype.lanes == 1 && !reads_gep(ctx, x)) {
      const UOp *same[LANES_MAX_VECTOR];
      for (unsigned i = 0; i < v->dtype.lanes; i++) same[i] = x;
      src[k] = uop_new(ctx, UJ_OP_VECTORIZE, uj_dtype_vec((uj_scalar)x->dtype.scalar, v->dtype.lanes), same, v->dtype.lanes, arg_none());
    } else return NULL;
  }
  DType d = uj_dtype_vec((uj_scalar)root->dtype.scalar, v->dtype.lanes);
  const UOp *vec = uop_new(ctx, (Op)root->op, d, src, root->nsrc, (Arg){root->name, root->ints, root->nints});
  return vec ? gep(ctx, vec, (unsigned)lane) : NULL;
}

static const Rule lane_rules[] = {
    {"(REDUCE ...)",
     rw_lanes}, // REDUCE over W lanes of REDUCEs over k -> fold of one W-lane REDUCE over k
    {"(EXP2|LOG2|SIN|SQRT|RECIP|NEG|ADD|SUB|MUL|FDIV|MAX ...)",
     rw_lift_gep}, // op(GEP(V, u), s) -> GEP(op(V, s in every lane), u)
};

/* In sh->of, by place in the kernel: a REDUCE another REDUCE's value
 * reads (not inside a third) that binds one of its RANGEs again
 * (shadow.c), and that reader: both keep their one loop, run as one
 * (online softmax's maximum so far and its sums). */
static bool find_shadows(Ctx *ctx, const UOp *kernel, Shadows *sh) {
  sh->of = topo_make(ctx, kernel, &sh->t) ? calloc(sh->t.n, 1) : NULL;
  for (size_t a = 0; sh->of && a < sh->t.n; a++) {
    const UOp *r = sh->t.nodes[a], **read = NULL;
    size_t m = r->op == UJ_OP_REDUCE && r->nsrc > 1 ? opt_reduces_read(ctx, r->src[0], false, &read) : 0;
    for (size_t x = 0; x < m; x++) {
      bool same = false;
      for (uint32_t i = 1; i < read[x]->nsrc && !same; i++)
        for (uint32_t k = 1; k < r->nsrc && !same; k++) same = read[x]->src[i] == r->src[k];
      if (same) sh->of[topo_at(&sh->t, read[x])] = sh->of[a] = 1;
    }
    free(read);
  }
  if (!sh->of) ctx_set_error(ctx, "lanes: out of memory");
  return sh->of != NULL;
}

const UOp *opt_lanes(Ctx *ctx, const UOp *kernel, bool reassociate) {
  Shadows sh = {.reassociate = reassociate};
  RuleSet *rs = find_shadows(ctx, kernel, &sh) ? ruleset_new(ctx, lane_rules, sizeof lane_rules / sizeof *lane_rules) : NULL;
  const UOp *out = rs ? graph_rewrite(ctx, kernel, rs, &sh) : NULL;
  ruleset_free(rs);
  free(sh.of);
  topo_free(&sh.t);
  return out;
}
