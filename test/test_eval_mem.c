/* test_eval_mem.c — the reference evaluator on memory and graphs: PARAM and
 * BUFFER bindings, INDEX/LOAD/STORE with and without gates, the memory
 * layout of every dtype, vectors lane by lane, the ordering rule (LOADs see
 * memory from before the evaluation; STOREs land in SINK order), errors
 * (out of bounds, unbound, CALL, bad graphs) and a 1,000,000-deep chain. */
#include <stdint.h>
#include <stdlib.h>

#include "eval_util.h"

static const UOp *param(Ctx *ctx, int64_t slot, DType dt) {
  return uj_uop_new(ctx, UJ_OP_PARAM, dt, NULL, 0, (Arg){NULL, &slot, 1});
}
static const UOp *buffer(Ctx *ctx, int64_t id, int64_t size, DType dt) {
  int64_t ints[2] = {id, size};
  return uj_uop_new(ctx, UJ_OP_BUFFER, dt, NULL, 0, (Arg){"CPU", ints, 2});
}
static const UOp *idx(Ctx *ctx, const UOp *p, int64_t i, const UOp *gate) {
  return mk(ctx, UJ_OP_INDEX, p->dtype, p, k_int(ctx, UJ_INT32, i), gate);
}
static const UOp *load(Ctx *ctx, const UOp *p, const UOp *alt) {
  return mk(ctx, UJ_OP_LOAD, dt_base(p->dtype), p, alt, NULL);
}
static const UOp *store(Ctx *ctx, const UOp *p, const UOp *v) {
  return mk(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), p, v, NULL);
}
static const UOp *sink(Ctx *ctx, const UOp *const *src, size_t n) {
  return uj_uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), src, n, arg_none());
}
static DType ptr(uj_scalar s, unsigned lanes) { return uj_dtype_ptr(s, lanes, UJ_AS_GLOBAL); }

/* Runs root with slots 0 and 1 bound; true when the run succeeds. */
static bool run2(Ctx *ctx, const UOp *root, void *m0, size_t b0, void *m1, size_t b1) {
  Eval *ev = eval_new(ctx);
  bool ok = eval_bind_param(ev, 0, m0, b0) && (!m1 || eval_bind_param(ev, 1, m1, b1)) &&
            eval_run(ev, root);
  eval_free(ev);
  return ok;
}

static void test_load_store(Ctx *ctx) {
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  const UOp *pi = param(ctx, 0, ptr(UJ_FLOAT32, 1)), *po = param(ctx, 1, ptr(UJ_FLOAT32, 1));
  const UOp *st[4], *loads[4];
  for (int i = 0; i < 4; i++) {
    loads[i] = load(ctx, idx(ctx, pi, i, NULL), NULL);
    const UOp *v =
        alu(ctx, UJ_OP_MULACC, loads[i], k_float(ctx, UJ_FLOAT32, 2), k_float(ctx, UJ_FLOAT32, 1));
    st[i] = store(ctx, idx(ctx, po, i, NULL), v);
  }
  const UOp *root = sink(ctx, st, 4);
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, in, sizeof in) && eval_bind_param(ev, 1, out, sizeof out), "bind");
  CHECK(eval_run(ev, root), "run: %s", uj_error(ctx));
  CHECK(out[0] == 3 && out[1] == 5 && out[2] == 7 && out[3] == 9, "out = %g %g %g %g", out[0],
        out[1], out[2], out[3]);
  CHECK(eval_value(ev, loads[2]) && w2d(eval_value(ev, loads[2])[0]) == 3.0, "LOAD value");
  CHECK(eval_value(ev, root) == NULL && eval_value(ev, st[0]) == NULL, "void nodes: no words");
  CHECK(eval_value(ev, pi) == NULL, "pointers: no words");
  eval_free(ev);
}

/* LOADs see memory from before the run; a LOAD of an element already
 * stored to is an error, so two crossed stores do not swap: they fail. */
