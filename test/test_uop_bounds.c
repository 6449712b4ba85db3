/* test_uop_bounds.c — vmin/vmax (lib/uop/props.c): hand-computed bounds of
 * each op on a few cases, including wrap-around to the dtype's full range
 * and uint64 (bounded only inside [0, INT64_MAX]); then a soundness sweep:
 * for many ops, dtypes and variable ranges, every value the reference
 * evaluator computes lies inside the node's bounds. */
#include <stdint.h>

#include "eval_util.h"

#define EXPECT(u, lo, hi) expect_bounds(__LINE__, u, lo, hi)
#define EXPECT_NONE(u)    CHECK((u) && !(u)->bounded, "line %d: must have no bounds", __LINE__)

static void expect_bounds(int line, const UOp *u, int64_t lo, int64_t hi) {
  CHECK(u && u->bounded && u->vmin == lo && u->vmax == hi,
        "line %d: bounds [%lld, %lld], want [%lld, %lld]", line, u ? (long long)u->vmin : 0,
        u ? (long long)u->vmax : 0, (long long)lo, (long long)hi);
}

typedef struct T {
  Ctx *ctx;
  uj_scalar s;
} T;

static const UOp *var(T t, const char *name, int64_t lo, int64_t hi) {
  return uj_var(t.ctx, dt_scalar(t.s), name, lo, hi);
}
static const UOp *k(T t, int64_t v) { return k_int(t.ctx, t.s, v); }
static const UOp *op2(T t, Op op, const UOp *a, const UOp *b) { return alu(t.ctx, op, a, b, NULL); }

static void test_leaves(Ctx *ctx) {
  T t = {ctx, UJ_INT32};
  EXPECT(k(t, 5), 5, 5);
  EXPECT(var(t, "a", -3, 7), -3, 7);
  EXPECT(k_int(ctx, UJ_BOOL, 1), 1, 1);
  EXPECT(k_int(ctx, UJ_UINT64, 7), 7, 7);
  EXPECT_NONE(k_word(ctx, UJ_UINT64, UINT64_MAX));
  EXPECT(k_int(ctx, UJ_UINT32, 4294967295), 4294967295, 4294967295);
  EXPECT_NONE(k_float(ctx, UJ_FLOAT32, 1.0));
  int64_t slot = 0;
  EXPECT(uj_uop_new(ctx, UJ_OP_PARAM, dt_scalar(UJ_INT8), NULL, 0, (Arg){NULL, &slot, 1}), -128,
         127);
  EXPECT_NONE(
      uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_vec(UJ_INT8, 4), NULL, 0, (Arg){NULL, &slot, 1}));
  EXPECT_NONE(uj_uop_new(ctx, UJ_OP_PARAM, dt_scalar(UJ_UINT64), NULL, 0, (Arg){NULL, &slot, 1}));
  const UOp *p = uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_ptr(UJ_UINT8, 1, UJ_AS_GLOBAL), NULL, 0,
                            (Arg){NULL, &slot, 1});
  EXPECT_NONE(p);
  EXPECT(alu(ctx, UJ_OP_NEG, k_int(ctx, UJ_INT8, 0), NULL, NULL), 0, 0);
  EXPECT(mk(ctx, UJ_OP_LOAD, dt_scalar(UJ_UINT8), p, NULL, NULL), 0, 255);
}

