/* test_eval.c — the reference evaluator on integer and bool values: every
 * integer ALU op on every integer dtype with hand-computed results,
 * including the corner cases of docs/semantics.md (wrap-around, x/0 = all
 * ones, x%0 = x, MIN/-1 = MIN, MIN%-1 = 0, shifts modulo the width), bool
 * ops, integer CASTs and BITCASTs, WHERE, and variables through eval_expr.
 * Floats are in test_eval_float.c, memory in test_eval_mem.c. */
#include <stdint.h>

#include "eval_util.h"

typedef struct IntCase {
  Op op;
  uj_scalar s;
  int64_t a, b, want; /* values as int64; uint64 ones cast from uint64 */
} IntCase;

#define U64(x) ((int64_t)(uint64_t)(x))

static const IntCase int_cases[] = {
    /* int8 */
    {UJ_OP_ADD, UJ_INT8, 127, 1, -128},
    {UJ_OP_SUB, UJ_INT8, -128, 1, 127},
    {UJ_OP_MUL, UJ_INT8, 16, 16, 0},
    {UJ_OP_MUL, UJ_INT8, 100, 3, 44},
    {UJ_OP_IDIV, UJ_INT8, 7, 2, 3},
    {UJ_OP_IDIV, UJ_INT8, -7, 2, -3},
    {UJ_OP_IDIV, UJ_INT8, 7, -2, -3},
    {UJ_OP_IDIV, UJ_INT8, -128, -1, -128},
    {UJ_OP_IDIV, UJ_INT8, 5, 0, -1},
    {UJ_OP_IDIV, UJ_INT8, -5, 0, -1},
    {UJ_OP_MOD, UJ_INT8, 7, 3, 1},
    {UJ_OP_MOD, UJ_INT8, -7, 3, -1},
    {UJ_OP_MOD, UJ_INT8, 7, -3, 1},
    {UJ_OP_MOD, UJ_INT8, -128, -1, 0},
    {UJ_OP_MOD, UJ_INT8, 5, 0, 5},
    {UJ_OP_MOD, UJ_INT8, -5, 0, -5},
    {UJ_OP_MAX, UJ_INT8, -3, 2, 2},
    {UJ_OP_MAX, UJ_INT8, -128, -127, -127},
    {UJ_OP_CMPLT, UJ_INT8, -1, 1, 1},
    {UJ_OP_CMPLT, UJ_INT8, 1, -1, 0},
    {UJ_OP_CMPLT, UJ_INT8, 3, 3, 0},
    {UJ_OP_CMPNE, UJ_INT8, 3, 3, 0},
    {UJ_OP_CMPNE, UJ_INT8, -3, 3, 1},
    {UJ_OP_CMPEQ, UJ_INT8, -3, -3, 1},
    {UJ_OP_AND, UJ_INT8, -1, 5, 5},
    {UJ_OP_OR, UJ_INT8, -128, 1, -127},
    {UJ_OP_XOR, UJ_INT8, -1, 5, -6},
    {UJ_OP_SHL, UJ_INT8, 1, 7, -128},
    {UJ_OP_SHL, UJ_INT8, 1, 8, 1},
    {UJ_OP_SHL, UJ_INT8, 1, 9, 2},
    {UJ_OP_SHL, UJ_INT8, 3, -1, -128},
    {UJ_OP_SHR, UJ_INT8, -128, 1, -64},
    {UJ_OP_SHR, UJ_INT8, -1, 7, -1},
    {UJ_OP_SHR, UJ_INT8, 64, 9, 32},
    {UJ_OP_NEG, UJ_INT8, -128, 0, -128},
    {UJ_OP_NEG, UJ_INT8, 5, 0, -5},
    /* uint8 */
    {UJ_OP_ADD, UJ_UINT8, 255, 1, 0},
    {UJ_OP_SUB, UJ_UINT8, 0, 1, 255},
    {UJ_OP_MUL, UJ_UINT8, 16, 17, 16},
    {UJ_OP_IDIV, UJ_UINT8, 255, 2, 127},
    {UJ_OP_IDIV, UJ_UINT8, 5, 0, 255},
    {UJ_OP_MOD, UJ_UINT8, 255, 7, 3},
    {UJ_OP_MOD, UJ_UINT8, 5, 0, 5},
    {UJ_OP_MAX, UJ_UINT8, 200, 100, 200},
    {UJ_OP_CMPLT, UJ_UINT8, 100, 200, 1},
    {UJ_OP_CMPLT, UJ_UINT8, 200, 100, 0},
    {UJ_OP_SHR, UJ_UINT8, 200, 1, 100},
    {UJ_OP_SHL, UJ_UINT8, 255, 1, 254},
    {UJ_OP_SHL, UJ_UINT8, 1, 8, 1},
    {UJ_OP_NEG, UJ_UINT8, 1, 0, 255},
    {UJ_OP_XOR, UJ_UINT8, 0xf0, 0xff, 0x0f},
    {UJ_OP_AND, UJ_UINT8, 0xf0, 0x3c, 0x30},
    {UJ_OP_OR, UJ_UINT8, 0xf0, 0x0f, 0xff},
    {UJ_OP_CMPEQ, UJ_UINT8, 255, 255, 1},
    /* int16, uint16 */
    {UJ_OP_ADD, UJ_INT16, 32767, 1, -32768},
    {UJ_OP_IDIV, UJ_INT16, -32768, -1, -32768},
    {UJ_OP_MOD, UJ_INT16, -32768, -1, 0},
    {UJ_OP_SHL, UJ_INT16, 1, 16, 1},
    {UJ_OP_SHR, UJ_INT16, -32768, 15, -1},
    {UJ_OP_MUL, UJ_INT16, 256, 256, 0},
    {UJ_OP_SUB, UJ_UINT16, 0, 1, 65535},
    {UJ_OP_MUL, UJ_UINT16, 256, 256, 0},
    {UJ_OP_SHR, UJ_UINT16, 0x8000, 15, 1},
    {UJ_OP_IDIV, UJ_UINT16, 1, 0, 65535},
    {UJ_OP_MAX, UJ_UINT16, 65535, 0, 65535},
    {UJ_OP_CMPNE, UJ_UINT16, 1, 2, 1},
    /* int32 */
    {UJ_OP_ADD, UJ_INT32, INT32_MAX, 1, INT32_MIN},
    {UJ_OP_SUB, UJ_INT32, INT32_MIN, 1, INT32_MAX},
    {UJ_OP_MUL, UJ_INT32, 65536, 65536, 0},
    {UJ_OP_MUL, UJ_INT32, -3, 7, -21},
    {UJ_OP_IDIV, UJ_INT32, INT32_MIN, -1, INT32_MIN},
    {UJ_OP_MOD, UJ_INT32, INT32_MIN, -1, 0},
    {UJ_OP_IDIV, UJ_INT32, 100, 0, -1},
    {UJ_OP_MOD, UJ_INT32, 100, 0, 100},
    {UJ_OP_IDIV, UJ_INT32, -9, 4, -2},
    {UJ_OP_MOD, UJ_INT32, -9, 4, -1},
    {UJ_OP_MOD, UJ_INT32, 9, -4, 1},
    {UJ_OP_SHL, UJ_INT32, 1, 31, INT32_MIN},
    {UJ_OP_SHL, UJ_INT32, 1, 32, 1},
    {UJ_OP_SHL, UJ_INT32, 1, 33, 2},
    {UJ_OP_SHL, UJ_INT32, 1, -1, INT32_MIN},
    {UJ_OP_SHR, UJ_INT32, -1, 31, -1},
    {UJ_OP_SHR, UJ_INT32, -16, 2, -4},
    {UJ_OP_SHR, UJ_INT32, 16, 34, 4},
    {UJ_OP_MAX, UJ_INT32, INT32_MIN, -1, -1},
    {UJ_OP_CMPLT, UJ_INT32, INT32_MIN, INT32_MAX, 1},
    {UJ_OP_NEG, UJ_INT32, INT32_MIN, 0, INT32_MIN},
    {UJ_OP_XOR, UJ_INT32, 0x0f0f, 0x00ff, 0x0ff0},
    /* uint32 */
    {UJ_OP_SUB, UJ_UINT32, 0, 1, 4294967295},
    {UJ_OP_IDIV, UJ_UINT32, 7, 0, 4294967295},
    {UJ_OP_MOD, UJ_UINT32, 7, 0, 7},
    {UJ_OP_SHR, UJ_UINT32, 0x80000000, 31, 1},
    {UJ_OP_SHR, UJ_UINT32, 0x80000000, 32, 0x80000000},
    {UJ_OP_ADD, UJ_UINT32, 4294967295, 2, 1},
    {UJ_OP_CMPLT, UJ_UINT32, 1, 4294967295, 1},
    {UJ_OP_IDIV, UJ_UINT32, 4294967295, 2, 2147483647},
    {UJ_OP_NEG, UJ_UINT32, 1, 0, 4294967295},
    /* int64 */
    {UJ_OP_ADD, UJ_INT64, INT64_MAX, 1, INT64_MIN},
    {UJ_OP_SUB, UJ_INT64, INT64_MIN, 1, INT64_MAX},
    {UJ_OP_MUL, UJ_INT64, INT64_MIN, -1, INT64_MIN},
    {UJ_OP_IDIV, UJ_INT64, INT64_MIN, -1, INT64_MIN},
    {UJ_OP_MOD, UJ_INT64, INT64_MIN, -1, 0},
    {UJ_OP_IDIV, UJ_INT64, -7, 2, -3},
    {UJ_OP_MOD, UJ_INT64, -7, 2, -1},
    {UJ_OP_IDIV, UJ_INT64, 42, 0, -1},
    {UJ_OP_MOD, UJ_INT64, -42, 0, -42},
    {UJ_OP_SHL, UJ_INT64, 1, 63, INT64_MIN},
    {UJ_OP_SHL, UJ_INT64, 1, 64, 1},
    {UJ_OP_SHR, UJ_INT64, INT64_MIN, 63, -1},
    {UJ_OP_SHR, UJ_INT64, INT64_MIN, 64, INT64_MIN},
    {UJ_OP_MAX, UJ_INT64, INT64_MIN, INT64_MAX, INT64_MAX},
    {UJ_OP_CMPLT, UJ_INT64, INT64_MIN, INT64_MAX, 1},
    {UJ_OP_CMPEQ, UJ_INT64, INT64_MIN, INT64_MIN, 1},
    {UJ_OP_NEG, UJ_INT64, INT64_MIN, 0, INT64_MIN},
    {UJ_OP_AND, UJ_INT64, -1, INT64_MIN, INT64_MIN},
    /* uint64 */
    {UJ_OP_ADD, UJ_UINT64, U64(UINT64_MAX), 1, 0},
    {UJ_OP_SUB, UJ_UINT64, 0, 1, U64(UINT64_MAX)},
    {UJ_OP_IDIV, UJ_UINT64, U64(UINT64_MAX), 2, INT64_MAX},
    {UJ_OP_IDIV, UJ_UINT64, 9, 0, U64(UINT64_MAX)},
    {UJ_OP_MOD, UJ_UINT64, U64(UINT64_MAX), 10, 5},
    {UJ_OP_MOD, UJ_UINT64, 9, 0, 9},
    {UJ_OP_CMPLT, UJ_UINT64, 1, U64(UINT64_MAX), 1},
    {UJ_OP_CMPLT, UJ_UINT64, U64(UINT64_MAX), 1, 0},
    {UJ_OP_MAX, UJ_UINT64, U64(UINT64_MAX), 1, U64(UINT64_MAX)},
    {UJ_OP_SHR, UJ_UINT64, U64(UINT64_MAX), 63, 1},
    {UJ_OP_MUL, UJ_UINT64, U64(1ull << 32), U64(1ull << 32), 0},
    {UJ_OP_NEG, UJ_UINT64, 1, 0, U64(UINT64_MAX)},
    {UJ_OP_XOR, UJ_UINT64, U64(UINT64_MAX), 1, U64(UINT64_MAX - 1)},
};

