/* test_uop.c — the IR core: interning and dtypes.
 *
 * Interning: equal (op, dtype, sources, arg) give one pointer for every op,
 * whatever memory the arg's ints and name sit in; any difference gives
 * another node; ids are dense; keys agree across contexts; 2.5 million
 * distinct nodes intern and re-intern to the same pointers. Dtypes: every
 * name and alias, vectors, pointers and address spaces parse and print back;
 * malformed names are rejected. Type rules: test_uop_spec.c; bounds:
 * test_uop_bounds.c. */
#include <stdlib.h>

#include "check.h"
#include "uop/uop.h"

/* A valid node of op; `v` varies one part of it (an arg int or a source). */
/* A tensor op on a (2, v+1) view of a BUFFER; v varies the node. */
static const UOp *sample_tensor(Ctx *ctx, Op op, int64_t v) {
  DType pf = uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL);
  const UOp *buf = uj_uop_new(ctx, UJ_OP_BUFFER, pf, NULL, 0, (Arg){"CPU", (int64_t[]){0, 2 * (v + 1)}, 2});
  const UOp *t = uj_uop_new(ctx, UJ_OP_RESHAPE, dt_scalar(UJ_FLOAT32), &buf, 1, (Arg){NULL, (int64_t[]){2, v + 1}, 2});
  int64_t ints[4] = {0, 1, 0, 1}, reshape[2] = {v + 1, 2}, unit[3] = {2, v + 1, 1}, wide[3] = {2, v + 1, 3},
          order[2] = {1, 0};
  Arg arg = {NULL, ints, 2};
  switch (op) {
  case UJ_OP_RESHAPE: arg.ints = reshape; break;
  case UJ_OP_EXPAND:
    t = uj_uop_new(ctx, UJ_OP_RESHAPE, dt_scalar(UJ_FLOAT32), &t, 1, (Arg){NULL, unit, 3});
    arg = (Arg){NULL, wide, 3};
    break;
  case UJ_OP_PERMUTE: arg.ints = order; break;
  case UJ_OP_FLIP: arg.nints = 1; break;
  case UJ_OP_PAD: ints[1] = v, arg.nints = 4; break;
  case UJ_OP_SHRINK: ints[3] = 1, ints[1] = 2, arg.nints = 4; break;
  case UJ_OP_STAGE: arg = arg_none(); break;
  default: arg = (Arg){"ADD", ints, 1}; break; /* REDUCE */
  }
  return uj_uop_new(ctx, op, dt_scalar(UJ_FLOAT32), &t, 1, arg);
}

