/* ops.c — the op table: for each op its name, arity, arg kind, property
 * flags and type rule. The spec checker (spec.c) and the text form read it;
 * nothing else knows per-op facts that belong here.
 *
 * A type rule looks at one node (its sources and arg), and either returns
 * NULL after writing the dtype the node must have, or returns a message
 * saying what is wrong. docs/ir.md lists the same rules in prose. */
#include <stdio.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/movement.h"
#include "uop/uop.h"

#define FAIL(...) (snprintf(buf, size, __VA_ARGS__), buf)

static const char *dname(DType d, char *b, size_t n) { return dtype_str(d, b, n); }

/* All value sources of u (from index `from` on) share one shape. */
static const char *same_shapes(const UOp *u, uint32_t from, char *buf, size_t size) {
  const UOp *a = u->src[from];
  for (uint32_t i = from + 1; i < u->nsrc; i++) {
    const UOp *b = u->src[i];
    if (a->ndim != b->ndim || (a->ndim && memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) != 0)) {
      char x[160], y[160];
      return FAIL("sources have different shapes %s and %s", shape_str(a->shape, a->ndim, x, sizeof x),
                  shape_str(b->shape, b->ndim, y, sizeof y));
    }
  }
  return NULL;
}

/* All value sources of u (from index `from` on) share one dtype. */
static const char *same_dtypes(const UOp *u, uint32_t from, char *buf, size_t size) {
  for (uint32_t i = from + 1; i < u->nsrc; i++) {
    if (!dt_eq(u->src[i]->dtype, u->src[from]->dtype)) {
      char a[32], b[32];
      return FAIL("sources have different dtypes %s and %s",
                  dname(u->src[from]->dtype, a, sizeof a),
                  dname(u->src[i]->dtype, b, sizeof b));
    }
  }
  return NULL;
}

enum Accept { ACC_INT = 1, ACC_FLOAT = 2, ACC_BOOL = 4 };

static const char *accepts(const UOp *u, DType d, unsigned acc, char *buf, size_t size) {
  bool ok = (dt_is_int(d) && (acc & ACC_INT)) || (dt_is_float(d) && (acc & ACC_FLOAT)) ||
            (dt_is_bool(d) && (acc & ACC_BOOL));
  if (ok) return NULL;
  char a[32];
  return FAIL("%s does not take dtype %s", op_table[u->op].name, dname(d, a, sizeof a));
}

static const char *alu_rule(const UOp *u, DType *out, unsigned acc, char *buf, size_t size) {
  const char *err = same_dtypes(u, 0, buf, size);
  if (!err) err = same_shapes(u, 0, buf, size);
  if (err) return err;
  err = accepts(u, u->src[0]->dtype, acc, buf, size);
  if (err) return err;
  *out = u->src[0]->dtype;
  return NULL;
}

static const char *rule_numeric(const UOp *u, DType *out, char *buf, size_t size) {
  return alu_rule(u, out, ACC_INT | ACC_FLOAT, buf, size);
}
static const char *rule_int(const UOp *u, DType *out, char *buf, size_t size) {
  return alu_rule(u, out, ACC_INT, buf, size);
}
static const char *rule_float(const UOp *u, DType *out, char *buf, size_t size) {
  return alu_rule(u, out, ACC_FLOAT, buf, size);
}
static const char *rule_any_value(const UOp *u, DType *out, char *buf, size_t size) {
  return alu_rule(u, out, ACC_INT | ACC_FLOAT | ACC_BOOL, buf, size);
}
static const char *rule_bits(const UOp *u, DType *out, char *buf, size_t size) {
  return alu_rule(u, out, ACC_INT | ACC_BOOL, buf, size);
}

static const char *rule_compare(const UOp *u, DType *out, char *buf, size_t size) {
  const char *err = alu_rule(u, out, ACC_INT | ACC_FLOAT | ACC_BOOL, buf, size);
  if (!err) *out = dt_with_scalar(u->src[0]->dtype, UJ_BOOL);
  return err;
}

