/* shadow.c — a sum that reads a maximum over a RANGE of its own length
 * reduces over that maximum's RANGE (it shadows it: docs/semantics.md,
 * "REDUCE"), so both run in one loop: flash attention's online softmax
 * (codegen/online.h, docs/opt.md "Online softmax").
 *
 *   REDUCE(ADD, x / b, r..)       -> REDUCE(ADD, x, r..) / b         b free of r..
 *   REDUCE(ADD, x / b * y, r..)   -> REDUCE(ADD, x * y, r..) / b
 *   REDUCE(ADD, v(j, M), j)       -> REDUCE(ADD, v(j', M), j')
 *        M = REDUCE(MAX, s(j'), j'), free of j, j' as long as j
 *   REDUCE(ADD, REDUCE(ADD, v(i, l, M), i), l)   i < n, l < W, j' as long as n·W
 *                                 -> REDUCE(ADD, v(j' // W, j' % W, M), j')
 *
 * The last is a float sum the tensor API ordered in W lanes (docs/tensor.md,
 * "Reductions": softmax's sum of exps) taken as one sum, in another order:
 * so are the sums of online softmax, whose rescaling rounds differently
 * anyway (tests compare them with a tolerance).
 *
 * The first takes softmax's division out of the matmul after it (one
 * division per output, and the sum of exps no longer inside the loop);
 * the second makes every sum reading M run over M's RANGE: interned, the
 * scores s(j') they compute are M's own, and the renderer runs M and the
 * sums in one loop, M as the maximum so far. Before the rules, REDUCEs
 * equal up to the names of the RANGEs they bind become one (unify_reduces);
 * after them, a max and its sums run in chunks of 16 (chunk). */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "rewrite/rewrite.h"
#include "symbolic/symbolic.h"
#include "uop/nodemap.h"

enum { SHADOW_MAX_SOURCES = 17 }; /* a REDUCE over up to 16 RANGEs */
enum { SHADOW_CHUNK = 16 }; /* the j of one chunk of online softmax: one vector of scores */
static const int64_t SHADOW_CANON_AXIS = (int64_t)1 << 40; /* above any kernel's axes */

static bool free_of_ranges(Ctx *ctx, const UOp *x, const UOp *reduce) {
  for (uint32_t k = 1; k < reduce->nsrc; k++)
    if (opt_contains(ctx, x, reduce->src[k])) return false;
  return true;
}

/* A sum: ADD, or MULACC (a sum of products, fused: docs/semantics.md). */
static bool is_sum(const UOp *u) {
  return u->op == UJ_OP_REDUCE && u->nsrc > 1 && (!strcmp(u->name, "ADD") || !strcmp(u->name, "MULACC"));
}

/* REDUCE(ADD, a / b [* y]) -> REDUCE(ADD, a [* y]) / b. */
static const UOp *rw_divisor_out(Rewriter *rw, const UOp *root, const Binds *m) {
  (void)m;
  if (!is_sum(root) || !dt_is_float(root->dtype)) return NULL;
  const UOp *x = root->src[0], *div = NULL, *other = NULL;
  if (x->op == UJ_OP_FDIV && !strcmp(root->name, "ADD")) div = x;
  else if (x->op == UJ_OP_MUL && x->src[0]->op == UJ_OP_FDIV) div = x->src[0], other = x->src[1];
  else if (x->op == UJ_OP_MUL && x->src[1]->op == UJ_OP_FDIV) div = x->src[1], other = x->src[0];
  if (!div || !free_of_ranges(rw->ctx, div->src[1], root)) return NULL;
  const UOp *a = other ? uop_binary(rw->ctx, UJ_OP_MUL, div->src[0], other) : div->src[0];
  const UOp *src[SHADOW_MAX_SOURCES];
  if (!a || root->nsrc > SHADOW_MAX_SOURCES) return NULL;
  memcpy(src, root->src, root->nsrc * sizeof *src);
  src[0] = a;
  const UOp *sum = uop_new(rw->ctx, UJ_OP_REDUCE, root->dtype, src, root->nsrc, (Arg){root->name, NULL, 0});
  return sum ? uop_binary(rw->ctx, UJ_OP_FDIV, sum, div->src[1]) : NULL;
}

/* The MAX REDUCE over one RANGE as long as j, free of j, that x reads
 * (not inside another REDUCE); any length when j is NULL; NULL when none. */