static void test_swap_and_order(Ctx *ctx) {
  int32_t m[2] = {10, 20};
  const UOp *p = param(ctx, 0, ptr(UJ_INT32, 1));
  const UOp *a = idx(ctx, p, 0, NULL), *b = idx(ctx, p, 1, NULL);
  const UOp *sw[2] = {store(ctx, a, load(ctx, b, NULL)), store(ctx, b, load(ctx, a, NULL))};
  CHECK(!run2(ctx, sink(ctx, sw, 2), m, sizeof m, NULL, 0) &&
            strstr(uj_error(ctx), "LOAD: element 0 was stored earlier in this run"),
        "swap: %s", uj_error(ctx));
  CHECK(m[0] == 10 && m[1] == 20, "a failed swap writes nothing: %d %d", m[0], m[1]);
  /* an element read, then written, in one run: x = x + 1 is fine */
  const UOp *inc = store(ctx, a, uop_binary(ctx, UJ_OP_ADD, load(ctx, a, NULL), k_int(ctx, UJ_INT32, 1)));
  CHECK(run2(ctx, inc, m, sizeof m, NULL, 0) && m[0] == 11, "x = x + 1: %d %s", m[0], uj_error(ctx));
  /* stores to one element: the later in SINK order wins, nested SINKs too */
  const UOp *s1 = store(ctx, a, k_int(ctx, UJ_INT32, 1)),
            *s2 = store(ctx, a, k_int(ctx, UJ_INT32, 2));
  CHECK(run2(ctx, sink(ctx, (const UOp *[]){s1, s2}, 2), m, sizeof m, NULL, 0) && m[0] == 2,
        "later store wins: %d", m[0]);
  CHECK(run2(ctx, sink(ctx, (const UOp *[]){s2, s1}, 2), m, sizeof m, NULL, 0) && m[0] == 1,
        "later store wins: %d", m[0]);
  const UOp *inner = sink(ctx, (const UOp *[]){s1}, 1);
  CHECK(run2(ctx, sink(ctx, (const UOp *[]){inner, s2}, 2), m, sizeof m, NULL, 0) && m[0] == 2,
        "nested SINK first: %d", m[0]);
  CHECK(run2(ctx, sink(ctx, (const UOp *[]){s2, inner}, 2), m, sizeof m, NULL, 0) && m[0] == 1,
        "nested SINK last: %d", m[0]);
}

static void test_gates(Ctx *ctx) {
  int32_t m[4] = {11, 22, 33, 44};
  const UOp *p = param(ctx, 0, ptr(UJ_INT32, 1));
  const UOp *off = k_int(ctx, UJ_BOOL, 0), *on = k_int(ctx, UJ_BOOL, 1);
  const UOp *alt = k_int(ctx, UJ_INT32, 7);
  /* gate off: alt or zero, even far out of bounds; no write */
  uint64_t got = 0;
  Eval *ev = eval_new(ctx);
  eval_bind_param(ev, 0, m, sizeof m);
  const UOp *l1 = load(ctx, idx(ctx, p, 1000, off), alt),
            *l2 = load(ctx, idx(ctx, p, -5, off), NULL);
  const UOp *l3 = load(ctx, idx(ctx, p, 2, on), alt);
  const UOp *s = store(ctx, idx(ctx, p, 1000, off), k_int(ctx, UJ_INT32, 99));
  const UOp *s0 = store(ctx, idx(ctx, p, 0, off), k_int(ctx, UJ_INT32, 99));
  CHECK(eval_run(ev, sink(ctx, (const UOp *[]){l1, l2, l3, s, s0}, 5)), "run: %s", uj_error(ctx));
  got = eval_value(ev, l1)[0];
  CHECK(got == 7, "gated LOAD gives alt: %llu", (unsigned long long)got);
  CHECK(eval_value(ev, l2)[0] == 0, "gated LOAD without alt gives 0");
  CHECK(eval_value(ev, l3)[0] == 33, "open gate loads");
  CHECK(m[0] == 11, "gated STORE writes nothing");
  /* a gate computed from a variable: i < 4 */
  const UOp *i = uj_var(ctx, dt_scalar(UJ_INT32), "i", 0, 7);
  const UOp *g = alu(ctx, UJ_OP_CMPLT, i, k_int(ctx, UJ_INT32, 4), NULL);
  const UOp *l = load(ctx, mk(ctx, UJ_OP_INDEX, p->dtype, p, i, g), k_int(ctx, UJ_INT32, -1));
  for (int64_t v = 0; v < 8; v++) {
    eval_bind_var(ev, "i", v);
    CHECK(eval_run(ev, l), "run: %s", uj_error(ctx));
    int64_t want = v < 4 ? m[v] : -1;
    CHECK(eval_value(ev, l)[0] == word_from_int(UJ_INT32, want), "i=%lld", (long long)v);
  }
  /* a gate on an inner INDEX holds for the outer one */
  const UOp *outer =
      mk(ctx, UJ_OP_INDEX, p->dtype, idx(ctx, p, 500, off), k_int(ctx, UJ_INT32, 1), NULL);
  CHECK(eval_run(ev, load(ctx, outer, alt)) && eval_value(ev, load(ctx, outer, alt))[0] == 7,
        "inner gate: %s", uj_error(ctx));
  eval_free(ev);
}