static void test_int_ops(Ctx *ctx) {
  for (size_t i = 0; i < sizeof int_cases / sizeof *int_cases; i++) {
    const IntCase *c = &int_cases[i];
    const UOp *a = k_int(ctx, c->s, c->a), *b = k_int(ctx, c->s, c->b);
    const UOp *e =
        op_has(c->op, OPF_UNARY) ? alu(ctx, c->op, a, NULL, NULL) : alu(ctx, c->op, a, b, NULL);
    uj_scalar out = op_has(c->op, OPF_COMPARE) ? UJ_BOOL : c->s;
    uint64_t got = eval_word(ctx, e), want = word_from_int(out, c->want);
    CHECK(got == want, "case %zu: %s %s(%lld, %lld) = %llx, want %llx", i, scalar_table[c->s].name,
          op_table[c->op].name, (long long)c->a, (long long)c->b, (unsigned long long)got,
          (unsigned long long)want);
  }
}

static void test_mulacc_int(Ctx *ctx) {
  const UOp *e = alu(ctx, UJ_OP_MULACC, k_int(ctx, UJ_INT8, 10), k_int(ctx, UJ_INT8, 13),
                     k_int(ctx, UJ_INT8, 0));
  CHECK(eval_word(ctx, e) == word_from_int(UJ_INT8, -126), "int8 10*13+0 wraps to -126");
  e = alu(ctx, UJ_OP_MULACC, k_int(ctx, UJ_UINT64, INT64_MIN), k_int(ctx, UJ_UINT64, 2),
          k_int(ctx, UJ_UINT64, 5));
  CHECK(eval_word(ctx, e) == 5, "uint64 2^63*2+5 = 5");
  e = alu(ctx, UJ_OP_MULACC, k_int(ctx, UJ_INT32, -3), k_int(ctx, UJ_INT32, 4),
          k_int(ctx, UJ_INT32, 2));
  CHECK(eval_word(ctx, e) == word_from_int(UJ_INT32, -10), "-3*4+2 = -10");
}