static const UOp *sample(Ctx *ctx, Op op, int64_t v) {
  DType i32 = dt_scalar(UJ_INT32), f32 = dt_scalar(UJ_FLOAT32),
        pf = uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL);
  char name[8] = "n", device[8] = "CPU", callee[8] = "kern"; /* fresh memory each call */
  int64_t ints[2] = {v, 16}, range[2] = {0, 10 + v};
  const UOp *c0 = uj_const_int(ctx, i32, 0), *cv = uj_const_int(ctx, i32, v);
  const UOp *fv = uj_const_float(ctx, f32, (double)v + 0.5);
  const UOp *buf = uj_uop_new(ctx, UJ_OP_BUFFER, pf, NULL, 0, (Arg){device, (int64_t[]){0, 16}, 2});
  const UOp *ix = uj_uop_new(ctx, UJ_OP_INDEX, pf, (const UOp *[]){buf, cv}, 2, arg_none());
  const UOp *src[3] = {c0, cv, NULL};
  switch (op) {
  case UJ_OP_SINK: return uj_uop_new(ctx, op, dt_scalar(UJ_VOID), &cv, 1, arg_none());
  case UJ_OP_CONST: return cv;
  case UJ_OP_PARAM: return uj_uop_new(ctx, op, pf, NULL, 0, (Arg){NULL, ints, 1});
  case UJ_OP_CALL: return uj_uop_new(ctx, op, dt_scalar(UJ_VOID), NULL, 0, (Arg){callee, ints, 1});
  case UJ_OP_DEFINE_VAR: return uj_uop_new(ctx, op, i32, NULL, 0, (Arg){name, range, 2});
  case UJ_OP_BUFFER: return uj_uop_new(ctx, op, pf, NULL, 0, (Arg){device, ints, 2});
  case UJ_OP_INDEX: return ix;
  case UJ_OP_LOAD: return uj_uop_new(ctx, op, f32, &ix, 1, arg_none());
  case UJ_OP_STORE:
    return uj_uop_new(ctx, op, dt_scalar(UJ_VOID), (const UOp *[]){ix, fv}, 2, arg_none());
  case UJ_OP_STORE_ADD:
    return uj_uop_new(ctx, op, dt_scalar(UJ_VOID), (const UOp *[]){ix, fv}, 2, arg_none());
  case UJ_OP_GATHER:
  case UJ_OP_SCATTER: {
    DType pi = uj_dtype_ptr(UJ_INT32, 1, UJ_AS_GLOBAL);
    const UOp *ib = uj_uop_new(ctx, UJ_OP_BUFFER, pi, NULL, 0, (Arg){device, (int64_t[]){1, 16}, 2});
    const UOp *x = uj_uop_new(ctx, UJ_OP_RESHAPE, f32, &buf, 1, (Arg){NULL, (int64_t[]){2, 8}, 2});
    const UOp *j = uj_uop_new(ctx, UJ_OP_RESHAPE, i32, &ib, 1, (Arg){NULL, (int64_t[]){2, 8}, 2});
    int64_t arg[2] = {v % 2, 4 + v};
    return uj_uop_new(ctx, op, f32, (const UOp *[]){x, j}, 2, (Arg){NULL, arg, op == UJ_OP_GATHER ? 1 : 2});
  }
  case UJ_OP_CAST: return uj_uop_new(ctx, op, f32, &cv, 1, arg_none());
  case UJ_OP_BITCAST: return uj_uop_new(ctx, op, f32, &cv, 1, arg_none());
  case UJ_OP_NEG: return uj_uop_new(ctx, op, i32, &cv, 1, arg_none());
  case UJ_OP_FDIV: return uj_uop_new(ctx, op, f32, (const UOp *[]){fv, fv}, 2, arg_none());
  case UJ_OP_WHERE:
    return uj_uop_new(ctx, op, i32, (const UOp *[]){uj_const_bool(ctx, true), cv, c0}, 3,
                      arg_none());
  case UJ_OP_MULACC: src[2] = cv; return uj_uop_new(ctx, op, i32, src, 3, arg_none());
  case UJ_OP_RANGE: return uj_uop_new(ctx, op, i32, &cv, 1, (Arg){"loop", (int64_t[]){v}, 1});
  case UJ_OP_RESHAPE:
  case UJ_OP_EXPAND:
  case UJ_OP_PERMUTE:
  case UJ_OP_FLIP:
  case UJ_OP_PAD:
  case UJ_OP_SHRINK:
  case UJ_OP_REDUCE:
  case UJ_OP_STAGE: return sample_tensor(ctx, op, v);
  case UJ_OP_VECTORIZE: return uj_uop_new(ctx, op, uj_dtype_vec(UJ_INT32, 2), (const UOp *[]){c0, cv}, 2, arg_none());
  case UJ_OP_GEP:
    return uj_uop_new(ctx, op, i32, (const UOp *[]){sample(ctx, UJ_OP_VECTORIZE, v)}, 1, (Arg){NULL, (int64_t[]){1}, 1});
  case UJ_OP_ALLOC: return uj_uop_new(ctx, op, uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_LOCAL), NULL, 0, (Arg){NULL, ints, 2});
  case UJ_OP_BARRIER: {
    const UOp *st = sample(ctx, UJ_OP_STORE, v);
    return uj_uop_new(ctx, op, dt_scalar(UJ_VOID), &st, 1, arg_none());
  }
  case UJ_OP_END: {
    const UOp *r = sample(ctx, UJ_OP_RANGE, v), *st = sample(ctx, UJ_OP_STORE, v);
    return uj_uop_new(ctx, op, dt_scalar(UJ_VOID), (const UOp *[]){r, st}, 2, arg_none());
  }
  default: break;
  }
  if (op_has(op, OPF_UNARY)) return uj_uop_new(ctx, op, f32, &fv, 1, arg_none());
  return uj_uop_new(ctx, op, op_has(op, OPF_COMPARE) ? dt_scalar(UJ_BOOL) : i32, src, 2,
                    arg_none());
}