static void test_out_of_bounds(Ctx *ctx) {
  int32_t m[4] = {1, 2, 3, 4};
  const UOp *p = param(ctx, 0, ptr(UJ_INT32, 1));
  const UOp *bad[] = {load(ctx, idx(ctx, p, 4, NULL), NULL), load(ctx, idx(ctx, p, -1, NULL), NULL),
                      store(ctx, idx(ctx, p, 4, NULL), k_int(ctx, UJ_INT32, 0))};
  for (int i = 0; i < 3; i++) {
    CHECK(!run2(ctx, bad[i], m, sizeof m, NULL, 0), "case %d must fail", i);
    CHECK(strstr(uj_error(ctx), "out of bounds [0, 4)") != NULL, "message: %s", uj_error(ctx));
    CHECK(strstr(uj_error(ctx), i < 2 ? "LOAD" : "STORE") != NULL, "names the node: %s",
          uj_error(ctx));
  }
  /* an error leaves memory untouched, even stores before it in SINK order */
  const UOp *ok = store(ctx, idx(ctx, p, 0, NULL), k_int(ctx, UJ_INT32, 100));
  CHECK(!run2(ctx, sink(ctx, (const UOp *[]){ok, bad[2]}, 2), m, sizeof m, NULL, 0), "fails");
  CHECK(m[0] == 1, "memory untouched on error: %d", m[0]);
  /* the element count of a pointer PARAM is bytes / element size */
  CHECK(!run2(ctx, load(ctx, idx(ctx, p, 3, NULL), NULL), m, 15, NULL, 0), "15 bytes: 3 ints");
  /* index overflow, uint64 index above int64 */
  const UOp *big = k_word(ctx, UJ_UINT64, UINT64_MAX);
  CHECK(!run2(ctx, load(ctx, mk(ctx, UJ_OP_INDEX, p->dtype, p, big, NULL), NULL), m, sizeof m, NULL,
              0),
        "uint64 index 2^64-1");
  /* a BUFFER's count is its declared size */
  const UOp *b = buffer(ctx, 0, 3, ptr(UJ_INT32, 1));
  Eval *ev = eval_new(ctx);
  CHECK(!eval_bind_buffer(ev, b, m, 8), "too small for 3 elements");
  CHECK(eval_bind_buffer(ev, b, m, sizeof m), "bind: %s", uj_error(ctx));
  CHECK(eval_run(ev, load(ctx, idx(ctx, b, 2, NULL), NULL)), "run: %s", uj_error(ctx));
  CHECK(!eval_run(ev, load(ctx, idx(ctx, b, 3, NULL), NULL)), "element 3 of 3");
  CHECK(strstr(uj_error(ctx), "out of bounds [0, 3)") != NULL, "message: %s", uj_error(ctx));
  eval_free(ev);
}