/* Truth tables of the bool ops, row (a, b) = (0,0) (0,1) (1,0) (1,1). */
static void test_bool_ops(Ctx *ctx) {
  static const struct {
    Op op;
    uint64_t want[4];
  } tables[] = {
      {UJ_OP_AND, {0, 0, 0, 1}},   {UJ_OP_OR, {0, 1, 1, 1}},    {UJ_OP_XOR, {0, 1, 1, 0}},
      {UJ_OP_MAX, {0, 1, 1, 1}},   {UJ_OP_CMPLT, {0, 1, 0, 0}}, {UJ_OP_CMPNE, {0, 1, 1, 0}},
      {UJ_OP_CMPEQ, {1, 0, 0, 1}},
  };
  for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
    for (int row = 0; row < 4; row++) {
      const UOp *a = k_int(ctx, UJ_BOOL, row >> 1), *b = k_int(ctx, UJ_BOOL, row & 1);
      uint64_t got = eval_word(ctx, alu(ctx, tables[t].op, a, b, NULL));
      CHECK(got == tables[t].want[row], "bool %s(%d, %d) = %llu", op_table[tables[t].op].name,
            row >> 1, row & 1, (unsigned long long)got);
    }
  }
}

static void test_where(Ctx *ctx) {
  const UOp *t = k_int(ctx, UJ_BOOL, 1), *f = k_int(ctx, UJ_BOOL, 0);
  const UOp *a = k_int(ctx, UJ_INT32, 7), *b = k_int(ctx, UJ_INT32, -9);
  CHECK(eval_word(ctx, alu(ctx, UJ_OP_WHERE, t, a, b)) == 7, "WHERE true");
  CHECK(eval_word(ctx, alu(ctx, UJ_OP_WHERE, f, a, b)) == word_from_int(UJ_INT32, -9),
        "WHERE false");
  const UOp *x = k_float(ctx, UJ_FLOAT32, 1.5), *y = k_float(ctx, UJ_FLOAT32, -2.0);
  CHECK(w2d(eval_word(ctx, alu(ctx, UJ_OP_WHERE, f, x, y))) == -2.0, "WHERE float false");
  CHECK(eval_word(ctx, alu(ctx, UJ_OP_WHERE, t, f, t)) == 0, "WHERE of bools");
}