static const UOp *max_read(Ctx *ctx, const UOp *x, const UOp *j) {
  const UOp **read = NULL, *found = NULL;
  size_t n = opt_reduces_read(ctx, x, false, &read);
  for (size_t i = 0; i < n && !found; i++) {
    const UOp *u = read[i];
    bool max = u->nsrc == 2 && !strcmp(u->name, "MAX") && (!j || (u->src[1] != j && u->src[1]->src[0] == j->src[0]));
    if (max && (!j || !opt_contains(ctx, u, j))) found = u;
  }
  free(read);
  return found;
}

/* ---- alpha equivalence ---- */

/* Canonical forms of REDUCEs over one RANGE: x with the RANGE it binds
 * renamed by its height (axis SHADOW_CANON_AXIS + h; h = 1 + the most of
 * the REDUCEs over one RANGE its value reads, 1 for none), those REDUCEs
 * in their own forms. Two REDUCEs that differ only in the names of the
 * RANGEs they bind (alpha equivalent) have the same form, simplified; the
 * binders on any way down have decreasing heights, so no RANGE is taken
 * for another. A form depends on x alone: kept by node for one opt_shadow,
 * each made once, nested ones first (sources have smaller ids), with no
 * recursion. (Names by depth, as before, made a form depend on where x
 * sits: each nesting computed again, 2^n for n nested REDUCEs.) */
typedef struct Canon {
  Ctx *ctx;
  NodeMap num;
  const UOp **form;   /* by number */
  const UOp **simple; /* by number: the form simplified, NULL until asked */
  size_t cap;
} Canon;

static const UOp *form_of(const Canon *c, const UOp *x) {
  uint32_t k = nodemap_find(&c->num, x);
  return k == NODEMAP_NONE ? NULL : c->form[k];
}

static uint32_t canon_add(Canon *c, const UOp *x) {
  uint32_t k = nodemap_add(&c->num, x);
  if (k == NODEMAP_NONE || k < c->cap) return k;
  size_t cap = c->cap ? 2 * c->cap : 64;
  const UOp **form = realloc(c->form, cap * sizeof *form);
  if (form) c->form = form;
  const UOp **simple = form ? realloc(c->simple, cap * sizeof *simple) : NULL;
  if (!simple) return NODEMAP_NONE;
  c->simple = simple;
  memset(c->form + c->cap, 0, (cap - c->cap) * sizeof *c->form), memset(c->simple + c->cap, 0, (cap - c->cap) * sizeof *c->simple);
  c->cap = cap;
  return k;
}

static void canon_free(Canon *c) {
  nodemap_free(&c->num);
  free(c->form), free(c->simple);
}

/* x's form, the forms of the REDUCEs its value reads made before. */
static const UOp *form_one(Canon *c, const UOp *x) {
  Ctx *ctx = c->ctx;
  const UOp **nested = NULL, *r = x->src[1];
  size_t n = opt_reduces_read(ctx, x->src[0], false, &nested), m = 0;
  const UOp **to = n ? malloc(n * sizeof *to) : NULL, *v = x->src[0];
  int64_t height = 1;
  for (size_t i = 0; i < n && to; i++) {
    if (nested[i]->nsrc != 2) continue;
    const UOp *f = form_of(c, nested[i]);
    if (!f) return free(nested), free(to), NULL;
    if (f->src[1]->ints[0] - SHADOW_CANON_AXIS >= height) height = f->src[1]->ints[0] - SHADOW_CANON_AXIS + 1;
    nested[m] = nested[i], to[m++] = f;
  }
  if (n && !to) return free(nested), NULL;
  v = m ? opt_substitute(ctx, v, nested, to, m) : v;
  free(nested), free(to);
  int64_t axis = SHADOW_CANON_AXIS + height;
  const UOp *renamed = uop_new(ctx, UJ_OP_RANGE, r->dtype, r->src, 1, (Arg){r->name, &axis, 1});
  v = v && renamed ? opt_substitute(ctx, v, &r, &renamed, 1) : NULL;
  const UOp *src[2] = {v, renamed};
  return v ? uop_new(ctx, UJ_OP_REDUCE, x->dtype, src, 2, (Arg){x->name, NULL, 0}) : NULL;
}