/* WHERE's condition differs from its values, so check values from src 1. */
static const char *rule_where_values(const UOp *u, DType *out, char *buf, size_t size) {
  DType c = u->src[0]->dtype;
  char a[32];
  if (!dt_is_bool(c)) return FAIL("WHERE condition must be bool, not %s", dname(c, a, sizeof a));
  const char *err = same_dtypes(u, 1, buf, size);
  if (!err) err = same_shapes(u, 0, buf, size); /* the condition's too */
  if (err) return err;
  DType v = u->src[1]->dtype;
  if (dt_is_ptr(v) || dt_is_void(v)) return FAIL("WHERE values must be values, not %s", dname(v, a, sizeof a));
  if (c.lanes != v.lanes)
    return FAIL("WHERE condition has %u lanes, values %u", (unsigned)c.lanes, (unsigned)v.lanes);
  *out = v;
  return NULL;
}

static const char *rule_cast(const UOp *u, DType *out, char *buf, size_t size) {
  DType from = u->src[0]->dtype, to = u->dtype;
  char a[32], b[32];
  if (dt_is_ptr(from) || dt_is_void(from) || dt_is_ptr(to) || dt_is_void(to))
    return FAIL("cannot %s %s to %s", op_table[u->op].name, dname(from, a, sizeof a),
                dname(to, b, sizeof b));
  if (from.lanes != to.lanes)
    return FAIL("%s changes lanes: %s to %s", op_table[u->op].name, dname(from, a, sizeof a),
                dname(to, b, sizeof b));
  if (u->op == UJ_OP_BITCAST && (dt_bits(from) != dt_bits(to) || dt_is_bool(from) || dt_is_bool(to)))
    return FAIL("BITCAST needs equal widths: %s is not %s", dname(from, a, sizeof a),
                dname(to, b, sizeof b));
  *out = to;
  return NULL;
}

static const char *rule_given_value(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (dt_is_ptr(u->dtype) || dt_is_void(u->dtype))
    return FAIL("%s must have a value dtype, not %s", op_table[u->op].name, dname(u->dtype, a, sizeof a));
  *out = u->dtype;
  return NULL;
}

static const char *rule_const(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (u->dtype.lanes != 1) return FAIL("CONST must be a scalar, not %s", dname(u->dtype, a, sizeof a));
  uint64_t w = (uint64_t)u->ints[0];
  if (!dt_is_ptr(u->dtype) && !dt_is_void(u->dtype) && word_normalize((uj_scalar)u->dtype.scalar, w) != w)
    return FAIL("CONST value %#llx is not a valid %s", (unsigned long long)w, dname(u->dtype, a, sizeof a));
  return rule_given_value(u, out, buf, size);
}

static const char *rule_var(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (!dt_is_int(u->dtype) || u->dtype.lanes != 1)
    return FAIL("DEFINE_VAR must be a scalar int, not %s", dname(u->dtype, a, sizeof a));
  int64_t lo, hi;
  if (u->ints[0] > u->ints[1]) return FAIL("DEFINE_VAR %s has min %lld > max %lld", u->name,
                                           (long long)u->ints[0], (long long)u->ints[1]);
  if (dtype_full_bounds(u->dtype, &lo, &hi) && (u->ints[0] < lo || u->ints[1] > hi))
    return FAIL("DEFINE_VAR %s range [%lld, %lld] does not fit %s", u->name, (long long)u->ints[0],
                (long long)u->ints[1], dname(u->dtype, a, sizeof a));
  if (!dtype_full_bounds(u->dtype, &lo, &hi) && u->ints[0] < 0)
    return FAIL("DEFINE_VAR %s of %s cannot be negative", u->name, dname(u->dtype, a, sizeof a));
  *out = u->dtype;
  return NULL;
}