/* One element of each dtype stored, then its bytes; and loaded back. */
static void test_layout(Ctx *ctx) {
  static const struct {
    uj_scalar s;
    int64_t i; /* the value of an int */
    double f;  /* the value of a float */
    unsigned char bytes[8];
    size_t n;
  } cases[] = {
      {UJ_BOOL, 1, 0, {1}, 1},
      {UJ_INT8, -2, 0, {0xfe}, 1},
      {UJ_UINT8, 200, 0, {200}, 1},
      {UJ_INT16, -2, 0, {0xfe, 0xff}, 2},
      {UJ_UINT16, 0x1234, 0, {0x34, 0x12}, 2},
      {UJ_INT32, 0x01020304, 0, {4, 3, 2, 1}, 4},
      {UJ_UINT32, 0x80000000u, 0, {0, 0, 0, 0x80}, 4},
      {UJ_INT64, -1, 0, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 8},
      {UJ_UINT64, 0x0102030405060708, 0, {8, 7, 6, 5, 4, 3, 2, 1}, 8},
      {UJ_FLOAT16, 0, 1.0, {0x00, 0x3c}, 2},
      {UJ_FLOAT16, 0, -0x1p-24, {0x01, 0x80}, 2},
      {UJ_BFLOAT16, 0, -2.0, {0x00, 0xc0}, 2},
      {UJ_FLOAT32, 0, 1.0, {0, 0, 0x80, 0x3f}, 4},
      {UJ_FLOAT64, 0, 1.0, {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 8},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    uj_scalar s = cases[i].s;
    unsigned char m[8] = {0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa, 0xaa};
    const UOp *p = param(ctx, 0, ptr(s, 1));
    const UOp *v =
        scalar_table[s].is_float ? k_float(ctx, s, cases[i].f) : k_int(ctx, s, cases[i].i);
    CHECK(run2(ctx, store(ctx, idx(ctx, p, 0, NULL), v), m, cases[i].n, NULL, 0), "run: %s",
          uj_error(ctx));
    CHECK(memcmp(m, cases[i].bytes, cases[i].n) == 0 && (cases[i].n == 8 || m[cases[i].n] == 0xaa),
          "%s: bytes %02x %02x ...", scalar_table[s].name, m[0], m[1]);
    Eval *ev = eval_new(ctx);
    const UOp *l = load(ctx, idx(ctx, p, 0, NULL), NULL);
    CHECK(eval_bind_param(ev, 0, m, cases[i].n) && eval_run(ev, l) &&
              eval_value(ev, l)[0] == uop_const_value(v),
          "%s: loads back", scalar_table[s].name);
    eval_free(ev);
  }
  /* any nonzero byte is true; a NaN with a payload loads as the canonical NaN */
  unsigned char b = 2, h[2] = {0x01, 0x7e};
  Eval *ev = eval_new(ctx);
  const UOp *lb = load(ctx, param(ctx, 0, ptr(UJ_BOOL, 1)), NULL);
  const UOp *lh = load(ctx, param(ctx, 1, ptr(UJ_FLOAT16, 1)), NULL);
  CHECK(eval_bind_param(ev, 0, &b, 1) && eval_bind_param(ev, 1, h, 2), "bind");
  CHECK(eval_run(ev, sink(ctx, (const UOp *[]){lb, lh}, 2)), "run: %s", uj_error(ctx));
  CHECK(eval_value(ev, lb)[0] == 1, "byte 2 is true");
  CHECK(eval_value(ev, lh)[0] == 0x7ff8000000000000ull, "canonical NaN");
  /* two PARAMs of one slot alias: float32 bits read as int32 */
  float f = 1.0f;
  const UOp *li = load(ctx, param(ctx, 0, ptr(UJ_INT32, 1)), NULL);
  CHECK(eval_bind_param(ev, 0, &f, 4) && eval_run(ev, li) && eval_value(ev, li)[0] == 0x3f800000,
        "aliasing: %s", uj_error(ctx));
  eval_free(ev);
}

/* Vector values (from a value PARAM or a vector LOAD) lane by lane. */
static void test_vectors(Ctx *ctx) {
  int32_t a[4] = {1, -2, INT32_MAX, 4}, b[4] = {0, 5, 1, 4};
  const UOp *va = param(ctx, 0, uj_dtype_vec(UJ_INT32, 4)),
            *vb = param(ctx, 1, uj_dtype_vec(UJ_INT32, 4));
  const UOp *sum = alu(ctx, UJ_OP_ADD, va, vb, NULL), *lt = alu(ctx, UJ_OP_CMPLT, va, vb, NULL);
  const UOp *w = alu(ctx, UJ_OP_WHERE, lt, va, vb);
  const UOp *f = mk(ctx, UJ_OP_CAST, uj_dtype_vec(UJ_FLOAT32, 4), va, NULL, NULL);
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, a, sizeof a) && eval_bind_param(ev, 1, b, sizeof b), "bind");
  CHECK(eval_run(ev, sink(ctx, (const UOp *[]){sum, w, f}, 3)), "run: %s", uj_error(ctx));
  CHECK(w2d(eval_value(ev, f)[1]) == -2.0 && w2d(eval_value(ev, f)[2]) == 0x1p31, "CAST lanes");
  const UOp *fp = param(ctx, 2, ptr(UJ_FLOAT32, 4));
  float out[8] = {0};
  const UOp *root = sink(ctx, (const UOp *[]){store(ctx, idx(ctx, fp, 1, NULL), f)}, 1);
  CHECK(eval_bind_param(ev, 2, out, sizeof out), "bind");
  CHECK(eval_run(ev, root), "run: %s", uj_error(ctx));
  CHECK(out[3] == 0 && out[4] == 1 && out[5] == -2 && out[6] == 2147483648.0f && out[7] == 4,
        "vector store into element 1: %g %g %g %g", out[4], out[5], out[6], out[7]);
  CHECK(eval_run(ev, sum), "run: %s", uj_error(ctx));
  const uint64_t *s = eval_value(ev, sum);
  CHECK(s[0] == 1 && s[1] == 3 && s[2] == word_from_int(UJ_INT32, INT32_MIN) && s[3] == 8,
        "ADD lanes");
  CHECK(eval_run(ev, w), "run: %s", uj_error(ctx));
  const uint64_t *c = eval_value(ev, lt), *r = eval_value(ev, w);
  CHECK(c[0] == 0 && c[1] == 1 && c[2] == 0 && c[3] == 0, "CMPLT lanes");
  CHECK(r[0] == 0 && r[1] == word_from_int(UJ_INT32, -2) && r[2] == 1 && r[3] == 4, "WHERE lanes");
  /* a vector LOAD reads its lanes from element 1 */
  const UOp *lv = load(ctx, idx(ctx, fp, 1, NULL), NULL);
  CHECK(eval_run(ev, lv) && w2d(eval_value(ev, lv)[1]) == -2.0, "vector LOAD");
  CHECK(!eval_run(ev, load(ctx, idx(ctx, fp, 2, NULL), NULL)), "element 2 of 2 is out");
  /* a value PARAM needs exactly its bytes */
  CHECK(eval_bind_param(ev, 1, b, 12) && !eval_run(ev, sum), "12 bytes for int32x4");
  CHECK(strstr(uj_error(ctx), "bound to 12 bytes, its value has 16") != NULL, "message: %s",
        uj_error(ctx));
  eval_free(ev);
}