static void test_arith(Ctx *ctx) {
  T t = {ctx, UJ_INT32};
  const UOp *a = var(t, "a", 0, 10), *b = var(t, "b", -2, 3), *c = var(t, "c", 4, 5);
  EXPECT(op2(t, UJ_OP_ADD, a, k(t, 5)), 5, 15);
  EXPECT(op2(t, UJ_OP_SUB, a, a), -10, 10);
  EXPECT(op2(t, UJ_OP_MUL, b, c), -10, 15);
  EXPECT(alu(ctx, UJ_OP_NEG, b, NULL, NULL), -3, 2);
  EXPECT(alu(ctx, UJ_OP_MULACC, b, c, a), -10, 25);
  EXPECT(op2(t, UJ_OP_MAX, a, b), 0, 10);
  /* wrap-around: the whole range */
  EXPECT(op2(t, UJ_OP_ADD, var(t, "big", INT32_MAX - 5, INT32_MAX), k(t, 10)), INT32_MIN,
         INT32_MAX);
  EXPECT(op2(t, UJ_OP_MUL, var(t, "m", 0, 100000), k(t, 100000)), INT32_MIN, INT32_MAX);
  T i8 = {ctx, UJ_INT8}, u32 = {ctx, UJ_UINT32}, u8 = {ctx, UJ_UINT8};
  EXPECT(op2(i8, UJ_OP_ADD, var(i8, "a", 100, 127), k(i8, 10)), -128, 127);
  EXPECT(op2(i8, UJ_OP_ADD, var(i8, "a", 100, 117), k(i8, 10)), 110, 127);
  EXPECT(op2(u32, UJ_OP_SUB, var(u32, "a", 0, 10), var(u32, "b", 0, 10)), 0, 4294967295);
  EXPECT(op2(u32, UJ_OP_SUB, var(u32, "a", 5, 10), var(u32, "b", 0, 5)), 0, 10);
  EXPECT(alu(ctx, UJ_OP_NEG, var(u8, "a", 1, 5), NULL, NULL), 0, 255);
  T i64 = {ctx, UJ_INT64}, u64 = {ctx, UJ_UINT64};
  EXPECT(op2(i64, UJ_OP_ADD, var(i64, "a", 0, INT64_MAX), k(i64, 1)), INT64_MIN, INT64_MAX);
  EXPECT(alu(ctx, UJ_OP_NEG, var(i64, "a", INT64_MIN, 0), NULL, NULL), INT64_MIN, INT64_MAX);
  /* uint64: bounded only while inside [0, INT64_MAX] */
  EXPECT(var(u64, "a", 5, 10), 5, 10);
  EXPECT(op2(u64, UJ_OP_ADD, var(u64, "a", 5, 10), k(u64, 1)), 6, 11);
  EXPECT_NONE(op2(u64, UJ_OP_ADD, var(u64, "a", 0, INT64_MAX), k(u64, 1)));
  EXPECT_NONE(op2(u64, UJ_OP_SUB, var(u64, "a", 0, 3), k(u64, 5)));
  EXPECT_NONE(op2(u64, UJ_OP_MUL, var(u64, "a", 0, 1ll << 32), var(u64, "b", 0, 1ll << 32)));
  EXPECT_NONE(op2(u64, UJ_OP_ADD, k_word(ctx, UJ_UINT64, UINT64_MAX), k(u64, 1)));
}

static void test_div_mod(Ctx *ctx) {
  T t = {ctx, UJ_INT32};
  const UOp *a = var(t, "a", 0, 10), *s = var(t, "s", -7, 7);
  EXPECT(op2(t, UJ_OP_IDIV, a, k(t, 2)), 0, 5);
  EXPECT(op2(t, UJ_OP_IDIV, s, var(t, "d", 2, 3)), -3, 3);
  EXPECT(op2(t, UJ_OP_IDIV, s, k(t, -2)), -3, 3);
  EXPECT(op2(t, UJ_OP_IDIV, var(t, "p", 10, 20), var(t, "d", 2, 3)), 3, 10);
  EXPECT(op2(t, UJ_OP_IDIV, a, var(t, "z", -1, 1)), INT32_MIN, INT32_MAX); /* x/0 */
  EXPECT(op2(t, UJ_OP_MOD, a, k(t, 16)), 0, 10);
  EXPECT(op2(t, UJ_OP_MOD, var(t, "w", -10, 10), k(t, 3)), -2, 2);
  EXPECT(op2(t, UJ_OP_MOD, var(t, "q", 0, 100), k(t, 7)), 0, 6);
  EXPECT(op2(t, UJ_OP_MOD, var(t, "q", 0, 100), k(t, -7)), 0, 6);
  EXPECT(op2(t, UJ_OP_MOD, var(t, "n", -100, -1), k(t, 7)), -6, 0);
  EXPECT(op2(t, UJ_OP_MOD, a, k(t, -1)), 0, 0);
  EXPECT(op2(t, UJ_OP_MOD, a, var(t, "z", 0, 3)), INT32_MIN, INT32_MAX); /* x%0 */
  T i8 = {ctx, UJ_INT8}, i64 = {ctx, UJ_INT64};
  EXPECT(op2(i8, UJ_OP_IDIV, k(i8, -128), k(i8, -1)), -128, 127); /* MIN/-1 wraps */
  EXPECT(op2(i64, UJ_OP_IDIV, var(i64, "m", INT64_MIN, 0), k(i64, -1)), INT64_MIN, INT64_MAX);
}