/* x's form, simplified (x a REDUCE over one RANGE); NULL when out of memory. */
static const UOp *canon(Canon *c, const UOp *x) {
  uint32_t k = canon_add(c, x);
  if (k == NODEMAP_NONE) return NULL;
  if (c->simple[k]) return c->simple[k];
  const UOp **inside = NULL;
  size_t n = opt_reduces_read(c->ctx, x->src[0], true, &inside);
  const UOp **all = inside ? realloc(inside, (n + 1) * sizeof *all) : NULL;
  if (!all) return free(inside), NULL;
  inside = all, inside[n++] = x;
  qsort(inside, n, sizeof *inside, uop_cmp_id); /* nested first */
  bool ok = true;
  for (size_t i = 0; ok && i < n; i++) {
    if (inside[i]->nsrc != 2 || form_of(c, inside[i])) continue;
    const UOp *f = form_one(c, inside[i]);
    uint32_t at = f ? canon_add(c, inside[i]) : NODEMAP_NONE;
    ok = at != NODEMAP_NONE;
    if (ok) c->form[at] = f;
  }
  free(inside);
  const UOp *simple = ok ? symbolic_simplify(c->ctx, form_of(c, x)) : NULL;
  if (simple) c->simple[nodemap_find(&c->num, x)] = simple;
  return simple;
}

static bool alpha_equal(Canon *c, const UOp *x, const UOp *y) {
  if (x == y) return true;
  if (x->name != y->name || x->dtype.lanes != y->dtype.lanes || x->nsrc != 2 || y->nsrc != 2 ||
      x->src[1]->src[0] != y->src[1]->src[0])
    return false;
  const UOp *cx = canon(c, x);
  return cx && cx == canon(c, y);
}

/* v with each REDUCE it reads over one RANGE that is, up to the name of
 * that RANGE, a REDUCE of max's value, replaced by that one: the scores a
 * sum computes are then the max's own nodes (each tensor REDUCE got RANGEs
 * of its own in rangeify). */
static const UOp *same_as_max(Canon *c, const UOp *v, const UOp *max) {
  Ctx *ctx = c->ctx;
  const UOp **mine = NULL, **theirs = NULL;
  size_t n = opt_reduces_read(ctx, v, false, &mine), m = opt_reduces_read(ctx, max->src[0], true, &theirs);
  for (size_t i = 0; v && i < n; i++)
    for (size_t k = 0; v && k < m; k++) {
      const UOp *x = mine[i], *y = theirs[k];
      if (x != y && x != max && alpha_equal(c, x, y)) v = opt_substitute(ctx, v, &x, &y, 1);
    }
  free(mine), free(theirs);
  return v;
}

/* The sum of v over to, with each RANGE from[k] its value to // div[k] % mod[k]
 * (simplified), its nested REDUCEs those of max's value where equal. */
static const UOp *sum_over(Canon *c, const UOp *root, const UOp *v, const UOp *const *from, const int64_t *div,
                           const int64_t *mod, size_t n, const UOp *max) {
  Ctx *ctx = c->ctx;
  const UOp *to = max->src[1], *at[2] = {NULL, NULL};
  for (size_t k = 0; k < n; k++) {
    at[k] = to;
    if (div[k] > 1) at[k] = uop_binary(ctx, UJ_OP_IDIV, at[k], uop_const_int(ctx, to->dtype, div[k]));
    if (at[k] && mod[k] > 0) at[k] = uop_binary(ctx, UJ_OP_MOD, at[k], uop_const_int(ctx, to->dtype, mod[k]));
    if (!at[k]) return NULL;
  }
  v = opt_substitute(ctx, v, from, at, n);
  v = v && n > 1 ? symbolic_simplify(ctx, v) : v;
  v = v ? same_as_max(c, v, max) : NULL;
  const UOp *src[2] = {v, to};
  return v ? uop_new(ctx, UJ_OP_REDUCE, root->dtype, src, 2, (Arg){root->name, NULL, 0}) : NULL;
}

/* REDUCE(ADD, v(j, M), j) -> REDUCE(ADD, v(j', M), j'); a sum in W lanes
 * of sums over i likewise, i = j' // W, l = j' % W. */