static const char *rule_pointer(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (!dt_is_ptr(u->dtype)) return FAIL("%s must be a pointer, not %s", op_table[u->op].name,
                                        dname(u->dtype, a, sizeof a));
  if (u->op == UJ_OP_BUFFER && (u->ints[1] < 0))
    return FAIL("BUFFER size %lld is negative", (long long)u->ints[1]);
  *out = u->dtype;
  return NULL;
}

static const char *rule_param(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (dt_is_void(u->dtype)) return FAIL("PARAM cannot be %s", dname(u->dtype, a, sizeof a));
  if (u->ints[0] < 0) return FAIL("PARAM slot %lld is negative", (long long)u->ints[0]);
  *out = u->dtype;
  return NULL;
}

static const char *rule_void(const UOp *u, DType *out, char *buf, size_t size) {
  *out = dt_scalar(UJ_VOID);
  return NULL;
}

/* INDEX(ptr, idx[, gate]): a pointer to element idx; gate false disables it. */
/* INDEX(tensor, i0 .. in-1[, gate]): the element of a tensor of n axes at
 * the indices, a scalar (the scheduler's form; rangeify removes it). */
static const char *rule_index_tensor(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  const UOp *t = u->src[0];
  uint32_t n = t->ndim;
  bool gated = u->nsrc == n + 2;
  if (n == 0) return FAIL("INDEX needs a pointer or a tensor, not %s", dname(t->dtype, a, sizeof a));
  if (u->nsrc != n + 1 && !gated)
    return FAIL("INDEX of a %u-axis tensor takes %u indices (and a gate), not %u sources", n, n, (unsigned)u->nsrc - 1);
  for (uint32_t k = 1; k <= n; k++)
    if (!dt_is_int(u->src[k]->dtype) || u->src[k]->dtype.lanes != 1)
      return FAIL("INDEX needs scalar int indices, not %s", dname(u->src[k]->dtype, a, sizeof a));
  if (gated && !(dt_is_bool(u->src[n + 1]->dtype) && u->src[n + 1]->dtype.lanes == 1))
    return FAIL("INDEX gate must be bool, not %s", dname(u->src[n + 1]->dtype, a, sizeof a));
  if (dt_is_void(t->dtype)) return FAIL("INDEX of a void");
  *out = t->dtype;
  return NULL;
}

static const char *rule_index(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  DType p = u->src[0]->dtype;
  bool tensor = !dt_is_ptr(p);
  if (tensor) return rule_index_tensor(u, out, buf, size);
  if (u->nsrc < 2 || u->nsrc > 3) return FAIL("INDEX of a pointer takes an index and a gate, not %u sources", (unsigned)u->nsrc - 1);
  DType i = u->src[1]->dtype;
  if (!dt_is_int(i) || i.lanes != 1) return FAIL("INDEX needs a scalar int index, not %s", dname(i, a, sizeof a));
  if (u->nsrc == 3 && !(dt_is_bool(u->src[2]->dtype) && u->src[2]->dtype.lanes == 1))
    return FAIL("INDEX gate must be bool, not %s", dname(u->src[2]->dtype, a, sizeof a));
  *out = p;
  return NULL;
}

/* LOAD(ptr[, alt]): the value at ptr; alt (default 0) where the gate is off. */
static const char *rule_load(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32], b[32];
  DType p = u->src[0]->dtype;
  if (!dt_is_ptr(p) || dt_is_void(dt_base(p))) return FAIL("LOAD needs a pointer, not %s", dname(p, a, sizeof a));
  if (u->nsrc == 2 && !dt_eq(u->src[1]->dtype, dt_base(p)))
    return FAIL("LOAD alternative is %s, loaded value %s", dname(u->src[1]->dtype, a, sizeof a),
                dname(dt_base(p), b, sizeof b));
  *out = dt_base(p);
  return NULL;
}