typedef struct CastCase {
  uj_scalar from, to;
  int64_t in, want;
} CastCase;

static const CastCase int_casts[] = {
    {UJ_INT32, UJ_INT8, 300, 44},
    {UJ_INT32, UJ_UINT8, -1, 255},
    {UJ_UINT8, UJ_INT8, 255, -1},
    {UJ_INT8, UJ_UINT32, -1, 4294967295},
    {UJ_INT8, UJ_UINT64, -1, -1},
    {UJ_UINT64, UJ_INT64, -1, -1},
    {UJ_UINT32, UJ_INT64, 4294967295, 4294967295},
    {UJ_INT32, UJ_BOOL, 5, 1},
    {UJ_INT32, UJ_BOOL, 0, 0},
    {UJ_INT64, UJ_BOOL, 256, 1},
    {UJ_INT8, UJ_BOOL, -128, 1},
    {UJ_BOOL, UJ_INT32, 1, 1},
    {UJ_BOOL, UJ_UINT64, 1, 1},
    {UJ_INT64, UJ_INT16, 0x12345678, 0x5678},
    {UJ_INT64, UJ_INT16, 0x18000, -32768},
    {UJ_UINT16, UJ_INT32, 65535, 65535},
    {UJ_INT16, UJ_UINT16, -2, 65534},
};