static void test_bits_shifts(Ctx *ctx) {
  T t = {ctx, UJ_INT32};
  const UOp *a = var(t, "a", 0, 12), *b = var(t, "b", 0, 5), *n = var(t, "n", -8, 8);
  EXPECT(op2(t, UJ_OP_AND, a, b), 0, 5);
  EXPECT(op2(t, UJ_OP_OR, var(t, "c", 0, 4), var(t, "d", 0, 9)), 0, 15);
  EXPECT(op2(t, UJ_OP_XOR, a, b), 0, 15);
  EXPECT(op2(t, UJ_OP_AND, n, b), INT32_MIN, INT32_MAX); /* negative: no claim */
  EXPECT(op2(t, UJ_OP_SHL, var(t, "e", 1, 3), k(t, 2)), 4, 12);
  EXPECT(op2(t, UJ_OP_SHR, n, k(t, 1)), -4, 4);
  EXPECT(op2(t, UJ_OP_SHL, a, b), INT32_MIN, INT32_MAX);        /* amount not a constant */
  EXPECT(op2(t, UJ_OP_SHL, a, k(t, 40)), INT32_MIN, INT32_MAX); /* amount taken mod 32 */
  EXPECT(op2(t, UJ_OP_SHL, k(t, 1), k(t, 31)), INT32_MIN, INT32_MAX);
  T b1 = {ctx, UJ_BOOL};
  EXPECT(op2(b1, UJ_OP_AND, k(b1, 1), k(b1, 1)), 0, 1);
}

static void test_compare_where_cast(Ctx *ctx) {
  T t = {ctx, UJ_INT32};
  const UOp *a = var(t, "a", 0, 5), *b = var(t, "b", 10, 20), *c = var(t, "c", 3, 12);
  EXPECT(op2(t, UJ_OP_CMPLT, a, b), 1, 1);
  EXPECT(op2(t, UJ_OP_CMPLT, b, a), 0, 0);
  EXPECT(op2(t, UJ_OP_CMPLT, a, c), 0, 1);
  EXPECT(op2(t, UJ_OP_CMPNE, a, b), 1, 1);
  EXPECT(op2(t, UJ_OP_CMPEQ, a, b), 0, 0);
  EXPECT(op2(t, UJ_OP_CMPEQ, k(t, 4), k(t, 4)), 1, 1);
  EXPECT(op2(t, UJ_OP_CMPNE, k(t, 4), k(t, 4)), 0, 0);
  EXPECT(op2(t, UJ_OP_CMPEQ, a, c), 0, 1);
  EXPECT(alu(ctx, UJ_OP_CMPLT, k_float(ctx, UJ_FLOAT32, 1), k_float(ctx, UJ_FLOAT32, 2), NULL), 0,
         1);
  const UOp *cond = op2(t, UJ_OP_CMPLT, a, c);
  EXPECT(alu(ctx, UJ_OP_WHERE, cond, a, b), 0, 20);
  EXPECT(alu(ctx, UJ_OP_WHERE, op2(t, UJ_OP_CMPLT, a, b), a, b), 0, 5);
  EXPECT(alu(ctx, UJ_OP_WHERE, k_int(ctx, UJ_BOOL, 0), a, b), 10, 20);
  DType u8 = dt_scalar(UJ_UINT8);
  EXPECT(mk(ctx, UJ_OP_CAST, u8, var(t, "w", 0, 300), NULL, NULL), 0, 255);
  EXPECT(mk(ctx, UJ_OP_CAST, u8, var(t, "w", 0, 200), NULL, NULL), 0, 200);
  EXPECT(mk(ctx, UJ_OP_CAST, u8, var(t, "w", -1, 200), NULL, NULL), 0, 255);
  EXPECT(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_INT64), var(t, "w", -5, 5), NULL, NULL), -5, 5);
  EXPECT(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_BOOL), var(t, "w", 2, 5), NULL, NULL), 0, 1);
  EXPECT(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_INT32), k_float(ctx, UJ_FLOAT32, 2.5), NULL, NULL),
         INT32_MIN, INT32_MAX);
  EXPECT_NONE(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), k_float(ctx, UJ_FLOAT32, 2.5), NULL, NULL));
  EXPECT_NONE(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), var(t, "w", -1, 5), NULL, NULL));
  EXPECT(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_UINT64), var(t, "w", 0, 5), NULL, NULL), 0, 5);
  EXPECT_NONE(mk(ctx, UJ_OP_CAST, dt_scalar(UJ_FLOAT32), a, NULL, NULL));
  EXPECT(mk(ctx, UJ_OP_BITCAST, dt_scalar(UJ_UINT32), k(t, -1), NULL, NULL), 0, 4294967295);
}

/* ---- soundness: the evaluator's values lie inside the bounds ---- */

typedef struct Range {
  int64_t lo, hi;
} Range;

