/* shadow.c — a sum that reads a maximum over a RANGE of its own length
 * reduces over that maximum's RANGE (it shadows it: docs/semantics.md,
 * "REDUCE"), so both run in one loop: flash attention's online softmax
 * (codegen/online.h, docs/opt.md "Online softmax").
 *
 *   REDUCE(ADD, x / b, r..)       -> REDUCE(ADD, x, r..) / b         b free of r..
 *   REDUCE(ADD, x / b * y, r..)   -> REDUCE(ADD, x * y, r..) / b
 *   REDUCE(ADD, v(j, M), j)       -> REDUCE(ADD, v(j', M), j')
 *        M = REDUCE(MAX, s(j'), j'), free of j, j' as long as j
 *
 * The first takes softmax's division out of the matmul after it (one
 * division per output, and the sum of exps no longer inside the loop);
 * the second makes every sum reading M run over M's RANGE: interned, the
 * scores s(j') they compute are M's own, and the renderer runs M and the
 * sums in one loop, M as the maximum so far. */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "rewrite/rewrite.h"

enum { SHADOW_MAX_SOURCES = 17 }; /* a REDUCE over up to 16 RANGEs */

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
 * (not inside another REDUCE); NULL when none. */
static const UOp *max_read(Ctx *ctx, const UOp *x, const UOp *j) {
  const UOp **nodes = NULL, *found = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  unsigned char *own = n ? calloc(ctx->nnodes, 1) : NULL;
  if (own) own[x->id] = 1;
  for (size_t i = n; own && i-- > 0 && !found;) { /* users first */
    const UOp *u = nodes[i];
    if (!own[u->id]) continue;
    if (u->op == UJ_OP_REDUCE) {
      bool max = u->nsrc == 2 && !strcmp(u->name, "MAX") && u->src[1] != j && u->src[1]->src[0] == j->src[0];
      if (max && !opt_contains(ctx, u, j)) found = u;
      continue;
    }
    for (uint32_t k = 0; k < u->nsrc; k++) own[u->src[k]->id] = 1;
  }
  free(own), free(nodes);
  return found;
}

/* The REDUCEs x reads outside other REDUCEs (with_nested: and inside
 * them), each once, in *out (malloc'd); their count, 0 when out of memory. */
static size_t reduces_read(Ctx *ctx, const UOp *x, bool with_nested, const UOp ***out) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes), m = 0;
  unsigned char *own = n ? calloc(ctx->nnodes, 1) : NULL;
  *out = own ? malloc(n * sizeof **out) : NULL;
  if (own) own[x->id] = 1;
  for (size_t i = n; *out && i-- > 0;) { /* users first */
    const UOp *u = nodes[i];
    if (!own[u->id]) continue;
    if (u->op == UJ_OP_REDUCE && u->nsrc > 1) (*out)[m++] = u;
    for (uint32_t k = 0; (with_nested || u->op != UJ_OP_REDUCE) && k < u->nsrc; k++) own[u->src[k]->id] = 1;
  }
  free(own), free(nodes);
  return m;
}

/* v with each REDUCE it reads over one RANGE that is, up to the name of
 * that RANGE, a REDUCE of max's value, replaced by that one: the scores a
 * sum computes are then the max's own nodes (each tensor REDUCE got RANGEs
 * of its own in rangeify). */
static const UOp *same_as_max(Ctx *ctx, const UOp *v, const UOp *max) {
  const UOp **mine = NULL, **theirs = NULL;
  size_t n = reduces_read(ctx, v, false, &mine), m = reduces_read(ctx, max->src[0], true, &theirs);
  for (size_t i = 0; v && i < n; i++)
    for (size_t k = 0; v && k < m; k++) {
      const UOp *x = mine[i], *y = theirs[k];
      if (x == y || x == max || x->nsrc != 2 || y->nsrc != 2 || x->src[1]->src[0] != y->src[1]->src[0]) continue;
      const UOp *renamed = opt_substitute(ctx, x, &x->src[1], &y->src[1], 1);
      if (renamed == y) v = opt_substitute(ctx, v, &x, &y, 1);
    }
  free(mine), free(theirs);
  return v;
}

/* REDUCE(ADD, v(j, M), j) -> REDUCE(ADD, v(j', M), j'). */
static const UOp *rw_shadow(Rewriter *rw, const UOp *root, const Binds *m) {
  (void)m;
  if (!is_sum(root) || root->nsrc != 2 || !dt_is_float(root->dtype)) return NULL;
  const UOp *j = root->src[1], *max = max_read(rw->ctx, root->src[0], j);
  if (!max) return NULL;
  const UOp *to = max->src[1], *v = opt_substitute(rw->ctx, root->src[0], &j, &to, 1);
  v = v ? same_as_max(rw->ctx, v, max) : NULL;
  const UOp *src[2] = {v, to};
  return v ? uop_new(rw->ctx, UJ_OP_REDUCE, root->dtype, src, 2, (Arg){root->name, NULL, 0}) : NULL;
}

static const Rule shadow_rules[] = {
    {"(REDUCE ...)", rw_divisor_out}, // REDUCE(ADD, a / b * y) -> REDUCE(ADD, a * y) / b, b free of its RANGEs
    {"(REDUCE ...)", rw_shadow},      // a sum reading a max over a RANGE of its length -> over that RANGE
};

const UOp *opt_shadow(Ctx *ctx, const UOp *kernel) {
  RuleSet *rs = ruleset_new(ctx, shadow_rules, sizeof shadow_rules / sizeof *shadow_rules);
  const UOp *out = rs ? graph_rewrite(ctx, kernel, rs, NULL) : NULL;
  ruleset_free(rs);
  return out;
}