static const char *rule_store(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32], b[32];
  DType p = u->src[0]->dtype, v = u->src[1]->dtype;
  if (!dt_is_ptr(p)) return FAIL("STORE needs a pointer, not %s", dname(p, a, sizeof a));
  if (dt_is_void(v) || !dt_eq(dt_base(p), v)) /* void*: nothing to store */
    return FAIL("STORE of %s through %s", dname(v, a, sizeof a), dname(p, b, sizeof b));
  *out = dt_scalar(UJ_VOID);
  return NULL;
}

/* STORE_ADD(ptr, val): *ptr += val into global memory; additions to one
 * element by different threads do not race (atomic where threads run at
 * once), and their order is unspecified. */
static const char *rule_store_add(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  const char *err = rule_store(u, out, buf, size);
  if (err) return err;
  DType p = u->src[0]->dtype, v = u->src[1]->dtype;
  if (p.space != UJ_AS_GLOBAL) return FAIL("STORE_ADD adds into global memory, not %s", dname(p, a, sizeof a));
  if (!dt_is_int(v) && !dt_is_float(v)) return FAIL("STORE_ADD does not add %s", dname(v, a, sizeof a));
  return NULL;
}

/* RANGE(bound): the loop variable, 0 .. bound-1, in bound's dtype. */
static const char *rule_range(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  DType b = u->src[0]->dtype;
  AxisKind kind;
  if (!dt_is_int(b) || b.lanes != 1) return FAIL("RANGE bound must be a scalar int, not %s", dname(b, a, sizeof a));
  if (!axis_kind_from_name(u->name, &kind)) return FAIL("RANGE has an unknown axis kind '%s'", u->name);
  if (u->ints[0] < 0) return FAIL("RANGE axis %lld is negative", (long long)u->ints[0]);
  *out = b;
  return NULL;
}

/* END(range, effect...): the effects run once per value of the range. */
static const char *rule_end(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (u->src[0]->op != UJ_OP_RANGE) return FAIL("END must close a RANGE, not %s", op_table[u->src[0]->op].name);
  for (uint32_t i = 1; i < u->nsrc; i++)
    if (!dt_is_void(u->src[i]->dtype))
      return FAIL("END body must be effects (void), not %s", dname(u->src[i]->dtype, a, sizeof a));
  *out = dt_scalar(UJ_VOID);
  return NULL;
}

/* VECTORIZE(a, b, ...): the scalars as the lanes of one vector. */
static const char *rule_vectorize(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  DType d = u->src[0]->dtype;
  if (dt_is_ptr(d) || dt_is_void(d) || d.lanes != 1)
    return FAIL("VECTORIZE takes scalar values, not %s", dname(d, a, sizeof a));
  if (u->nsrc > 65535) return FAIL("VECTORIZE of %u lanes is too wide", (unsigned)u->nsrc);
  const char *err = same_dtypes(u, 0, buf, size);
  if (err) return err;
  *out = (DType){d.scalar, UJ_AS_NONE, (uint16_t)u->nsrc};
  return NULL;
}

/* GEP(v) lane k: one lane of a vector value, as a scalar. */
/* STAGE(x[, buffer]): x's value, materialised by the scheduler in a new
 * buffer or in the BUFFER given (of x's dtype and element count). */
static const char *rule_stage(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32], b[32];
  DType d = u->src[0]->dtype;
  if (dt_is_ptr(d) || dt_is_void(d)) return FAIL("STAGE takes a tensor value, not %s", dtype_str(d, a, sizeof a));
  if (u->nsrc == 2) {
    const UOp *t = u->src[1];
    int64_t n = 1;
    for (unsigned k = 0; k < u->src[0]->ndim; k++) n *= u->src[0]->shape[k];
    if (t->op != UJ_OP_BUFFER) return FAIL("STAGE writes into a BUFFER, not a %s", op_table[t->op].name);
    if (!dt_eq(dt_base(t->dtype), d) || t->ints[1] != n)
      return FAIL("STAGE of %lld %s elements into a BUFFER of %lld %s", (long long)n, dtype_str(d, a, sizeof a),
                  (long long)t->ints[1], dtype_str(dt_base(t->dtype), b, sizeof b));
  }
  *out = d;
  return NULL;
}

