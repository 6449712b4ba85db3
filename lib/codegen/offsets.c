/* offsets.c — the rule that writes an INDEX's index as ADD(e, k), k its
 * constant (offsets.h). */
#include "codegen/offsets.h"
#include "rewrite/rewrite.h"
#include "symbolic/linear.h"

/* Whether the index is already e + k, k a nonzero CONST. */
static bool is_split(const UOp *i) {
  return i->op == UJ_OP_ADD && i->src[1]->op == UJ_OP_CONST && uop_const_value(i->src[1]) != 0;
}

/* INDEX(p, e + k) -> INDEX(p, ADD(e, k)), e and k from the linear form */
static const UOp *rw_split(Rewriter *rw, const UOp *root, const Binds *m) {
  Linear lin;
  if (!dt_is_int(m->i->dtype) || m->i->dtype.lanes > 1 || is_split(m->i) || !linear_decompose(rw->ctx, m->i, &lin) || !lin.k || !lin.nterms)
    return NULL;
  int64_t k = lin.k, lo, hi;
  lin.k = 0;
  /* narrower than a pointer, the renderer extends e before it adds k:
   * equal to the extended sum only where neither e nor e + k wraps */
  if (dt_bits(m->i->dtype) < 64 && !(linear_bounds(&lin, &lo, &hi) && linear_fits(m->i->dtype, lo, hi) &&
                                     linear_fits(m->i->dtype, lo + k, hi + k)))
    return NULL;
  const UOp *e = linear_build(rw->ctx, &lin);
  const UOp *c = uop_const_int(rw->ctx, m->i->dtype, k);
  const UOp *i = e && c ? uop_binary(rw->ctx, UJ_OP_ADD, e, c) : NULL;
  if (!i) return NULL;
  const UOp *src[3] = {root->src[0], i, root->nsrc == 3 ? root->src[2] : NULL};
  return uop_replace_src(rw->ctx, root, src, root->nsrc);
}

static const Rule offset_rules[] = {
  {"(INDEX _ i ...)", rw_split}, // INDEX(p, e + k) -> INDEX(p, ADD(e, k))
};

const UOp *offsets_split(Ctx *ctx, const UOp *kernel) {
  RuleSet *rs = ruleset_new(ctx, offset_rules, sizeof offset_rules / sizeof *offset_rules);
  const UOp *out = rs ? graph_rewrite(ctx, kernel, rs, NULL) : NULL;
  ruleset_free(rs);
  return out;
}
