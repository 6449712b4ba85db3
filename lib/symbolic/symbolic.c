/* symbolic.c — the simplification rules and uj_simplify.
 *
 * In: a checked graph. Out: an equal graph (equal for every input, by the
 * semantics of docs/semantics.md) that is never larger, with constants
 * folded, identities applied, commutative sources in canonical order,
 * integer sums in canonical linear form, and comparisons, divisions and
 * remainders folded from bounds. One rule a line; its algebra beside it.
 * docs/symbolic.md lists the rules with their conditions. */
#include "rewrite/rewrite.h"
#include "symbolic/divmod.h"
#include "symbolic/linear.h"
#include "symbolic/symbolic.h"
#include "uop/alu.h"
#include "uop/spec.h"

#define UNARY "RECIP|NEG|EXP2|LOG2|SIN|SQRT|CAST|BITCAST"
#define BINARY "ADD|SUB|MUL|IDIV|FDIV|MOD|MAX|CMPLT|CMPNE|CMPEQ|AND|OR|XOR|SHL|SHR"

static const UOp *rw_x(Rewriter *rw, const UOp *root, const Binds *m) { return m->x; }
static const UOp *rw_c(Rewriter *rw, const UOp *root, const Binds *m) { return m->c; }
static const UOp *rw_z(Rewriter *rw, const UOp *root, const Binds *m) { return m->z; }
static const UOp *rw_gep_lane(Rewriter *rw, const UOp *root, const Binds *m) { return m->v->src[root->ints[0]]; }

static const UOp *rw_zero(Rewriter *rw, const UOp *root, const Binds *m) {
  return uop_const_int(rw->ctx, root->dtype, 0);
}

static const UOp *rw_all_ones(Rewriter *rw, const UOp *root, const Binds *m) {
  return uop_const_int(rw->ctx, root->dtype, -1);
}

static const UOp *rw_neg_x(Rewriter *rw, const UOp *root, const Binds *m) {
  return uop_unary(rw->ctx, UJ_OP_NEG, m->x);
}

/* f(c1, c2, ...) -> the constant, by the semantics of alu.c */
static const UOp *rw_fold(Rewriter *rw, const UOp *root, const Binds *m) {
  if (root->dtype.lanes != 1) return NULL;
  uint64_t words[3];
  for (uint32_t i = 0; i < root->nsrc; i++) words[i] = uop_const_value(root->src[i]);
  const UOp *typed = root->src[root->op == UJ_OP_WHERE ? 1 : 0];
  uint64_t w = alu_eval((Op)root->op, (uj_scalar)root->dtype.scalar,
                        (uj_scalar)typed->dtype.scalar, words);
  return uop_const_word(rw->ctx, root->dtype, w);
}

/* an int/bool value the bounds pin to one number -> that constant */
static const UOp *rw_bounds_point(Rewriter *rw, const UOp *root, const Binds *m) {
  if (!op_has((Op)root->op, OPF_ALU) || !root->bounded || root->vmin != root->vmax) return NULL;
  return uop_const_int(rw->ctx, root->dtype, root->vmin);
}

/* x<x, x!=x -> false and x==x -> true, for ints and bools (NaN for floats) */
static const UOp *rw_self_compare(Rewriter *rw, const UOp *root, const Binds *m) {
  if (dt_is_float(m->x->dtype)) return NULL;
  return uop_const_int(rw->ctx, root->dtype, root->op == UJ_OP_CMPEQ);
}

/* x!=false, x==true -> x, for bool x */
static const UOp *rw_bool_x(Rewriter *rw, const UOp *root, const Binds *m) {
  return dt_is_bool(m->x->dtype) ? m->x : NULL;
}

static const UOp *rw_where_const(Rewriter *rw, const UOp *root, const Binds *m) {
  return uop_const_value(m->c) ? m->x : m->y;
}

/* WHERE(c, false, true) -> c ^ true */
static const UOp *rw_where_not(Rewriter *rw, const UOp *root, const Binds *m) {
  return uop_binary(rw->ctx, UJ_OP_XOR, m->c, m->t);
}