static void test_scalar_param_and_index_chain(Ctx *ctx) {
  float x = 2.5f;
  const UOp *px = param(ctx, 0, dt_scalar(UJ_FLOAT32));
  const UOp *e = alu(ctx, UJ_OP_MUL, px, k_float(ctx, UJ_FLOAT32, 2), NULL);
  Eval *ev = eval_new(ctx);
  CHECK(eval_bind_param(ev, 0, &x, sizeof x) && eval_run(ev, e) && w2d(eval_value(ev, e)[0]) == 5.0,
        "scalar PARAM: %s", uj_error(ctx));
  int16_t m[6] = {0, 10, 20, 30, 40, 50};
  const UOp *p = param(ctx, 1, ptr(UJ_INT16, 1));
  const UOp *u8 = k_int(ctx, UJ_UINT8, 1), *i64 = k_int(ctx, UJ_INT64, 2);
  const UOp *chain =
      mk(ctx, UJ_OP_INDEX, p->dtype, mk(ctx, UJ_OP_INDEX, p->dtype, p, i64, NULL), u8, NULL);
  const UOp *l = load(ctx, chain, NULL);
  CHECK(eval_bind_param(ev, 1, m, sizeof m) && eval_run(ev, l) && eval_value(ev, l)[0] == 30,
        "INDEX of INDEX: element 3: %s", uj_error(ctx));
  eval_free(ev);
}