/* BARRIER(effect...): the effects first, then a wait until every thread
 * of the workgroup has reached this BARRIER (docs/semantics.md,
 * "Workgroups"); outside a workgroup, just the effects. */
static const char *rule_barrier(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  for (uint32_t i = 0; i < u->nsrc; i++)
    if (!dt_is_void(u->src[i]->dtype))
      return FAIL("BARRIER follows effects (void), not %s", dname(u->src[i]->dtype, a, sizeof a));
  *out = dt_scalar(UJ_VOID);
  return NULL;
}

/* ALLOC (id, count): count elements of a kernel's own memory, in register
 * (per thread) or local (per workgroup) space. */
static const char *rule_alloc(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  if (!dt_is_ptr(u->dtype) || u->dtype.space == UJ_AS_GLOBAL)
    return FAIL("ALLOC must be a pointer into local or register memory, not %s", dname(u->dtype, a, sizeof a));
  if (u->nints != 2) return FAIL("ALLOC takes (id, element count), not %u ints", (unsigned)u->nints);
  if (u->ints[1] < 1 || u->ints[1] > ((int64_t)1 << 31)) return FAIL("ALLOC of %lld elements (1 .. 2^31)", (long long)u->ints[1]);
  *out = u->dtype;
  return NULL;
}

static const char *rule_gep(const UOp *u, DType *out, char *buf, size_t size) {
  char a[32];
  DType d = u->src[0]->dtype;
  if (dt_is_ptr(d) || dt_is_void(d)) return FAIL("GEP takes a vector value, not %s", dname(d, a, sizeof a));
  if (u->ints[0] < 0 || u->ints[0] >= d.lanes)
    return FAIL("GEP lane %lld is outside %s", (long long)u->ints[0], dname(d, a, sizeof a));
  *out = dt_lane(d);
  return NULL;
}

#define ALU1 (OPF_ALU | OPF_UNARY)
#define ALU2 (OPF_ALU | OPF_BINARY)
#define COMM (OPF_COMMUTATIVE | OPF_ASSOCIATIVE)

