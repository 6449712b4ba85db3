/* test_uop_spec.c — every op's type rule (lib/uop/ops.c) through the
 * checked constructor uj_uop_new: for each op at least one node accepted and
 * one rejected with the expected message; arity and arg-layout errors; bad
 * dtypes; the graph checker (spec_check_graph / uj_check). */
#include "check.h"
#include "uop/spec.h"
#include "uop/uop.h"

typedef struct Nodes {
  const UOp *i8, *i32, *i64, *u8, *u64, *f16, *f32, *f64, *b;
  const UOp *v4, *vb4, *vf4; /* int32x4, boolx4, float32x4 values */
  const UOp *pf, *pv, *st;   /* float32*, void*, a STORE */
} Nodes;

static Nodes nodes_new(Ctx *ctx) {
  Nodes n;
  n.i8 = uj_const_int(ctx, dt_scalar(UJ_INT8), 1);
  n.i32 = uj_const_int(ctx, dt_scalar(UJ_INT32), 1);
  n.i64 = uj_const_int(ctx, dt_scalar(UJ_INT64), 1);
  n.u8 = uj_const_int(ctx, dt_scalar(UJ_UINT8), 1);
  n.u64 = uj_const_int(ctx, dt_scalar(UJ_UINT64), 1);
  n.f16 = uj_const_float(ctx, dt_scalar(UJ_FLOAT16), 1);
  n.f32 = uj_const_float(ctx, dt_scalar(UJ_FLOAT32), 1);
  n.f64 = uj_const_float(ctx, dt_scalar(UJ_FLOAT64), 1);
  n.b = uj_const_bool(ctx, true);
  int64_t slot[6] = {0, 1, 2, 3, 4, 5};
  n.v4 = uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_vec(UJ_INT32, 4), NULL, 0, (Arg){NULL, &slot[0], 1});
  n.vb4 = uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_vec(UJ_BOOL, 4), NULL, 0, (Arg){NULL, &slot[1], 1});
  n.vf4 =
      uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_vec(UJ_FLOAT32, 4), NULL, 0, (Arg){NULL, &slot[2], 1});
  n.pf = uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL), NULL, 0,
                    (Arg){NULL, &slot[3], 1});
  n.pv = uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_ptr(UJ_VOID, 1, UJ_AS_GLOBAL), NULL, 0,
                    (Arg){NULL, &slot[4], 1});
  n.st =
      uj_uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){n.pf, n.f32}, 2, arg_none());
  return n;
}

/* Builds (op, dtype, sources, arg); `want` NULL: must be accepted; else the
 * error must contain `want`. */
static void expect(Ctx *ctx, int line, const char *want, Op op, DType dt, Arg arg, size_t n,
                   const UOp *a, const UOp *b, const UOp *c, const UOp *d) {
  const UOp *src[4] = {a, b, c, d};
  ctx_clear_error(ctx);
  const UOp *u = uj_uop_new(ctx, op, dt, src, n, arg);
  if (!want) {
    CHECK(u != NULL, "line %d: %s must be accepted: %s", line, op_table[op].name, uj_error(ctx));
    if (u) CHECK(spec_check_graph(ctx, u), "line %d: the graph checks too", line);
  } else {
    CHECK(u == NULL && strstr(uj_error(ctx), want),
          "line %d: %s must be rejected with '%s', got '%s'", line, op_table[op].name, want,
          uj_error(ctx));
  }
}