static void test_int_casts(Ctx *ctx) {
  for (size_t i = 0; i < sizeof int_casts / sizeof *int_casts; i++) {
    const CastCase *c = &int_casts[i];
    const UOp *e = mk(ctx, UJ_OP_CAST, dt_scalar(c->to), k_int(ctx, c->from, c->in), NULL, NULL);
    uint64_t got = eval_word(ctx, e), want = word_from_int(c->to, c->want);
    CHECK(got == want, "CAST %s %lld to %s = %llx, want %llx", scalar_table[c->from].name,
          (long long)c->in, scalar_table[c->to].name, (unsigned long long)got,
          (unsigned long long)want);
  }
}

static void test_int_bitcasts(Ctx *ctx) {
  const UOp *e = mk(ctx, UJ_OP_BITCAST, dt_scalar(UJ_UINT32), k_int(ctx, UJ_INT32, -1), NULL, NULL);
  CHECK(eval_word(ctx, e) == 0xffffffffu, "BITCAST int32 -1 to uint32");
  e = mk(ctx, UJ_OP_BITCAST, dt_scalar(UJ_INT8), k_int(ctx, UJ_UINT8, 255), NULL, NULL);
  CHECK(eval_word(ctx, e) == word_from_int(UJ_INT8, -1), "BITCAST uint8 255 to int8");
  e = mk(ctx, UJ_OP_BITCAST, dt_scalar(UJ_INT64), k_int(ctx, UJ_UINT64, INT64_MIN), NULL, NULL);
  CHECK(eval_word(ctx, e) == (uint64_t)INT64_MIN, "BITCAST uint64 2^63 to int64");
}