static void test_errors(Ctx *ctx) {
  const UOp *p = param(ctx, 5, ptr(UJ_INT32, 1));
  Eval *ev = eval_new(ctx);
  CHECK(!eval_run(ev, load(ctx, p, NULL)), "unbound PARAM");
  CHECK(strstr(uj_error(ctx), "PARAM slot 5 is not bound") != NULL, "message: %s", uj_error(ctx));
  const UOp *b = buffer(ctx, 7, 4, ptr(UJ_INT32, 1));
  CHECK(!eval_run(ev, load(ctx, b, NULL)), "unbound BUFFER");
  CHECK(strstr(uj_error(ctx), "BUFFER is not bound") != NULL, "message: %s", uj_error(ctx));
  CHECK(!eval_bind_buffer(ev, p, NULL, 0), "a PARAM is not a BUFFER");
  CHECK(!eval_bind_param(ev, -1, NULL, 0), "negative slot");
  const UOp *call = uj_uop_new(ctx, UJ_OP_CALL, dt_scalar(UJ_VOID), NULL, 0, (Arg){"k", NULL, 0});
  CHECK(!eval_run(ev, call), "CALL");
  CHECK(strstr(uj_error(ctx), "CALL is not evaluable") != NULL, "message: %s", uj_error(ctx));
  /* a graph the op table rejects (built unchecked) is reported, not run */
  const UOp *bad = uop_binary(ctx, UJ_OP_ADD, k_int(ctx, UJ_INT32, 1), k_int(ctx, UJ_INT8, 1));
  CHECK(!eval_run(ev, bad) && strstr(uj_error(ctx), "different dtypes"), "spec: %s", uj_error(ctx));
  CHECK(eval_value(ev, bad) == NULL, "no values after a failed run");
  /* a node of another context */
  Ctx *other = uj_ctx_new();
  for (int i = 0; i < 100; i++) k_int(other, UJ_INT64, i);
  CHECK(!eval_run(ev, k_int(other, UJ_INT64, 99)), "foreign root");
  uj_ctx_free(other);
  eval_free(ev);
}

/* 1,000,000 nested ADDs evaluate (no recursion); so does an error at the bottom. */
static void test_deep_chain(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *x = uj_var(ctx, dt_scalar(UJ_INT64), "x", 0, 10), *one = k_int(ctx, UJ_INT64, 1);
  const UOp *e = x;
  for (int i = 0; i < 1000000; i++) e = uop_binary(ctx, UJ_OP_ADD, e, one);
  uint64_t got = 0;
  int64_t v = 3;
  CHECK(eval_expr(ctx, e, (const char *[]){"x"}, &v, 1, &got), "deep: %s", uj_error(ctx));
  CHECK(got == 1000003, "deep chain = %llu", (unsigned long long)got);
  CHECK(!eval_expr(ctx, e, NULL, NULL, 0, &got), "deep chain, x unbound");
  CHECK(strstr(uj_error(ctx), "variable x is not bound") != NULL, "message: %s", uj_error(ctx));
  uj_ctx_free(ctx);
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_load_store(ctx);
  test_swap_and_order(ctx);
  test_gates(ctx);
  test_out_of_bounds(ctx);
  test_layout(ctx);
  test_vectors(ctx);
  test_scalar_param_and_index_chain(ctx);
  test_errors(ctx);
  uj_ctx_free(ctx);
  test_deep_chain();
  return check_report("test_eval_mem");
}