#define NO ((const UOp *)NULL)
#define ACCEPT(op, dt, n, a, b, c)                                                                 \
  expect(ctx, __LINE__, NULL, UJ_OP_##op, dt, arg_none(), n, a, b, c, NO)
#define REJECT(msg, op, dt, n, a, b, c)                                                            \
  expect(ctx, __LINE__, msg, UJ_OP_##op, dt, arg_none(), n, a, b, c, NO)
#define ACCEPT_ARG(op, dt, arg) expect(ctx, __LINE__, NULL, UJ_OP_##op, dt, arg, 0, NO, NO, NO, NO)
#define REJECT_ARG(msg, op, dt, arg)                                                               \
  expect(ctx, __LINE__, msg, UJ_OP_##op, dt, arg, 0, NO, NO, NO, NO)

static DType S(uj_scalar s) { return dt_scalar(s); }
static DType V(uj_scalar s, unsigned lanes) { return uj_dtype_vec(s, lanes); }
static DType P(uj_scalar s) { return uj_dtype_ptr(s, 1, UJ_AS_GLOBAL); }
static Arg ints1(const int64_t *v) { return (Arg){NULL, v, 1}; }

static void test_program_ops(Ctx *ctx, const Nodes *n) {
  DType vd = S(UJ_VOID);
  ACCEPT(SINK, vd, 2, n->st, n->st, NO);
  ACCEPT(SINK, vd, 0, NO, NO, NO);
  REJECT("SINK must have dtype void, not int32", SINK, S(UJ_INT32), 1, n->st, NO, NO);
  expect(ctx, __LINE__, "SINK takes no arg", UJ_OP_SINK, vd, (Arg){"x", NULL, 0}, 0, NO, NO, NO,
         NO);
  static const int64_t one = 1, neg = -1, two[2] = {1, 2}, three[3] = {1, 2, 3};
  static const int64_t f_one = 0x3ff0000000000000, big = 300;
  ACCEPT_ARG(CONST, S(UJ_INT32), ints1(&one));
  ACCEPT_ARG(CONST, S(UJ_BOOL), ints1(&one));
  ACCEPT_ARG(CONST, S(UJ_FLOAT32), ints1(&f_one));
  REJECT_ARG("CONST value 0x1 is not a valid float32", CONST, S(UJ_FLOAT32), ints1(&one));
  REJECT_ARG("CONST value 0x12c is not a valid int8", CONST, S(UJ_INT8), ints1(&big));
  REJECT_ARG("CONST value 0xffffffffffffffff is not a valid bool", CONST, S(UJ_BOOL), ints1(&neg));
  REJECT_ARG("CONST must be a scalar", CONST, V(UJ_FLOAT32, 4), ints1(&one));
  REJECT_ARG("CONST must have a value dtype", CONST, P(UJ_FLOAT32), ints1(&one));
  REJECT_ARG("CONST must have a value dtype", CONST, S(UJ_VOID), ints1(&one));
  REJECT_ARG("CONST takes one value", CONST, S(UJ_INT32), arg_none());
  REJECT_ARG("CONST takes one value", CONST, S(UJ_INT32), ((Arg){NULL, two, 2}));
  expect(ctx, __LINE__, "CONST takes 0 sources, not 1", UJ_OP_CONST, S(UJ_INT32), ints1(&one), 1,
         n->i32, NO, NO, NO);
  ACCEPT_ARG(PARAM, P(UJ_FLOAT32), ints1(&one));
  ACCEPT_ARG(PARAM, V(UJ_INT32, 4), ints1(&one));
  REJECT_ARG("PARAM slot -1 is negative", PARAM, P(UJ_FLOAT32), ints1(&neg));
  REJECT_ARG("PARAM cannot be void", PARAM, S(UJ_VOID), ints1(&one));
  REJECT_ARG("PARAM takes one slot number", PARAM, P(UJ_FLOAT32), ((Arg){"p", &one, 1}));
  ACCEPT_ARG(CALL, vd, ((Arg){"kern", three, 3}));
  expect(ctx, __LINE__, NULL, UJ_OP_CALL, vd, (Arg){"kern", NULL, 0}, 2, n->pf, n->i32, NO, NO);
  REJECT_ARG("CALL takes a callee name", CALL, vd, ((Arg){NULL, three, 3}));
  REJECT_ARG("CALL must have dtype void, not int32", CALL, S(UJ_INT32), ((Arg){"kern", NULL, 0}));
}

static void test_define_var(Ctx *ctx) {
  static const int64_t r010[2] = {0, 10}, r51[2] = {5, 1}, r0300[2] = {0, 300}, rm15[2] = {-1, 5},
                       rbig[2] = {0, INT64_MAX}, rmin[2] = {INT64_MIN, INT64_MIN};
  ACCEPT_ARG(DEFINE_VAR, S(UJ_INT32), ((Arg){"n", r010, 2}));
  ACCEPT_ARG(DEFINE_VAR, S(UJ_UINT64), ((Arg){"n", rbig, 2}));
  ACCEPT_ARG(DEFINE_VAR, S(UJ_INT64), ((Arg){"n", rmin, 2}));
  ACCEPT_ARG(DEFINE_VAR, S(UJ_INT8), ((Arg){"n", r010, 2}));
  REJECT_ARG("DEFINE_VAR n has min 5 > max 1", DEFINE_VAR, S(UJ_INT32), ((Arg){"n", r51, 2}));
  REJECT_ARG("DEFINE_VAR must be a scalar int, not float32", DEFINE_VAR, S(UJ_FLOAT32),
             ((Arg){"n", r010, 2}));
  REJECT_ARG("DEFINE_VAR must be a scalar int, not int32x4", DEFINE_VAR, V(UJ_INT32, 4),
             ((Arg){"n", r010, 2}));
  REJECT_ARG("DEFINE_VAR must be a scalar int, not bool", DEFINE_VAR, S(UJ_BOOL),
             ((Arg){"n", r010, 2}));
  REJECT_ARG("does not fit int8", DEFINE_VAR, S(UJ_INT8), ((Arg){"n", r0300, 2}));
  REJECT_ARG("does not fit uint8", DEFINE_VAR, S(UJ_UINT8), ((Arg){"n", rm15, 2}));
  REJECT_ARG("of uint64 cannot be negative", DEFINE_VAR, S(UJ_UINT64), ((Arg){"n", rm15, 2}));
  REJECT_ARG("takes a name, a min and a max", DEFINE_VAR, S(UJ_INT32), ((Arg){NULL, r010, 2}));
  REJECT_ARG("takes a name, a min and a max", DEFINE_VAR, S(UJ_INT32), ((Arg){"n", r010, 1}));
}

static void test_memory_ops(Ctx *ctx, const Nodes *n) {
  static const int64_t b16[2] = {0, 16}, bneg[2] = {0, -1};
  DType pf = P(UJ_FLOAT32);
  ACCEPT_ARG(BUFFER, pf, ((Arg){"CPU", b16, 2}));
  ACCEPT_ARG(BUFFER, uj_dtype_ptr(UJ_INT8, 4, UJ_AS_LOCAL), ((Arg){"CPU", b16, 2}));
  REJECT_ARG("BUFFER size -1 is negative", BUFFER, pf, ((Arg){"CPU", bneg, 2}));
  REJECT_ARG("BUFFER must be a pointer, not int32", BUFFER, S(UJ_INT32), ((Arg){"CPU", b16, 2}));
  REJECT_ARG("takes an id, a size and a device", BUFFER, pf, ((Arg){NULL, b16, 2}));
  ACCEPT(INDEX, pf, 2, n->pf, n->i32, NO);
  ACCEPT(INDEX, pf, 3, n->pf, n->i64, n->b);
  ACCEPT(INDEX, pf, 2, n->pf, n->u8, NO);
  REJECT("INDEX needs a pointer or a tensor, not int32", INDEX, S(UJ_INT32), 2, n->i32, n->i32, NO);
  REJECT("INDEX needs a scalar int index, not float32", INDEX, pf, 2, n->pf, n->f32, NO);
  REJECT("INDEX needs a scalar int index, not int32x4", INDEX, pf, 2, n->pf, n->v4, NO);
  REJECT("INDEX needs a scalar int index, not bool", INDEX, pf, 2, n->pf, n->b, NO);
  REJECT("INDEX gate must be bool, not int32", INDEX, pf, 3, n->pf, n->i32, n->i32);
  REJECT("INDEX gate must be bool, not boolx4", INDEX, pf, 3, n->pf, n->i32, n->vb4);
  REJECT("INDEX must have dtype float32*, not int32*", INDEX, P(UJ_INT32), 2, n->pf, n->i32, NO);
  REJECT("INDEX of a pointer takes an index and a gate, not 0 sources", INDEX, pf, 1, n->pf, NO, NO);
  ACCEPT(LOAD, S(UJ_FLOAT32), 1, n->pf, NO, NO);
  ACCEPT(LOAD, S(UJ_FLOAT32), 2, n->pf, n->f32, NO);
  ACCEPT(LOAD, V(UJ_INT8, 4), 1,
         uj_uop_new(ctx, UJ_OP_PARAM, uj_dtype_ptr(UJ_INT8, 4, UJ_AS_LOCAL), NULL, 0,
                    (Arg){NULL, (int64_t[]){9}, 1}),
         NO, NO);
  REJECT("LOAD alternative is int32, loaded value float32", LOAD, S(UJ_FLOAT32), 2, n->pf, n->i32,
         NO);
  REJECT("LOAD needs a pointer, not int32", LOAD, S(UJ_INT32), 1, n->i32, NO, NO);
  REJECT("LOAD needs a pointer, not void*", LOAD, S(UJ_VOID), 1, n->pv, NO, NO);
  REJECT("LOAD must have dtype float32, not int32", LOAD, S(UJ_INT32), 1, n->pf, NO, NO);
  REJECT("LOAD takes 1 to 2 sources, not 0", LOAD, S(UJ_FLOAT32), 0, NO, NO, NO);
  ACCEPT(STORE, S(UJ_VOID), 2, n->pf, n->f32, NO);
  REJECT("STORE of int32 through float32*", STORE, S(UJ_VOID), 2, n->pf, n->i32, NO);
  REJECT("STORE needs a pointer, not int32", STORE, S(UJ_VOID), 2, n->i32, n->i32, NO);
  REJECT("STORE of void through void*", STORE, S(UJ_VOID), 2, n->pv, n->st, NO);
  REJECT("STORE must have dtype void, not float32", STORE, S(UJ_FLOAT32), 2, n->pf, n->f32, NO);
  REJECT("STORE takes 2 sources, not 3", STORE, S(UJ_VOID), 3, n->pf, n->f32, n->f32);
}

static void test_unary_ops(Ctx *ctx, const Nodes *n) {
  static const Op float_only[] = {UJ_OP_RECIP, UJ_OP_EXP2, UJ_OP_LOG2, UJ_OP_SIN, UJ_OP_SQRT};
  for (size_t i = 0; i < sizeof float_only / sizeof *float_only; i++) {
    Op op = float_only[i];
    char msg[64];
    expect(ctx, __LINE__, NULL, op, S(UJ_FLOAT32), arg_none(), 1, n->f32, NO, NO, NO);
    expect(ctx, __LINE__, NULL, op, S(UJ_FLOAT16), arg_none(), 1, n->f16, NO, NO, NO);
    expect(ctx, __LINE__, NULL, op, V(UJ_FLOAT32, 4), arg_none(), 1, n->vf4, NO, NO, NO);
    snprintf(msg, sizeof msg, "%s does not take dtype int32", op_table[op].name);
    expect(ctx, __LINE__, msg, op, S(UJ_INT32), arg_none(), 1, n->i32, NO, NO, NO);
    expect(ctx, __LINE__, "does not take dtype bool", op, S(UJ_BOOL), arg_none(), 1, n->b, NO, NO,
           NO);
    expect(ctx, __LINE__, "takes 1 source", op, S(UJ_FLOAT32), arg_none(), 2, n->f32, n->f32, NO,
           NO);
    expect(ctx, __LINE__, "must have dtype float32, not float64", op, S(UJ_FLOAT64), arg_none(), 1,
           n->f32, NO, NO, NO);
  }
  ACCEPT(NEG, S(UJ_INT32), 1, n->i32, NO, NO);
  ACCEPT(NEG, S(UJ_FLOAT64), 1, n->f64, NO, NO);
  ACCEPT(NEG, S(UJ_UINT8), 1, n->u8, NO, NO);
  REJECT("NEG does not take dtype bool", NEG, S(UJ_BOOL), 1, n->b, NO, NO);
  ACCEPT(CAST, S(UJ_FLOAT32), 1, n->i32, NO, NO);
  ACCEPT(CAST, V(UJ_FLOAT32, 4), 1, n->v4, NO, NO);
  ACCEPT(CAST, S(UJ_INT32), 1, n->b, NO, NO);
  ACCEPT(CAST, S(UJ_BOOL), 1, n->f32, NO, NO);
  ACCEPT(CAST, S(UJ_INT32), 1, n->i32, NO, NO);
  REJECT("CAST changes lanes: int32x4 to float32", CAST, S(UJ_FLOAT32), 1, n->v4, NO, NO);
  REJECT("cannot CAST float32* to int64", CAST, S(UJ_INT64), 1, n->pf, NO, NO);
  REJECT("cannot CAST int32 to float32*", CAST, P(UJ_FLOAT32), 1, n->i32, NO, NO);
  REJECT("cannot CAST int32 to void", CAST, S(UJ_VOID), 1, n->i32, NO, NO);
  ACCEPT(BITCAST, S(UJ_INT32), 1, n->f32, NO, NO);
  ACCEPT(BITCAST, S(UJ_INT16), 1, n->f16, NO, NO);
  ACCEPT(BITCAST, S(UJ_BFLOAT16), 1, n->f16, NO, NO);
  ACCEPT(BITCAST, V(UJ_FLOAT32, 4), 1, n->v4, NO, NO);
  ACCEPT(BITCAST, S(UJ_INT64), 1, n->u64, NO, NO);
  REJECT("BITCAST needs equal widths: float32 is not int16", BITCAST, S(UJ_INT16), 1, n->f32, NO,
         NO);
  REJECT("BITCAST needs equal widths: bool is not int8", BITCAST, S(UJ_INT8), 1, n->b, NO, NO);
  REJECT("BITCAST needs equal widths: uint8 is not bool", BITCAST, S(UJ_BOOL), 1, n->u8, NO, NO);
  REJECT("BITCAST changes lanes", BITCAST, V(UJ_FLOAT32, 2), 1, n->v4, NO, NO);
}

/* Binary ops: each accepts its dtype classes and rejects the others. */
static void test_binary_ops(Ctx *ctx, const Nodes *n) {
  static const struct {
    Op op;
    bool ints, floats, bools;
  } ops[] = {
      {UJ_OP_ADD, 1, 1, 0},   {UJ_OP_SUB, 1, 1, 0},   {UJ_OP_MUL, 1, 1, 0}, {UJ_OP_IDIV, 1, 0, 0},
      {UJ_OP_FDIV, 0, 1, 0},  {UJ_OP_MOD, 1, 0, 0},   {UJ_OP_MAX, 1, 1, 1}, {UJ_OP_CMPLT, 1, 1, 1},
      {UJ_OP_CMPNE, 1, 1, 1}, {UJ_OP_CMPEQ, 1, 1, 1}, {UJ_OP_AND, 1, 0, 1}, {UJ_OP_OR, 1, 0, 1},
      {UJ_OP_XOR, 1, 0, 1},   {UJ_OP_SHL, 1, 0, 0},   {UJ_OP_SHR, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    Op op = ops[i].op;
    bool cmp = op_has(op, OPF_COMPARE);
    const UOp *vals[3] = {n->i32, n->f32, n->b};
    bool ok[3] = {ops[i].ints, ops[i].floats, ops[i].bools};
    for (int k = 0; k < 3; k++) {
      DType d = cmp ? S(UJ_BOOL) : vals[k]->dtype;
      char msg[64];
      snprintf(msg, sizeof msg, "%s does not take dtype %s", op_table[op].name,
               scalar_table[vals[k]->dtype.scalar].name);
      expect(ctx, __LINE__, ok[k] ? NULL : msg, op, d, arg_none(), 2, vals[k], vals[k], NO, NO);
    }
    const UOp *v = ops[i].ints ? n->v4 : n->vf4; /* vectors, lane by lane */
    DType vd = cmp ? V(UJ_BOOL, 4) : v->dtype;
    expect(ctx, __LINE__, NULL, op, vd, arg_none(), 2, v, v, NO, NO);
    const UOp *a = ops[i].ints ? n->i32 : n->f32, *b = ops[i].ints ? n->i8 : n->f64;
    expect(ctx, __LINE__, "sources have different dtypes", op, a->dtype, arg_none(), 2, a, b, NO,
           NO);
    expect(ctx, __LINE__, "takes 2 sources, not 1", op, a->dtype, arg_none(), 1, a, NO, NO, NO);
    expect(ctx, __LINE__, "takes no arg", op, a->dtype, (Arg){"x", NULL, 0}, 2, a, a, NO, NO);
    expect(ctx, __LINE__, "does not take dtype float32*", op, n->pf->dtype, arg_none(), 2, n->pf,
           n->pf, NO, NO);
    const char *want = cmp           ? "must have dtype bool, not int64"
                       : ops[i].ints ? "must have dtype int32, not int64"
                                     : "must have dtype float32, not int64";
    expect(ctx, __LINE__, want, op, S(UJ_INT64), arg_none(), 2, a, a, NO, NO);
  }
}

static void test_ternary_ops(Ctx *ctx, const Nodes *n) {
  ACCEPT(WHERE, S(UJ_INT32), 3, n->b, n->i32, n->i32);
  ACCEPT(WHERE, S(UJ_BOOL), 3, n->b, n->b, n->b);
  ACCEPT(WHERE, V(UJ_INT32, 4), 3, n->vb4, n->v4, n->v4);
  REJECT("WHERE condition must be bool, not int32", WHERE, S(UJ_INT32), 3, n->i32, n->i32, n->i32);
  REJECT("sources have different dtypes int32 and int8", WHERE, S(UJ_INT32), 3, n->b, n->i32,
         n->i8);
  REJECT("WHERE condition has 4 lanes, values 1", WHERE, S(UJ_INT32), 3, n->vb4, n->i32, n->i32);
  REJECT("WHERE condition has 1 lanes, values 4", WHERE, V(UJ_INT32, 4), 3, n->b, n->v4, n->v4);
  REJECT("WHERE values must be values, not float32*", WHERE, n->pf->dtype, 3, n->b, n->pf, n->pf);
  REJECT("WHERE must have dtype int32, not int64", WHERE, S(UJ_INT64), 3, n->b, n->i32, n->i32);
  REJECT("WHERE takes 3 sources, not 2", WHERE, S(UJ_INT32), 2, n->b, n->i32, NO);
  ACCEPT(MULACC, S(UJ_INT32), 3, n->i32, n->i32, n->i32);
  ACCEPT(MULACC, S(UJ_FLOAT32), 3, n->f32, n->f32, n->f32);
  ACCEPT(MULACC, V(UJ_FLOAT32, 4), 3, n->vf4, n->vf4, n->vf4);
  REJECT("MULACC does not take dtype bool", MULACC, S(UJ_BOOL), 3, n->b, n->b, n->b);
  REJECT("sources have different dtypes float32 and float64", MULACC, S(UJ_FLOAT32), 3, n->f32,
         n->f32, n->f64);
}

static void test_loop_ops(Ctx *ctx, const Nodes *n) {
  static const int64_t axis0 = 0, neg = -1;
  const UOp *r = uj_uop_new(ctx, UJ_OP_RANGE, S(UJ_INT32), &n->i32, 1, (Arg){"loop", &axis0, 1});
  CHECK(r && r->bounded && r->vmin == 0 && r->vmax == 0, "RANGE of 1: bounds [0, 0]");
  const UOp *b16 = uj_const_int(ctx, S(UJ_INT64), 16);
  const UOp *r16 = uj_uop_new(ctx, UJ_OP_RANGE, S(UJ_INT64), &b16, 1, (Arg){"global", &axis0, 1});
  CHECK(r16 && r16->vmin == 0 && r16->vmax == 15 && range_kind(r16) == AXIS_GLOBAL,
        "RANGE of 16: bounds [0, 15], kind global");
  expect(ctx, __LINE__, "RANGE bound must be a scalar int, not float32", UJ_OP_RANGE, S(UJ_FLOAT32),
         (Arg){"loop", &axis0, 1}, 1, n->f32, NO, NO, NO);
  expect(ctx, __LINE__, "unknown axis kind 'spin'", UJ_OP_RANGE, S(UJ_INT32),
         (Arg){"spin", &axis0, 1}, 1, n->i32, NO, NO, NO);
  expect(ctx, __LINE__, "RANGE axis -1 is negative", UJ_OP_RANGE, S(UJ_INT32),
         (Arg){"loop", &neg, 1}, 1, n->i32, NO, NO, NO);
  expect(ctx, __LINE__, "RANGE takes an axis kind and an axis number", UJ_OP_RANGE, S(UJ_INT32),
         arg_none(), 1, n->i32, NO, NO, NO);
  ACCEPT(END, S(UJ_VOID), 2, r, n->st, NO);
  ACCEPT(END, S(UJ_VOID), 3, r, n->st, n->st);
  REJECT("END must close a RANGE, not CONST", END, S(UJ_VOID), 2, n->i32, n->st, NO);
  REJECT("END body must be effects (void), not int32", END, S(UJ_VOID), 2, r, n->i32, NO);
  REJECT("END takes at least 2 sources, not 1", END, S(UJ_VOID), 1, r, NO, NO);
}

static void test_vector_ops(Ctx *ctx, const Nodes *n) {
  static const int64_t lane1 = 1, lane4 = 4, neg = -1;
  ACCEPT(VECTORIZE, V(UJ_INT32, 3), 3, n->i32, n->i32, n->i32);
  ACCEPT(VECTORIZE, S(UJ_FLOAT32), 1, n->f32, NO, NO);
  ACCEPT(VECTORIZE, V(UJ_BOOL, 2), 2, n->b, n->b, NO);
  REJECT("sources have different dtypes int32 and int8", VECTORIZE, V(UJ_INT32, 2), 2, n->i32, n->i8, NO);
  REJECT("VECTORIZE takes scalar values, not int32x4", VECTORIZE, V(UJ_INT32, 4), 1, n->v4, NO, NO);
  REJECT("VECTORIZE takes scalar values, not float32*", VECTORIZE, V(UJ_FLOAT32, 1), 1, n->pf, NO, NO);
  REJECT("VECTORIZE must have dtype int32x2, not int32x3", VECTORIZE, V(UJ_INT32, 3), 2, n->i32, n->i32, NO);
  expect(ctx, __LINE__, NULL, UJ_OP_GEP, S(UJ_INT32), ints1(&lane1), 1, n->v4, NO, NO, NO);
  expect(ctx, __LINE__, "GEP lane 4 is outside int32x4", UJ_OP_GEP, S(UJ_INT32), ints1(&lane4), 1, n->v4, NO, NO, NO);
  expect(ctx, __LINE__, "GEP lane -1 is outside", UJ_OP_GEP, S(UJ_INT32), ints1(&neg), 1, n->v4, NO, NO, NO);
  expect(ctx, __LINE__, "GEP takes a vector value, not float32*", UJ_OP_GEP, S(UJ_FLOAT32), ints1(&lane1), 1,
         n->pf, NO, NO, NO);
  expect(ctx, __LINE__, "GEP must have dtype int32, not int32x4", UJ_OP_GEP, V(UJ_INT32, 4), ints1(&lane1), 1,
         n->v4, NO, NO, NO);
  expect(ctx, __LINE__, "GEP takes one lane number", UJ_OP_GEP, S(UJ_INT32), arg_none(), 1, n->v4, NO, NO, NO);
}

/* RESHAPE .. REDUCE: each rule accepts its arg against the source's shape
 * and rejects a bad one naming both shapes (the text form's parser reports
 * the same messages with a position). */
static void test_tensor_ops(Ctx *ctx) {
  static const struct {
    const char *text, *want; /* want NULL: accepted */
  } cases[] = {
    {"(RESHAPE 3 2 %t)", NULL},
    {"(RESHAPE 6 1 1 %t)", NULL},
    {"(RESHAPE 4 2 %t)", "RESHAPE of (2, 3) to (4, 2): 6 elements are not 8"},
    {"(RESHAPE -6 -1 %t)", "RESHAPE to (-6, -1): a negative size"},
    {"(EXPAND 2 3 5 (RESHAPE 2 3 1 %t))", NULL},
    {"(EXPAND 4 3 %t)", "EXPAND of (2, 3) to (4, 3): only axes of size 1 expand"},
    {"(EXPAND 2 3 1 %t)", "EXPAND of (2, 3) to (2, 3, 1)"},
    {"(PERMUTE 1 0 %t)", NULL},
    {"(PERMUTE 0 %t)", "PERMUTE of (2, 3) by (0,): the order must name each of its 2 axes once"},
    {"(PERMUTE 1 1 %t)", "axis 1 is given twice"},
    {"(PERMUTE 0 2 %t)", "axis 2 is not an axis of shape (2, 3)"},
    {"(FLIP 1 %t)", NULL},
    {"(FLIP %t)", NULL},
    {"(FLIP 5 %t)", "axis 5 is not an axis of shape (2, 3)"},
    {"(PAD 0 1 2 3 %t)", NULL},
    {"(PAD 0 1 %t)", "PAD of (2, 3) takes 2 (lo, hi) pairs, not 2 ints"},
    {"(PAD 0 -1 0 0 %t)", "PAD of (2, 3): (0, -1) is out of range for axis 0"},
    {"(SHRINK 0 2 1 3 %t)", NULL},
    {"(SHRINK 0 2 2 1 %t)", "SHRINK of (2, 3): (2, 1) is out of range for axis 1"},
    {"(SHRINK 0 3 0 3 %t)", "SHRINK of (2, 3): (0, 3) is out of range for axis 0"},
    {"(REDUCE ADD 1 %t)", NULL},
    {"(REDUCE MAX 0 1 %t)", NULL},
    {"(REDUCE SUB 0 %t)", "REDUCE by 'SUB': it reduces by ADD, MULACC, MUL or MAX"},
    {"(REDUCE ADD 2 %t)", "axis 2 is not an axis of shape (2, 3)"},
    {"(REDUCE ADD (RESHAPE 2 3 (BUFFER:bool* 1 6 CPU)))", "REDUCE ADD does not take dtype bool"},
    {"(REDUCE ADD (CONST:int32 1) (CONST:int32 4))", "REDUCE source 1 is a CONST, not a RANGE"},
    {"(REDUCE ADD 0 (CONST:int32 1) (RANGE loop 0 (CONST:int32 4)))", "REDUCE over RANGEs takes no axes"},
    {"(ADD %t (PERMUTE 1 0 %t))", "sources have different shapes (2, 3) and (3, 2)"},
    {"(WHERE (CMPLT %t %t) %t (FLIP 0 (RESHAPE 3 2 %t)))", "sources have different shapes (2, 3) and (3, 2)"},
    {"(RESHAPE 3 2 (PARAM:float32* 0))", "RESHAPE takes a value or a BUFFER, not float32*"},
    {"(GATHER 1 %t (RESHAPE 2 5 (BUFFER:int8* 1 10 CPU)))", NULL},
    {"(GATHER 0 %t (RESHAPE 1 3 (BUFFER:int64* 1 3 CPU)))", NULL},
    {"(GATHER 1 %t (RESHAPE 3 1 (BUFFER:int32* 1 3 CPU)))", "GATHER index of shape (3, 1) does not fit (2, 3) off axis 1"},
    {"(GATHER 1 %t (RESHAPE 6 (BUFFER:int32* 1 6 CPU)))", "GATHER index of shape (6,) does not fit (2, 3) off axis 1"},
    {"(GATHER 2 %t (RESHAPE 2 3 (BUFFER:int32* 1 6 CPU)))", "GATHER takes one axis of (2, 3)"},
    {"(GATHER 0 %t %t)", "GATHER index must be an integer tensor, not float32"},
    {"(SCATTER 1 7 %t (RESHAPE 2 3 (BUFFER:uint8* 1 6 CPU)))", NULL},
    {"(SCATTER 1 %t (RESHAPE 2 3 (BUFFER:int32* 1 6 CPU)))", "SCATTER takes an axis of (2, 3) and a size"},
    {"(SCATTER 0 4 %t (RESHAPE 3 2 (BUFFER:int32* 1 6 CPU)))", "SCATTER index of shape (3, 2) is not the values' (2, 3)"},
    {"(SCATTER 0 4 (RESHAPE 2 3 (BUFFER:bool* 1 6 CPU)) (RESHAPE 2 3 (BUFFER:int32* 2 6 CPU)))", "SCATTER adds numbers, not bool"},
    {"(STORE_ADD (INDEX (PARAM:float32* 0) (CONST:int32 0)) (CONST:float32 1.0))", NULL},
    {"(STORE_ADD (INDEX (ALLOC:float32*local 0 4) (CONST:int32 0)) (CONST:float32 1.0))", "STORE_ADD adds into global memory, not float32*local"},
    {"(STORE_ADD (INDEX (PARAM:bool* 0) (CONST:int32 0)) (CONST:bool true))", "STORE_ADD does not add bool"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char text[512];
    snprintf(text, sizeof text, "%%t = (RESHAPE 2 3 (BUFFER:float32* 0 6 CPU))\n%s", cases[i].text);
    const UOp *u = uj_parse(ctx, text, "t");
    if (!cases[i].want) CHECK(u != NULL, "%s: %s", cases[i].text, uj_error(ctx));
    else CHECK(!u && strstr(uj_error(ctx), cases[i].want), "%s: want '%s', got '%s'", cases[i].text, cases[i].want,
               uj_error(ctx));
  }
  const UOp *r = uj_parse(ctx, "(PAD 1 2 0 0 (RESHAPE 2 3 (BUFFER:float32* 0 6 CPU)))", "t");
  CHECK(r && r->ndim == 2 && r->shape[0] == 5 && r->shape[1] == 3 && r->dtype.scalar == UJ_FLOAT32,
        "PAD shape (5, 3), float32");
  r = uj_parse(ctx, "(REDUCE ADD 0 (RESHAPE 2 3 (BUFFER:float32* 0 6 CPU)))", "t");
  CHECK(r && r->ndim == 2 && r->shape[0] == 1 && r->shape[1] == 3, "REDUCE keeps the axis as 1");
}

static void test_bad_calls_and_graphs(Ctx *ctx, const Nodes *n) {
  CHECK(!uj_uop_new(ctx, UJ_OP_COUNT, S(UJ_INT32), NULL, 0, arg_none()) &&
            strstr(uj_error(ctx), "unknown op"),
        "unknown op: %s", uj_error(ctx));
  const UOp *src[2] = {n->i32, NULL};
  CHECK(!uj_uop_new(ctx, UJ_OP_ADD, S(UJ_INT32), src, 2, arg_none()) &&
            strstr(uj_error(ctx), "ADD: source 1 is NULL"),
        "NULL source: %s", uj_error(ctx));
  static const int64_t one = 1;
  DType bad_dtypes[] = {
      {UJ_SCALAR_COUNT, 0, 1}, {UJ_INT32, 0, 0}, {UJ_INT32, UJ_AS_COUNT, 1}, {UJ_VOID, 0, 2}};
  for (size_t i = 0; i < sizeof bad_dtypes / sizeof *bad_dtypes; i++)
    CHECK(!uj_uop_new(ctx, UJ_OP_CONST, bad_dtypes[i], NULL, 0, ints1(&one)) &&
              strstr(uj_error(ctx), "CONST: invalid dtype"),
          "bad dtype %zu: %s", i, uj_error(ctx));
  /* a bad node deep in a graph built unchecked; the checker names it */
  const UOp *bad = uop_binary(ctx, UJ_OP_ADD, n->i32, n->f32);
  const UOp *e = bad;
  for (int i = 0; i < 1000; i++) e = uop_binary(ctx, UJ_OP_MUL, e, n->i32);
  CHECK(!spec_check_graph(ctx, e) && strstr(uj_error(ctx), "ADD: sources have different dtypes"),
        "deep bad node: %s", uj_error(ctx));
  CHECK(uj_check(ctx, e) == UJ_ERR_SPEC, "uj_check says SPEC");
  CHECK(uj_check(ctx, NULL) == UJ_ERR_ARG, "uj_check of NULL");
  CHECK(uj_check(ctx, n->st) == UJ_OK, "a good graph");
  /* an arity the constructor would refuse, found by the graph checker */
  const UOp *lone = uop_new(ctx, UJ_OP_ADD, S(UJ_INT32), &n->i32, 1, arg_none());
  CHECK(!spec_check_graph(ctx, lone) && strstr(uj_error(ctx), "ADD takes 2 sources, not 1"),
        "arity: %s", uj_error(ctx));
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  Nodes n = nodes_new(ctx);
  test_program_ops(ctx, &n);
  test_define_var(ctx);
  test_memory_ops(ctx, &n);
  test_unary_ops(ctx, &n);
  test_binary_ops(ctx, &n);
  test_ternary_ops(ctx, &n);
  test_loop_ops(ctx, &n);
  test_vector_ops(ctx, &n);
  test_tensor_ops(ctx);
  test_bad_calls_and_graphs(ctx, &n);
  uj_ctx_free(ctx);
  return check_report("test_uop_spec");
}