static const UOp *rw_shadow(Rewriter *rw, const UOp *root, const Binds *m) {
  (void)m;
  if (!is_sum(root) || root->nsrc != 2 || !dt_is_float(root->dtype)) return NULL;
  const UOp *j = root->src[1], *inner = root->src[0];
  if (inner->op == UJ_OP_REDUCE && !strcmp(root->name, "ADD") && !strcmp(inner->name, "ADD") && inner->nsrc == 2) {
    const UOp *i = inner->src[1], *max = max_read(rw->ctx, inner->src[0], NULL);
    int64_t n = opt_const_bound(i), w = opt_const_bound(j);
    if (!max || n <= 0 || w <= 0 || opt_const_bound(max->src[1]) != n * w || opt_contains(rw->ctx, max, i) || opt_contains(rw->ctx, max, j))
      return NULL;
    const UOp *from[2] = {i, j};
    return sum_over(rw->user, root, inner->src[0], from, (int64_t[]){w, 1}, (int64_t[]){0, w}, 2, max);
  }
  const UOp *max = max_read(rw->ctx, inner, j);
  return max ? sum_over(rw->user, root, inner, &j, (int64_t[]){1}, (int64_t[]){0}, 1, max) : NULL;
}

static const Rule shadow_rules[] = {
    {"(REDUCE ...)", rw_divisor_out}, // REDUCE(ADD, a / b * y) -> REDUCE(ADD, a * y) / b, b free of its RANGEs
    {"(REDUCE ...)", rw_shadow},      // a sum reading a max over a RANGE of its length -> over that RANGE
};

/* kernel with each REDUCE over one RANGE that equals an earlier one up to
 * the name of that RANGE replaced by the earlier one: rangeify gives every
 * use of a tensor REDUCE RANGEs of its own, so softmax's max read by the
 * sum of exps and by the matmul after it is two REDUCEs until here. */
static const UOp *unify_reduces(Canon *c, const UOp *kernel) {
  Ctx *ctx = c->ctx;
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes), nfrom = 0, nkept = 0;
  const UOp **from = n ? malloc(2 * n * sizeof *from) : NULL, **to = from ? from + n : NULL;
  const UOp **kept = n ? malloc(n * sizeof *kept) : NULL;
  NodeMap by_form = nodemap_make(ctx); /* a kept REDUCE's form: its place in kept */
  bool ok = from && kept;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *x = nodes[i];
    if (x->op != UJ_OP_REDUCE || x->nsrc != 2) continue;
    const UOp *now = nfrom ? opt_substitute(ctx, x, from, to, nfrom) : x, *same = NULL;
    const UOp *form = now ? canon(c, now) : NULL;
    ok = form != NULL;
    uint32_t at = ok ? nodemap_find(&by_form, form) : NODEMAP_NONE;
    if (at != NODEMAP_NONE) same = kept[at];
    if (same || now != x) from[nfrom] = x, to[nfrom++] = same ? same : now;
    if (ok && !same) ok = nodemap_add(&by_form, form) == nkept, kept[nkept++] = now;
  }
  const UOp *out = ok && nfrom ? opt_substitute(ctx, kernel, from, to, nfrom) : ok ? kernel : NULL;
  free(nodes), free(from), free(kept), nodemap_free(&by_form);
  if (!ok) ctx_set_error(ctx, "shadow: out of memory");
  return out;
}

/* The REDUCEs over exactly (j) other than max whose value reads max, in
 * out (room for n); their count. */
static size_t readers_of(Ctx *ctx, const UOp *const *nodes, size_t n, const UOp *max, const UOp **out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const UOp *x = nodes[i];
    if (x != max && x->op == UJ_OP_REDUCE && x->nsrc == 2 && x->src[1] == max->src[1] && opt_contains(ctx, x->src[0], max))
      out[m++] = x;
  }
  return m;
}

/* Online softmax in chunks of SHADOW_CHUNK: each max over j (n steps, a
 * multiple of the chunk) that sums read, and those sums, reduce over
 * j = jo·C + ji as REDUCE(REDUCE(x, ji), jo). The lanes pass then computes
 * a chunk's scores as one vector (opt/lanes.c, nested form) and the
 * maximum so far grows once a chunk. */