const OpInfo op_table[UJ_OP_COUNT] = {
  /*                 name          src     arg         flags                 inferred  type rule */
  [UJ_OP_SINK]    = {"SINK",       0, -1,  ARG_NONE,   OPF_EFFECT,           true,  rule_void},
  [UJ_OP_CONST]   = {"CONST",      0, 0,   ARG_CONST,  0,                    false, rule_const},
  [UJ_OP_PARAM]   = {"PARAM",      0, 0,   ARG_SLOT,   0,                    false, rule_param},
  [UJ_OP_CALL]    = {"CALL",       0, -1,  ARG_CALL,   0,                    true,  rule_void},
  [UJ_OP_DEFINE_VAR] = {"DEFINE_VAR", 0, 0, ARG_VAR,   0,                    false, rule_var},
  [UJ_OP_BUFFER]  = {"BUFFER",     0, 0,   ARG_BUFFER, 0,                    false, rule_pointer},
  [UJ_OP_INDEX]   = {"INDEX",      1, -1,  ARG_NONE,   0,                    true,  rule_index},
  [UJ_OP_LOAD]    = {"LOAD",       1, 2,   ARG_NONE,   0,                    true,  rule_load},
  [UJ_OP_STORE]   = {"STORE",      2, 2,   ARG_NONE,   OPF_EFFECT,           true,  rule_store},
  [UJ_OP_RECIP]   = {"RECIP",      1, 1,   ARG_NONE,   ALU1,                 true,  rule_float},
  [UJ_OP_NEG]     = {"NEG",        1, 1,   ARG_NONE,   ALU1,                 true,  rule_numeric},
  [UJ_OP_EXP2]    = {"EXP2",       1, 1,   ARG_NONE,   ALU1,                 true,  rule_float},
  [UJ_OP_LOG2]    = {"LOG2",       1, 1,   ARG_NONE,   ALU1,                 true,  rule_float},
  [UJ_OP_SIN]     = {"SIN",        1, 1,   ARG_NONE,   ALU1,                 true,  rule_float},
  [UJ_OP_SQRT]    = {"SQRT",       1, 1,   ARG_NONE,   ALU1,                 true,  rule_float},
  [UJ_OP_CAST]    = {"CAST",       1, 1,   ARG_NONE,   OPF_ALU,              false, rule_cast},
  [UJ_OP_BITCAST] = {"BITCAST",    1, 1,   ARG_NONE,   OPF_ALU,              false, rule_cast},
  [UJ_OP_ADD]     = {"ADD",        2, 2,   ARG_NONE,   ALU2 | COMM,          true,  rule_numeric},
  [UJ_OP_SUB]     = {"SUB",        2, 2,   ARG_NONE,   ALU2,                 true,  rule_numeric},
  [UJ_OP_MUL]     = {"MUL",        2, 2,   ARG_NONE,   ALU2 | COMM,          true,  rule_numeric},
  [UJ_OP_IDIV]    = {"IDIV",       2, 2,   ARG_NONE,   ALU2,                 true,  rule_int},
  [UJ_OP_FDIV]    = {"FDIV",       2, 2,   ARG_NONE,   ALU2,                 true,  rule_float},
  [UJ_OP_MOD]     = {"MOD",        2, 2,   ARG_NONE,   ALU2,                 true,  rule_int},
  [UJ_OP_MAX]     = {"MAX",        2, 2,   ARG_NONE,   ALU2 | COMM,          true,  rule_any_value},
  [UJ_OP_CMPLT]   = {"CMPLT",      2, 2,   ARG_NONE,   ALU2 | OPF_COMPARE,   true,  rule_compare},
  [UJ_OP_CMPNE]   = {"CMPNE",      2, 2,   ARG_NONE,   ALU2 | OPF_COMPARE | OPF_COMMUTATIVE, true, rule_compare},
  [UJ_OP_CMPEQ]   = {"CMPEQ",      2, 2,   ARG_NONE,   ALU2 | OPF_COMPARE | OPF_COMMUTATIVE, true, rule_compare},
  [UJ_OP_AND]     = {"AND",        2, 2,   ARG_NONE,   ALU2 | COMM,          true,  rule_bits},
  [UJ_OP_OR]      = {"OR",         2, 2,   ARG_NONE,   ALU2 | COMM,          true,  rule_bits},
  [UJ_OP_XOR]     = {"XOR",        2, 2,   ARG_NONE,   ALU2 | COMM,          true,  rule_bits},
  [UJ_OP_SHL]     = {"SHL",        2, 2,   ARG_NONE,   ALU2,                 true,  rule_int},
  [UJ_OP_SHR]     = {"SHR",        2, 2,   ARG_NONE,   ALU2,                 true,  rule_int},
  [UJ_OP_WHERE]   = {"WHERE",      3, 3,   ARG_NONE,   OPF_ALU | OPF_TERNARY, true, rule_where_values},
  [UJ_OP_MULACC]  = {"MULACC",     3, 3,   ARG_NONE,   OPF_ALU | OPF_TERNARY, true, rule_numeric},
  [UJ_OP_RANGE]   = {"RANGE",      1, 1,   ARG_RANGE,  0,                    true,  rule_range},
  [UJ_OP_END]     = {"END",        2, -1,  ARG_NONE,   OPF_EFFECT,           true,  rule_end},
  [UJ_OP_VECTORIZE] = {"VECTORIZE", 1, -1, ARG_NONE,   0,                    true,  rule_vectorize},
  [UJ_OP_GEP]     = {"GEP",        1, 1,   ARG_LANE,   0,                    true,  rule_gep},
  [UJ_OP_RESHAPE] = {"RESHAPE",    1, 1,   ARG_INTS,   OPF_MOVEMENT | OPF_TENSOR, true, movement_rule_reshape},
  [UJ_OP_EXPAND]  = {"EXPAND",     1, 1,   ARG_INTS,   OPF_MOVEMENT | OPF_TENSOR, true, movement_rule_expand},
  [UJ_OP_PERMUTE] = {"PERMUTE",    1, 1,   ARG_INTS,   OPF_MOVEMENT | OPF_TENSOR, true, movement_rule_permute},
  [UJ_OP_FLIP]    = {"FLIP",       1, 1,   ARG_INTS,   OPF_MOVEMENT | OPF_TENSOR, true, movement_rule_flip},
  [UJ_OP_PAD]     = {"PAD",        1, 1,   ARG_INTS,   OPF_MOVEMENT | OPF_TENSOR, true, movement_rule_pad_shrink},
  [UJ_OP_SHRINK]  = {"SHRINK",     1, 1,   ARG_INTS,   OPF_MOVEMENT | OPF_TENSOR, true, movement_rule_pad_shrink},
  [UJ_OP_REDUCE]  = {"REDUCE",     1, -1,  ARG_REDUCE, 0,                    true,  movement_rule_reduce},
  [UJ_OP_STAGE]   = {"STAGE",      1, 2,   ARG_NONE,   OPF_TENSOR,           true,  rule_stage},
  [UJ_OP_ALLOC]   = {"ALLOC",      0, 0,   ARG_INTS,   0,                    false, rule_alloc},
  [UJ_OP_BARRIER] = {"BARRIER",    0, -1,  ARG_NONE,   OPF_EFFECT,           true,  rule_barrier},
  [UJ_OP_GATHER]  = {"GATHER",     2, 2,   ARG_INTS,   OPF_TENSOR,           true,  movement_rule_gather},
  [UJ_OP_SCATTER] = {"SCATTER",    2, 2,   ARG_INTS,   OPF_TENSOR,           true,  movement_rule_scatter},
  [UJ_OP_STORE_ADD] = {"STORE_ADD", 2, 2,  ARG_NONE,   OPF_EFFECT,           true,  rule_store_add},
};