/* Variables: bound by name through eval_expr; the same word as consts. */
static void test_vars(Ctx *ctx) {
  const UOp *x = uj_var(ctx, dt_scalar(UJ_INT32), "x", -100, 100);
  const UOp *y = uj_var(ctx, dt_scalar(UJ_INT32), "y", 1, 10);
  const UOp *e = alu(ctx, UJ_OP_ADD, alu(ctx, UJ_OP_MUL, x, k_int(ctx, UJ_INT32, 3), NULL),
                     alu(ctx, UJ_OP_MOD, x, y, NULL), NULL);
  const char *names[] = {"x", "y"};
  for (int64_t xv = -100; xv <= 100; xv += 7) {
    for (int64_t yv = 1; yv <= 10; yv += 3) {
      uint64_t got = 0;
      int64_t vals[] = {xv, yv};
      CHECK(eval_expr(ctx, e, names, vals, 2, &got), "eval: %s", uj_error(ctx));
      CHECK(got == word_from_int(UJ_INT32, xv * 3 + xv % yv), "x=%lld y=%lld", (long long)xv,
            (long long)yv);
    }
  }
  /* a uint64 variable holds its value zero-extended */
  const UOp *u = uj_var(ctx, dt_scalar(UJ_UINT64), "u", 0, INT64_MAX);
  uint64_t got = 0;
  int64_t big = INT64_MAX;
  CHECK(eval_expr(ctx, alu(ctx, UJ_OP_ADD, u, u, NULL), (const char *[]){"u"}, &big, 1, &got),
        "eval: %s", uj_error(ctx));
  CHECK(got == UINT64_MAX - 1, "uint64 (2^63-1)*2 = %llx", (unsigned long long)got);
}

static void test_var_errors(Ctx *ctx) {
  const UOp *x = uj_var(ctx, dt_scalar(UJ_INT32), "x", 0, 9);
  const UOp *e = alu(ctx, UJ_OP_ADD, x, k_int(ctx, UJ_INT32, 1), NULL);
  uint64_t got = 0;
  CHECK(!eval_expr(ctx, e, NULL, NULL, 0, &got), "unbound variable must fail");
  CHECK(strstr(uj_error(ctx), "variable x is not bound") != NULL, "message: %s", uj_error(ctx));
  CHECK(strstr(uj_error(ctx), "DEFINE_VAR") != NULL, "message names the node: %s", uj_error(ctx));
  int64_t v = 10;
  CHECK(!eval_expr(ctx, e, (const char *[]){"x"}, &v, 1, &got), "x=10 outside [0, 9]");
  CHECK(strstr(uj_error(ctx), "outside [0, 9]") != NULL, "message: %s", uj_error(ctx));
  v = -1;
  CHECK(!eval_expr(ctx, e, (const char *[]){"x"}, &v, 1, &got), "x=-1 outside [0, 9]");
  v = 9;
  CHECK(eval_expr(ctx, e, (const char *[]){"x"}, &v, 1, &got) && got == 10, "x=9 is fine");
  /* rebinding replaces */
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_var(ev, "x", 1) && eval_bind_var(ev, "x", 4), "bind twice");
  CHECK(eval_run(ev, e) && eval_value(ev, e)[0] == 5, "the second binding holds");
  CHECK(eval_value(ev, x)[0] == 4, "sources keep their values");
  CHECK(eval_value(ev, k_int(ctx, UJ_INT32, 77)) == NULL, "a node not in the graph");
  eval_free(ev);
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_int_ops(ctx);
  test_mulacc_int(ctx);
  test_bool_ops(ctx);
  test_where(ctx);
  test_int_casts(ctx);
  test_int_bitcasts(ctx);
  test_vars(ctx);
  test_var_errors(ctx);
  uj_ctx_free(ctx);
  return check_report("test_eval");
}