static void test_intern_every_op(void) {
  Ctx *ctx = uj_ctx_new();
  for (int op = 0; op < UJ_OP_COUNT; op++) {
    const UOp *a = sample(ctx, (Op)op, 1);
    CHECK(a != NULL, "%s: %s", op_table[op].name, uj_error(ctx));
    if (!a) continue;
    size_t count = uj_ctx_node_count(ctx);
    CHECK(sample(ctx, (Op)op, 1) == a, "%s: built twice, one node", op_table[op].name);
    CHECK(uj_ctx_node_count(ctx) == count, "%s: nothing new interned", op_table[op].name);
    const UOp *b = sample(ctx, (Op)op, 2);
    CHECK(b && b != a, "%s: a different arg or source, another node", op_table[op].name);
    Arg arg = {a->name, a->ints, a->nints};
    CHECK(uop_new(ctx, (Op)a->op, a->dtype, a->src, a->nsrc, arg) == a, "%s: uop_new agrees",
          op_table[op].name);
    CHECK(uop_replace_src(ctx, a, a->src, a->nsrc) == a, "%s: same sources, same node",
          op_table[op].name);
    CHECK(a->op == op && uj_uop_op(a) == (uj_op)op, "%s: op", op_table[op].name);
  }
  /* the dtype, the name and the number of ints are all part of a node */
  CHECK(uj_const_int(ctx, dt_scalar(UJ_INT32), 0) != uj_const_int(ctx, dt_scalar(UJ_INT64), 0),
        "dtype differs");
  DType i32 = dt_scalar(UJ_INT32);
  int64_t r[2] = {0, 10};
  CHECK(uj_var(ctx, i32, "n", 0, 10) != uj_var(ctx, i32, "m", 0, 10), "name differs");
  CHECK(uj_var(ctx, i32, "n", 0, 10) ==
            uop_new(ctx, UJ_OP_DEFINE_VAR, i32, NULL, 0, (Arg){"n", r, 2}),
        "same var");
  const UOp *k0 = uj_uop_new(ctx, UJ_OP_CALL, dt_scalar(UJ_VOID), NULL, 0, (Arg){"k", NULL, 0});
  const UOp *k1 = uj_uop_new(ctx, UJ_OP_CALL, dt_scalar(UJ_VOID), NULL, 0, (Arg){"k", r, 1});
  CHECK(k0 && k1 && k0 != k1 && k0->nints == 0 && k1->nints == 1, "launch dims differ");
  /* commutative ops are not reordered by interning */
  const UOp *x = uj_const_int(ctx, i32, 3), *y = uj_const_int(ctx, i32, 4);
  CHECK(uop_binary(ctx, UJ_OP_ADD, x, y) != uop_binary(ctx, UJ_OP_ADD, y, x), "order is kept");
  /* ids are dense and index the context's table */
  size_t n = uj_ctx_node_count(ctx);
  for (size_t i = 0; i < n; i++) CHECK(ctx->nodes[i]->id == i, "id %zu", i);
  uj_ctx_free(ctx);
}

/* The structural key is the same in every context. */
static void test_keys_across_contexts(void) {
  Ctx *a = uj_ctx_new(), *b = uj_ctx_new();
  uj_const_int(b, dt_scalar(UJ_INT8), 5); /* different ids in b */
  for (int op = 0; op < UJ_OP_COUNT; op++) {
    const UOp *x = sample(a, (Op)op, 3), *y = sample(b, (Op)op, 3);
    CHECK(x && y && x->key == y->key, "%s: key", op_table[op].name);
  }
  uj_ctx_free(a);
  uj_ctx_free(b);
}