const char *const axis_kind_names[AXIS_COUNT] = {
  [AXIS_LOOP] = "loop", [AXIS_GLOBAL] = "global", [AXIS_LOCAL] = "local",
  [AXIS_REDUCE] = "reduce", [AXIS_UPCAST] = "upcast", [AXIS_UNROLL] = "unroll",
};

bool axis_kind_from_name(const char *name, AxisKind *out) {
  for (int k = 0; name && k < AXIS_COUNT; k++) {
    if (strcmp(name, axis_kind_names[k]) == 0) {
      *out = (AxisKind)k;
      return true;
    }
  }
  return false;
}

AxisKind range_kind(const UOp *range) {
  AxisKind k = AXIS_LOOP;
  axis_kind_from_name(range->name, &k);
  return k;
}

const UOp *uop_memory_of(const UOp *p) {
  while (p->op == UJ_OP_INDEX) p = p->src[0];
  return p;
}

bool uop_loads_alloc(const UOp *u) { return u->op == UJ_OP_LOAD && uop_memory_of(u->src[0])->op == UJ_OP_ALLOC; }

bool op_from_name(const char *name, size_t len, Op *out) {
  for (int i = 0; i < UJ_OP_COUNT; i++) {
    if (strlen(op_table[i].name) == len && memcmp(op_table[i].name, name, len) == 0) {
      *out = (Op)i;
      return true;
    }
  }
  return false;
}

const char *uj_op_name(uj_op op) {
  return (unsigned)op < UJ_OP_COUNT ? op_table[op].name : "?";
}