static const UOp *chunk(Ctx *ctx, const UOp *kernel) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes), nfrom = 0;
  const UOp **from = n ? malloc(2 * n * sizeof *from) : NULL, **to = from ? from + n : NULL;
  const UOp **readers = n ? malloc(n * sizeof *readers) : NULL;
  int64_t axis = n ? opt_next_axis(ctx, kernel) : 0;
  bool ok = from && readers;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *max = nodes[i];
    if (max->op != UJ_OP_REDUCE || max->nsrc != 2 || strcmp(max->name, "MAX") || max->dtype.lanes != 1) continue;
    const UOp *j = max->src[1];
    int64_t bound = opt_const_bound(j);
    size_t nr = bound >= 2 * SHADOW_CHUNK && bound % SHADOW_CHUNK == 0 ? readers_of(ctx, nodes, n, max, readers) : 0;
    if (nr == 0) continue;
    const UOp *cb = uop_const_int(ctx, j->dtype, bound / SHADOW_CHUNK), *cc = uop_const_int(ctx, j->dtype, SHADOW_CHUNK);
    int64_t ao = axis++, ai = axis++;
    const UOp *jo = uop_new(ctx, UJ_OP_RANGE, j->dtype, &cb, 1, (Arg){j->name, &ao, 1});
    const UOp *ji = uop_new(ctx, UJ_OP_RANGE, j->dtype, &cc, 1, (Arg){j->name, &ai, 1});
    const UOp *at = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, jo, cc), ji);
    const UOp *x = opt_substitute(ctx, max->src[0], &j, &at, 1);
    const UOp *inner = x ? uop_new(ctx, UJ_OP_REDUCE, max->dtype, (const UOp *[]){x, ji}, 2, (Arg){max->name, NULL, 0}) : NULL;
    const UOp *chunked = inner ? uop_new(ctx, UJ_OP_REDUCE, max->dtype, (const UOp *[]){inner, jo}, 2, (Arg){max->name, NULL, 0}) : NULL;
    ok = chunked != NULL;
    if (ok) from[nfrom] = max, to[nfrom++] = chunked;
    for (size_t r = 0; ok && r < nr; r++) {
      const UOp *rd = readers[r], *f[2] = {max, j}, *t[2] = {chunked, at};
      const UOp *v = opt_substitute(ctx, rd->src[0], f, t, 2);
      const UOp *in = v ? uop_new(ctx, UJ_OP_REDUCE, rd->dtype, (const UOp *[]){v, ji}, 2, (Arg){rd->name, NULL, 0}) : NULL;
      const char *add = ctx_intern_string(ctx, "ADD", 3);
      const UOp *out = in ? uop_new(ctx, UJ_OP_REDUCE, rd->dtype, (const UOp *[]){in, jo}, 2, (Arg){add, NULL, 0}) : NULL;
      ok = out != NULL;
      if (ok) from[nfrom] = rd, to[nfrom++] = out;
    }
  }
  const UOp *result = ok && nfrom ? opt_substitute(ctx, kernel, from, to, nfrom) : ok ? kernel : NULL;
  free(nodes), free(from), free(readers);
  if (!ok) ctx_set_error(ctx, "shadow: out of memory");
  return result;
}

/* Whether the kernel's REDUCEs are all free of its innermost output loop
 * (a softmax or a layernorm in one kernel: hoist.c stores them once a row,
 * a max before the sums that read it, each in lanes; online softmax is for
 * a REDUCE over the outputs that reads them, attention's matmul). */
static bool rows_only(Ctx *ctx, const UOp *kernel) {
  const UOp *end = opt_innermost_end(kernel), **reduces = NULL;
  size_t n = end ? opt_reduces_read(ctx, end->src[1]->src[1], false, &reduces) : 0;
  bool free_of_j = n > 0;
  for (size_t i = 0; i < n && free_of_j; i++) free_of_j = !opt_depends(ctx, reduces[i], end->src[0]);
  free(reduces);
  return free_of_j;
}

const UOp *opt_shadow(Ctx *ctx, const UOp *kernel) {
  Canon canons = {.ctx = ctx, .num = nodemap_make(ctx)};
  RuleSet *rs = ruleset_new(ctx, shadow_rules, sizeof shadow_rules / sizeof *shadow_rules);
  kernel = rs ? unify_reduces(&canons, kernel) : NULL;
  const UOp *out = NULL;
  if (kernel && rows_only(ctx, kernel)) out = kernel;
  else if (kernel && (out = graph_rewrite(ctx, kernel, rs, &canons))) out = chunk(ctx, out);
  ruleset_free(rs);
  canon_free(&canons);
  return out;
}