/* 2.5 million distinct nodes: CONSTs and ADDs of them. */
static void test_intern_millions(void) {
  enum { N = 1250000 };
  Ctx *ctx = uj_ctx_new();
  const UOp **c = malloc(N * sizeof *c), **s = malloc(N * sizeof *s);
  DType i64 = dt_scalar(UJ_INT64);
  size_t base = uj_ctx_node_count(ctx);
  for (int64_t i = 0; i < N; i++) c[i] = uop_const_int(ctx, i64, i);
  for (int64_t i = 0; i < N; i++) s[i] = uop_binary(ctx, UJ_OP_ADD, c[i], c[(i * 7 + 1) % N]);
  CHECK(uj_ctx_node_count(ctx) == base + 2 * (size_t)N, "count %zu", uj_ctx_node_count(ctx));
  long bad_id = 0, bad_ptr = 0;
  for (int64_t i = 0; i < N; i++) {
    bad_id += c[i]->id != base + (size_t)i || s[i]->id != base + N + (size_t)i;
    bad_ptr += uop_const_int(ctx, i64, i) != c[i];
    bad_ptr += uop_binary(ctx, UJ_OP_ADD, c[i], c[(i * 7 + 1) % N]) != s[i];
  }
  CHECK(bad_id == 0, "%ld ids not dense", bad_id);
  CHECK(bad_ptr == 0, "%ld nodes re-interned to another pointer", bad_ptr);
  CHECK(uj_ctx_node_count(ctx) == base + 2 * (size_t)N, "re-interning adds nothing");
  free(c);
  free(s);
  uj_ctx_free(ctx);
}

static void check_dtype(const char *text, DType want, const char *printed) {
  DType d = {0, 0, 0};
  char buf[40];
  bool ok = dtype_parse(text, strlen(text), &d);
  CHECK(ok && dt_eq(d, want), "parse %s", text);
  CHECK_STR(dtype_str(want, buf, sizeof buf), printed, "print of %s", text);
}

static void test_dtype_names(void) {
  for (int s = 1; s < UJ_SCALAR_COUNT; s++)
    check_dtype(scalar_table[s].name, dt_scalar((uj_scalar)s), scalar_table[s].name);
  static const struct {
    const char *alias;
    uj_scalar s;
  } aliases[] = {
      {"int", UJ_INT32},    {"uint", UJ_UINT32},   {"long", UJ_INT64},     {"ulong", UJ_UINT64},
      {"char", UJ_INT8},    {"uchar", UJ_UINT8},   {"short", UJ_INT16},    {"ushort", UJ_UINT16},
      {"half", UJ_FLOAT16}, {"float", UJ_FLOAT32}, {"double", UJ_FLOAT64},
  };
  for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
    check_dtype(aliases[i].alias, dt_scalar(aliases[i].s), scalar_table[aliases[i].s].name);
  check_dtype("float32x8", uj_dtype_vec(UJ_FLOAT32, 8), "float32x8");
  check_dtype("boolx4", uj_dtype_vec(UJ_BOOL, 4), "boolx4");
  check_dtype("halfx2", uj_dtype_vec(UJ_FLOAT16, 2), "float16x2");
  check_dtype("int32x65535", uj_dtype_vec(UJ_INT32, 65535), "int32x65535");
  check_dtype("int32x1", dt_scalar(UJ_INT32), "int32");
  check_dtype("float32*", uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL), "float32*");
  check_dtype("float32*global", uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL), "float32*");
  check_dtype("int8*local", uj_dtype_ptr(UJ_INT8, 1, UJ_AS_LOCAL), "int8*local");
  check_dtype("half*reg", uj_dtype_ptr(UJ_FLOAT16, 1, UJ_AS_REG), "float16*reg");
  check_dtype("float32x4*local", uj_dtype_ptr(UJ_FLOAT32, 4, UJ_AS_LOCAL), "float32x4*local");
  check_dtype("void*", uj_dtype_ptr(UJ_VOID, 1, UJ_AS_GLOBAL), "void*");
  check_dtype("bfloat16x16*", uj_dtype_ptr(UJ_BFLOAT16, 16, UJ_AS_GLOBAL), "bfloat16x16*");
  static const char *const bad[] = {
      "",
      "float33",
      "int32x0",
      "int32x",
      "x4",
      "void",
      "voidx2*",
      "float32*shared",
      "float32**",
      "int32x4x2",
      "Int32",
      " int32",
      "int32 ",
      "*",
      "int32x65536",
      "int32x123456",
      "float32*local*",
      "int32x-4",
      "uint128",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    DType d;
    CHECK(!dtype_parse(bad[i], strlen(bad[i]), &d), "'%s' must not parse", bad[i]);
  }
  /* a length, not a NUL, ends the name */
  DType d;
  CHECK(dtype_parse("int8junk", 4, &d) && dt_eq(d, dt_scalar(UJ_INT8)), "prefix of a buffer");
}