/* Whether CAST to `to` keeps every value x can take. */
static bool cast_is_lossless(const UOp *x, DType to) {
  DType from = x->dtype;
  if (dt_is_bool(from)) return true;
  if (dt_is_int(from) && dt_is_int(to)) {
    int64_t lo, hi;
    return x->bounded && (!dtype_full_bounds(to, &lo, &hi) ? x->vmin >= 0
                                                         : x->vmin >= lo && x->vmax <= hi);
  }
  if (dt_is_int(from) && dt_is_float(to)) {
    int64_t limit = to.scalar == UJ_FLOAT16 ? 2048 : to.scalar == UJ_BFLOAT16 ? 256
                  : to.scalar == UJ_FLOAT32 ? (1 << 24) : (1ll << 53);
    return x->bounded && x->vmin >= -limit && x->vmax <= limit;
  }
  if (dt_is_float(from) && dt_is_float(to)) {
    if (to.scalar == UJ_FLOAT64 || from.scalar == to.scalar) return true;
    return to.scalar == UJ_FLOAT32 && (from.scalar == UJ_FLOAT16 || from.scalar == UJ_BFLOAT16);
  }
  return false;
}

/* CAST(x) to x's dtype -> x;  CAST(CAST(x)) back to x's dtype, losslessly -> x */
static const UOp *rw_cast(Rewriter *rw, const UOp *root, const Binds *m) {
  const UOp *x = m->x;
  if (dt_eq(x->dtype, root->dtype)) return x;
  if (x->op == UJ_OP_CAST && dt_eq(x->src[0]->dtype, root->dtype) &&
      cast_is_lossless(x->src[0], x->dtype))
    return x->src[0];
  return NULL;
}

/* f(c, x) -> f(x, c);  f(y, x) -> f(x, y) when x orders first. Integer
 * sums are ordered by rw_linear instead, which also reassociates. */
static const UOp *rw_commute(Rewriter *rw, const UOp *root, const Binds *m) {
  const UOp *x = m->x, *y = m->y;
  if (root->op == UJ_OP_ADD && dt_is_int(root->dtype)) return NULL;
  bool swap = x->op == UJ_OP_CONST ? y->op != UJ_OP_CONST
                                   : y->op != UJ_OP_CONST && uop_term_order(y, x) < 0;
  return swap ? uop_binary(rw->ctx, (Op)root->op, y, x) : NULL;
}

/* Σ a·t + k in canonical form: like terms combined (x*3 + x*5 -> x*8),
 * constants folded and last, terms ordered; kept only if not larger. */
static const UOp *rw_linear(Rewriter *rw, const UOp *root, const Binds *m) {
  Linear lin;
  if (!linear_decompose(rw->ctx, root, &lin)) return NULL;
  return linear_not_larger(rw, linear_build(rw->ctx, &lin), root, &lin);
}

/* x << c -> x * 2^c (the count is taken modulo the width); not when c
 * has other users, which would keep it alive beside the new constant */
static const UOp *rw_shl_to_mul(Rewriter *rw, const UOp *root, const Binds *m) {
  if (rewrite_is_shared(rw, m->c)) return NULL;
  unsigned n = (unsigned)(uop_const_value(m->c) % dt_bits(root->dtype));
  return uop_binary(rw->ctx, UJ_OP_MUL, m->x, uop_const_int(rw->ctx, root->dtype, (int64_t)(1ull << n)));
}

/* x >> c -> x // 2^c, for x >= 0 (and c has no other users) */
static const UOp *rw_shr_to_div(Rewriter *rw, const UOp *root, const Binds *m) {
  if (rewrite_is_shared(rw, m->c)) return NULL;
  unsigned bits = dt_bits(root->dtype), n = (unsigned)(uop_const_value(m->c) % bits);
  if (!m->x->bounded || m->x->vmin < 0 || n >= 62 || (dt_is_signed(root->dtype) && n >= bits - 1))
    return NULL;
  return uop_binary(rw->ctx, UJ_OP_IDIV, m->x, uop_const_int(rw->ctx, root->dtype, 1ll << n));
}

/* max(x, y) -> x when x >= y by the bounds (and the other way round) */
static const UOp *rw_max_bounds(Rewriter *rw, const UOp *root, const Binds *m) {
  const UOp *x = m->x, *y = m->y;
  if (!x->bounded || !y->bounded) return NULL;
  return x->vmin >= y->vmax ? x : y->vmin >= x->vmax ? y : NULL;
}

/* A binary op on two constants, folded by the semantics of alu.c. */
static const UOp *folded(Ctx *ctx, Op op, const UOp *a, const UOp *b) {
  uint64_t words[2] = {uop_const_value(a), uop_const_value(b)};
  DType dt = op == UJ_OP_CMPLT ? dt_scalar(UJ_BOOL) : a->dtype;
  return uop_const_word(ctx, dt, alu_eval(op, (uj_scalar)dt.scalar, (uj_scalar)a->dtype.scalar, words));
}