/* Small ranges that fit s: a few generic ones, the two ends, the middle. */
static size_t ranges_of(uj_scalar s, Range *out) {
  int64_t lo, hi;
  if (!dtype_full_bounds(dt_scalar(s), &lo, &hi)) lo = 0, hi = INT64_MAX; /* uint64 */
  static const Range generic[] = {{-5, 5}, {0, 7},   {3, 3},    {1, 4},  {-3, -1},
                                  {0, 0},  {-1, -1}, {-12, -2}, {5, 11}, {-20, 20},
                                  {-1, 0}, {2, 30},  {-30, -7}};
  size_t n = 0;
  for (size_t i = 0; i < sizeof generic / sizeof *generic; i++)
    if (generic[i].lo >= lo && generic[i].hi <= hi) out[n++] = generic[i];
  out[n++] = (Range){hi - 3, hi};
  out[n++] = (Range){lo, lo + 3};
  out[n++] = (Range){hi / 2 - 2, hi / 2 + 2}; /* doubling overflows here */
  return n;
}

/* One node op(a, b[, c]) over every value of its variables. */
static long sweep_one(uj_scalar s, Op op, Range ra, Range rb, long *evals) {
  Ctx *ctx = uj_ctx_new();
  DType d = dt_scalar(s);
  const UOp *a = uj_var(ctx, d, "a", ra.lo, ra.hi), *b = uj_var(ctx, d, "b", rb.lo, rb.hi);
  const UOp *u = op_has(op, OPF_UNARY) ? alu(ctx, op, a, NULL, NULL)
                 : op == UJ_OP_MULACC  ? alu(ctx, op, a, b, a)
                 : op == UJ_OP_WHERE   ? alu(ctx, op, alu(ctx, UJ_OP_CMPLT, a, b, NULL), a, b)
                                       : alu(ctx, op, a, b, NULL);
  long bad = 0;
  Eval *ev = eval_new(ctx);
  CHECK(u && (u->bounded || s == UJ_UINT64), "%s %s must be bounded", scalar_table[s].name,
        op_table[op].name);
  for (int64_t i = 0; u && u->bounded && i <= ra.hi - ra.lo; i++) {
    for (int64_t j = 0; j <= rb.hi - rb.lo; j++) {
      int64_t x = ra.lo + i, y = rb.lo + j;
      eval_bind_var(ev, "a", x);
      eval_bind_var(ev, "b", y);
      bool ok = eval_run(ev, u);
      (*evals)++;
      int64_t v = ok ? (int64_t)eval_value(ev, u)[0] : 0; /* uint64 above INT64_MAX: < 0 */
      if (ok && v >= u->vmin && v <= u->vmax) continue;
      bad++;
      CHECK(
          0,
          "%s %s(%lld, %lld) = %lld outside [%lld, %lld] (a in [%lld, %lld], b in [%lld, %lld]) %s",
          scalar_table[s].name, op_table[op].name, (long long)x, (long long)y, (long long)v,
          (long long)u->vmin, (long long)u->vmax, (long long)ra.lo, (long long)ra.hi,
          (long long)rb.lo, (long long)rb.hi, ok ? "" : uj_error(ctx));
    }
  }
  eval_free(ev);
  uj_ctx_free(ctx);
  return bad;
}

static void test_soundness(void) {
  static const uj_scalar types[] = {UJ_INT8,   UJ_UINT8, UJ_INT16, UJ_INT32,
                                    UJ_UINT32, UJ_INT64, UJ_UINT64};
  static const Op ops[] = {UJ_OP_ADD,    UJ_OP_SUB,   UJ_OP_MUL,   UJ_OP_IDIV,  UJ_OP_MOD,
                           UJ_OP_MAX,    UJ_OP_AND,   UJ_OP_OR,    UJ_OP_XOR,   UJ_OP_SHL,
                           UJ_OP_SHR,    UJ_OP_CMPLT, UJ_OP_CMPNE, UJ_OP_CMPEQ, UJ_OP_NEG,
                           UJ_OP_MULACC, UJ_OP_WHERE};
  long bad = 0, evals = 0;
  for (size_t t = 0; t < sizeof types / sizeof *types; t++) {
    Range r[24];
    size_t nr = ranges_of(types[t], r);
    for (size_t o = 0; o < sizeof ops / sizeof *ops; o++)
      for (size_t i = 0; i < nr; i++)
        for (size_t j = 0; j < (op_has(ops[o], OPF_UNARY) ? 1 : nr); j++)
          bad += sweep_one(types[t], ops[o], r[i], r[j], &evals);
  }
  CHECK(bad == 0, "%ld values outside their bounds", bad);
  CHECK(evals > 100000, "only %ld evaluations", evals);
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_leaves(ctx);
  test_arith(ctx);
  test_div_mod(ctx);
  test_bits_shifts(ctx);
  test_compare_where_cast(ctx);
  uj_ctx_free(ctx);
  test_soundness();
  return check_report("test_uop_bounds");
}