/* Every dtype prints and parses back to itself. */
static void test_dtype_round_trip(void) {
  static const unsigned lanes[] = {1, 2, 4, 16, 256};
  char buf[40], name[40], small[6];
  for (int s = 0; s < UJ_SCALAR_COUNT; s++) {
    for (size_t l = 0; l < sizeof lanes / sizeof *lanes; l++) {
      for (int space = 0; space < UJ_AS_COUNT; space++) {
        DType d = {(uint8_t)s, (uint8_t)space, (uint16_t)lanes[l]}, back;
        if (s == UJ_VOID && (space == UJ_AS_NONE || lanes[l] > 1)) continue;
        dtype_str(d, buf, sizeof buf);
        CHECK(dtype_parse(buf, strlen(buf), &back) && dt_eq(back, d), "round trip %s", buf);
        CHECK_STR(uj_dtype_name(d, name, sizeof name), buf, "public name");
        dtype_str(d, small, sizeof small);
        CHECK(strncmp(small, buf, strlen(small)) == 0 && strlen(small) < sizeof small,
              "a small buffer gets a NUL-terminated prefix: %s", small);
      }
    }
  }
  CHECK(uj_dtype_eq(uj_dtype_scalar(UJ_INT8), dt_scalar(UJ_INT8)), "uj_dtype_scalar");
  CHECK(!uj_dtype_eq(uj_dtype_vec(UJ_INT8, 2), uj_dtype_ptr(UJ_INT8, 2, UJ_AS_GLOBAL)),
        "vec vs ptr");
  CHECK(!uj_dtype_eq(uj_dtype_ptr(UJ_INT8, 1, UJ_AS_LOCAL), uj_dtype_ptr(UJ_INT8, 1, UJ_AS_REG)),
        "address spaces differ");
}

static void test_dtype_helpers(void) {
  DType p = uj_dtype_ptr(UJ_FLOAT16, 4, UJ_AS_LOCAL);
  CHECK(dt_is_ptr(p) && !dt_is_float(p) && !dt_is_int(p), "a pointer is no value");
  CHECK(dt_eq(dt_base(p), uj_dtype_vec(UJ_FLOAT16, 4)), "base keeps lanes");
  CHECK(dt_eq(dt_lane(p), dt_scalar(UJ_FLOAT16)), "lane");
  CHECK(dt_bits(dt_scalar(UJ_BFLOAT16)) == 16 && dt_bits(dt_scalar(UJ_BOOL)) == 1, "bits");
  CHECK(dt_is_void(dt_scalar(UJ_VOID)) && !dt_is_void(uj_dtype_ptr(UJ_VOID, 1, UJ_AS_GLOBAL)),
        "void");
  CHECK(!dt_is_int(dt_scalar(UJ_BOOL)) && dt_is_bool(dt_scalar(UJ_BOOL)), "bool is not an int");
  CHECK(dt_is_signed(dt_scalar(UJ_FLOAT32)) && !dt_is_signed(dt_scalar(UJ_UINT8)), "signed");
}

static void test_op_names(void) {
  for (int op = 0; op < UJ_OP_COUNT; op++) {
    Op back;
    const char *name = uj_op_name((uj_op)op);
    CHECK(op_from_name(name, strlen(name), &back) && back == (Op)op, "op %s", name);
  }
  Op o;
  CHECK(!op_from_name("FOO", 3, &o) && !op_from_name("ad", 2, &o) && !op_from_name("ADDX", 4, &o),
        "unknown op names");
  CHECK(op_from_name("ADDX", 3, &o) && o == UJ_OP_ADD, "length-delimited");
  CHECK_STR(uj_op_name(UJ_OP_COUNT), "?", "out of range");
}

int main(void) {
  test_intern_every_op();
  test_keys_across_contexts();
  test_intern_millions();
  test_dtype_names();
  test_dtype_round_trip();
  test_dtype_helpers();
  test_op_names();
  return check_report("test_uop");
}
