/* transcendental.c — the rules that lower EXP2, LOG2 and SIN, and
 * transcendental_lower.
 *
 * In: a graph and a mask of float scalars. Out: the graph with every EXP2,
 * LOG2 and SIN of a masked scalar dtype replaced by the polynomial code of
 * tr_exp_log.c and tr_sin.c; float64 and float32 compute in their own
 * format, float16 and bfloat16 in float32 between two CASTs (as the
 * evaluator does). Nothing else changes. Vectors are lowered lane-wise in
 * vector ops, their constants VECTORIZEd. */
#include "codegen/transcendental.h"
#include "codegen/tr_build.h"
#include "rewrite/rewrite.h"

typedef struct Lowering {
  unsigned mask;
  bool failed; /* out of memory building a replacement */
} Lowering;

typedef const UOp *(*Algorithm)(Tr *t, const UOp *x);

/* root = f(x) -> the algorithm's code for x, in float32 for the small floats */
static const UOp *lower(Rewriter *rw, const UOp *root, Algorithm algorithm) {
  Lowering *job = rw->user;
  uj_scalar s = (uj_scalar)root->dtype.scalar;
  if (!(job->mask & (1u << s))) return NULL;
  Tr t;
  tr_init(&t, rw->ctx, s == UJ_FLOAT64 ? UJ_FLOAT64 : UJ_FLOAT32, root->dtype.lanes);
  const UOp *x = root->src[0];
  if (s != t.f.scalar) x = tr_cast(&t, x, t.f);
  const UOp *y = algorithm(&t, x);
  if (s != t.f.scalar) y = tr_cast(&t, y, root->dtype);
  if (!y) job->failed = true;
  return y;
}

static const UOp *rw_exp2(Rewriter *rw, const UOp *root, const Binds *m) {
  return lower(rw, root, tr_exp2);
}

static const UOp *rw_log2(Rewriter *rw, const UOp *root, const Binds *m) {
  return lower(rw, root, tr_log2);
}

static const UOp *rw_sin(Rewriter *rw, const UOp *root, const Binds *m) {
  return lower(rw, root, tr_sin);
}

static const Rule transcendental_rules[] = {
  {"(EXP2:float _)", rw_exp2}, // exp2(x) -> 2^f·2^n, n = rint(x), f = x - n
  {"(LOG2:float _)", rw_log2}, // log2(x) -> e + log2(m), x = 2^e·m
  {"(SIN:float _)", rw_sin},   // sin(x) -> ±sin(r) or ±cos(r), x = q·pi/2 + r
};


const UOp *transcendental_lower(Ctx *ctx, const UOp *root, unsigned scalar_mask) {
  enum { N = sizeof transcendental_rules / sizeof *transcendental_rules };
  RuleSet *rs = ruleset_new(ctx, transcendental_rules, N);
  if (!rs) return NULL;
  Lowering job = {scalar_mask, false};
  const UOp *out = graph_rewrite(ctx, root, rs, &job);
  ruleset_free(rs);
  if (out && job.failed) {
    ctx_set_error(ctx, "transcendental_lower: out of memory");
    return NULL;
  }
  return out;
}