/* max(max(x, a), b) -> max(x, max(a, b)); xor(xor(x, a), b) -> xor(x, a^b).
 * MAX is associative for every dtype: floats order -0 below +0 and NaN
 * absorbs, like a top element. */
static const UOp *rw_assoc_consts(Rewriter *rw, const UOp *root, const Binds *m) {
  if (root->dtype.lanes != 1) return NULL;
  const UOp *c = folded(rw->ctx, (Op)root->op, m->a, m->b);
  return c ? uop_binary(rw->ctx, (Op)root->op, m->x, c) : NULL;
}

/* max(max(x, a), y) -> max(max(x, y), a), the constant moved out to meet
 * the next one in a chain; only when the inner max has no other user. */
static const UOp *rw_max_const_out(Rewriter *rw, const UOp *root, const Binds *m) {
  if (m->y->op == UJ_OP_CONST || rewrite_is_shared(rw, m->m)) return NULL;
  const UOp *inner = uop_binary(rw->ctx, UJ_OP_MAX, m->x, m->y);
  return inner ? uop_binary(rw->ctx, UJ_OP_MAX, inner, m->a) : NULL;
}

/* The minimum as the tensor ops write it, WHERE(x < a, x, a), of
 * another: min(min(x, a), b) -> min(x, min(a, b)), the inner minimum
 * folded the same way (x < a picks x, else a; NaN never < : then a). */
static const UOp *rw_min_consts(Rewriter *rw, const UOp *root, const Binds *m) {
  if (root->dtype.lanes != 1) return NULL;
  const UOp *lt = folded(rw->ctx, UJ_OP_CMPLT, m->a, m->b);
  const UOp *c = lt ? (uop_const_value(lt) ? m->a : m->b) : NULL;
  const UOp *cmp = c ? uop_binary(rw->ctx, UJ_OP_CMPLT, m->x, c) : NULL;
  return cmp ? uop_ternary(rw->ctx, UJ_OP_WHERE, cmp, m->x, c) : NULL;
}

static const Rule symbolic_rules[] = {
  /* constant folding */
  {"(" UNARY " (CONST))", rw_fold},                          // f(c) -> c'
  {"(" BINARY " (CONST) (CONST))", rw_fold},                 // f(c1, c2) -> c'
  {"(WHERE|MULACC (CONST) (CONST) (CONST))", rw_fold},       // f(c1, c2, c3) -> c'
  {"x", rw_bounds_point},                                    // x in [v, v] -> v
  /* identities */
  {"(IDIV x (CONST 0))", rw_all_ones},                       // x//0 -> -1 (all ones)
  {"(MOD x (CONST 0))", rw_x},                               // x%0 -> x
  {"(ADD:float x (CONST -0.0))", rw_x},                      // x+(-0.0) -> x
  {"(SUB x (CONST 0))", rw_x},                               // x-0 -> x
  {"(MUL x (CONST 1))", rw_x},                               // x*1 -> x
  {"(FDIV x (CONST 1))", rw_x},                              // x/1.0 -> x
  {"(IDIV x (CONST 1))", rw_x},                              // x//1 -> x
  {"(IDIV:sint x (CONST -1))", rw_neg_x},                    // x//-1 -> -x
  {"(MOD x (CONST 1))", rw_zero},                            // x%1 -> 0
  {"(MOD:sint x (CONST -1))", rw_zero},                      // x%-1 -> 0
  {"(NEG (NEG x))", rw_x},                                   // -(-x) -> x
  {"(AND|OR|MAX x x)", rw_x},                                // x&x, x|x, max(x,x) -> x
  {"(XOR x x)", rw_zero},                                    // x^x -> 0
  {"(AND x z=(CONST 0))", rw_z},                             // x&0 -> 0
  {"(AND x (CONST -1))", rw_x},                              // x&~0 -> x (bool: x&true)
  {"(OR|XOR x (CONST 0))", rw_x},                            // x|0, x^0 -> x
  {"(OR x c=(CONST -1))", rw_c},                             // x|~0 -> ~0 (bool: x|true)
  {"(SHL|SHR x (CONST 0))", rw_x},                           // x<<0, x>>0 -> x
  {"(CMPLT|CMPNE|CMPEQ x x)", rw_self_compare},              // x<x, x!=x -> false; x==x -> true
  {"(CMPNE x (CONST false))", rw_bool_x},                    // b!=false -> b
  {"(CMPEQ x (CONST true))", rw_bool_x},                     // b==true -> b
  {"(WHERE c=(CONST) x y)", rw_where_const},                 // WHERE(true,x,y) -> x, (false) -> y
  {"(WHERE _ x x)", rw_x},                                   // WHERE(c,x,x) -> x
  {"(WHERE:bool c (CONST true) (CONST false))", rw_c},       // WHERE(c,true,false) -> c
  {"(WHERE:bool c (CONST false) t=(CONST true))", rw_where_not},// WHERE(c,false,true) -> c^true
  {"(CAST x)", rw_cast},                                     // cast to own dtype, lossless round trip
  {"(GEP v=(VECTORIZE ...))", rw_gep_lane},                  // GEP(VECTORIZE(a0, a1, ...), k) -> ak
  /* integer algebra */
  {"(ADD|SUB|MUL:int _ _)", rw_linear},                      // Σ a·t + k, canonical
  {"(NEG:int _)", rw_linear},                                // -(a·t + k)
  {"(SHL:int x c=(CONST))", rw_shl_to_mul},                  // x<<c -> x*2^c
  {"(SHR:int x c=(CONST))", rw_shr_to_div},                  // x>>c -> x//2^c, x >= 0
  {"(IDIV (IDIV x a=(CONST)) b=(CONST))", rw_div_div},       // (x//a)//b -> x//(a*b)
  {"(MOD (MOD x a=(CONST)) b=(CONST))", rw_mod_mod},         // (x%(b*k))%b -> x%b
  {"(MOD (IDIV x a=(CONST)) b=(CONST))", rw_mod_div},        // (x//a)%b -> (x%(a*b))//a
  {"(IDIV|MOD:int x c=(CONST))", rw_divmod},                 // (x*c+y)//c -> x, (x*c+y)%c -> y
  {"(CMPLT x d=(CONST))", rw_lt_linear},                     // x+k < d -> x < d-k; g·X+Y < d -> X < F+1
  {"(CMPLT d=(CONST) x)", rw_lt_linear},                     // d < x+k -> d-k < x; d < g·X+Y -> F < X
  {"(MAX:int x y)", rw_max_bounds},                          // max(x,y) -> x when x >= y
  /* chains of max, min and xor with constants */
  {"(MAX~ (MAX~ x a=(CONST)) b=(CONST))", rw_assoc_consts},  // max(max(x,a),b) -> max(x,max(a,b))
  {"(XOR~ (XOR~ x a=(CONST)) b=(CONST))", rw_assoc_consts},  // (x^a)^b -> x^(a^b)
  {"(MAX~ m=(MAX~ x a=(CONST)) y)", rw_max_const_out},       // max(max(x,a),y) -> max(max(x,y),a)
  {"(WHERE (CMPLT m=(WHERE (CMPLT x a=(CONST)) x a) b=(CONST)) m b)", rw_min_consts},
                                                             // min(min(x,a),b) -> min(x,min(a,b))
  /* canonical order */
  {"(ADD|MUL|AND|OR|XOR|MAX|CMPNE|CMPEQ x y)", rw_commute},  // f(c, x) -> f(x, c)
};

/* The rule set, compiled on the context's first use. */
static const RuleSet *rules_of(Ctx *ctx) {
  if (!ctx->symbolic_rules)
    ctx->symbolic_rules = ruleset_new(ctx, symbolic_rules, sizeof symbolic_rules / sizeof *symbolic_rules);
  return ctx->symbolic_rules;
}

const UOp *symbolic_simplify(Ctx *ctx, const UOp *root) {
  const RuleSet *rs = rules_of(ctx);
  return rs ? graph_rewrite(ctx, root, rs, NULL) : NULL;
}

static const Rule commute_rules[] = {
  {"(ADD|MUL|AND|OR|XOR|MAX|CMPNE|CMPEQ x y)", rw_commute}, // f(y, x) -> f(x, y) when x orders first
};

const UOp *symbolic_canonical_order(Ctx *ctx, const UOp *root) {
  RuleSet *rs = ruleset_new(ctx, commute_rules, sizeof commute_rules / sizeof *commute_rules);
  const UOp *out = rs ? graph_rewrite(ctx, root, rs, NULL) : NULL;
  ruleset_free(rs);
  return out;
}

const uj_uop *uj_simplify(uj_ctx *ctx, const uj_uop *root) {
  if (!root) {
    ctx_set_error(ctx, "uj_simplify: no graph");
    return NULL;
  }
  ctx_clear_error(ctx);
  if (!spec_check_graph(ctx, root)) return NULL;
  /* the public simplify promises a fixpoint (docs/symbolic.md): simplifying its result again gives it back */
  const RuleSet *rs = rules_of(ctx);
  return rs ? graph_rewrite_fixpoint(ctx, root, rs, NULL) : NULL;
}
