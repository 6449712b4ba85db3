/* lang_func.c — the functions of the tensor language: creation (zeros,
 * ones, full, arange, rand, randn, tensor, load), save, where, matmul,
 * conv2d, the pools, cat, stack and print. Any method is a function too,
 * its tensor the first argument (exp(x), sum(x, axis=0)).
 *
 * In: a call node. Out: a value (a tensor, or None for save and print).
 * Dtypes follow tinygrad: ints give int32, floats float32, True/False
 * bool; `dtype="..."` overrides. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"

/* ---- creation ---- */

static bool f_fill(Call *c, const Callable *f, Value *out) {
  int64_t shape[UJ_MAX_DIMS];
  unsigned ndim;
  uj_scalar dt = UJ_FLOAT32;
  if (!arg_shape(c, c->pos, c->npos, shape, &ndim)) return false;
  if (c->arg[0] && !arg_dtype(c, c->arg[0], &dt)) return false;
  uj_session *s = c->L->session;
  return call_return(c, f->code ? uj_tensor_ones(s, dt, shape, ndim) : uj_tensor_zeros(s, dt, shape, ndim), out);
}

static uj_scalar dtype_of_number(const Value *v) {
  return v->kind == V_BOOL ? UJ_BOOL : v->kind == V_INT ? UJ_INT32 : UJ_FLOAT32;
}

/* full(2, 3, 1.5), full((2, 3), 1.5), full([2, 3], value=1.5) */
static bool f_full(Call *c, const Callable *f, Value *out) {
  const Value *value = c->arg[0];
  size_t nshape = c->npos;
  if (!value && nshape == 0) return call_error(c, "missing argument 'value'");
  if (!value) value = &c->pos[--nshape];
  if (!value_is_number(value)) return call_error(c, "value must be a number, not %s", value_a_kind(value));
  int64_t shape[UJ_MAX_DIMS];
  unsigned ndim;
  uj_scalar dt = dtype_of_number(value);
  if (!arg_shape(c, c->pos, nshape, shape, &ndim)) return false;
  if (c->arg[1] && !arg_dtype(c, c->arg[1], &dt)) return false;
  return call_return(c, uj_tensor_full(c->L->session, dt, shape, ndim, value_number(value)), out);
}

/* arange(stop), arange(start, stop[, step]) */
static bool f_arange(Call *c, const Callable *f, Value *out) {
  double v[3] = {0, 0, 1};
  bool ints = true;
  if (c->npos > 3) return call_error(c, "takes 1 to 3 numbers (%zu given)", c->npos);
  for (size_t k = 0; k < c->npos; k++) {
    if (!value_is_number(&c->pos[k])) return call_error(c, "expects numbers, not %s", value_a_kind(&c->pos[k]));
    v[c->npos == 1 ? 1 : k] = value_number(&c->pos[k]);
    ints = ints && c->pos[k].kind != V_FLOAT;
  }
  if (v[2] == 0) return call_error(c, "step must not be zero");
  uj_scalar dt = ints ? UJ_INT32 : UJ_FLOAT32;
  if (c->arg[0] && !arg_dtype(c, c->arg[0], &dt)) return false;
  return call_return(c, uj_tensor_arange(c->L->session, dt, v[0], v[1], v[2]), out);
}

static bool f_random(Call *c, const Callable *f, Value *out) {
  int64_t shape[UJ_MAX_DIMS], seed = 0;
  unsigned ndim;
  if (!arg_shape(c, c->pos, c->npos, shape, &ndim)) return false;
  if (c->arg[0] && !arg_int(c, c->arg[0], "seed", &seed)) return false;
  if (seed < 0) return call_error(c, "seed must not be negative");
  uj_session *s = c->L->session;
  return call_return(c, f->code ? uj_tensor_randn(s, shape, ndim, (uint64_t)seed) : uj_tensor_rand(s, shape, ndim, (uint64_t)seed), out);
}

/* ---- tensor(nested list) ---- */

typedef struct Nested {
  int64_t shape[UJ_MAX_DIMS];
  unsigned ndim;
  const Value **flat; /* the numbers, C order */
  size_t n;
} Nested;

static bool nested_shape(Call *c, const Value *v, Nested *nest) {
  nest->ndim = 0;
  while (v->kind == V_LIST || v->kind == V_TUPLE) {
    if (nest->ndim == UJ_MAX_DIMS) return call_error(c, "data nests deeper than %d levels", UJ_MAX_DIMS);
    nest->shape[nest->ndim++] = (int64_t)v->n;
    if (v->n == 0) break;
    v = &v->items[0];
  }
  return true;
}

static bool nested_flatten(Call *c, const Value *v, unsigned depth, Nested *nest) {
  if (depth == nest->ndim) {
    if (!value_is_number(v)) return call_error(c, "data must hold numbers or True/False, not %s", value_a_kind(v));
    nest->flat[nest->n++] = v;
    return true;
  }
  if ((v->kind != V_LIST && v->kind != V_TUPLE) || (int64_t)v->n != nest->shape[depth])
    return call_error(c, "data is ragged: the lists at depth %u must all have %lld items", depth + 1, (long long)nest->shape[depth]);
  for (size_t k = 0; k < v->n; k++)
    if (!nested_flatten(c, &v->items[k], depth + 1, nest)) return false;
  return true;
}

/* The dtype of the numbers: float32 if any is a float, bool if all are
 * True/False, else int32 (int64 when one does not fit). */
static uj_scalar nested_dtype(const Nested *nest) {
  bool any_float = false, all_bool = nest->n > 0, wide = false;
  for (size_t k = 0; k < nest->n; k++) {
    const Value *v = nest->flat[k];
    any_float |= v->kind == V_FLOAT;
    all_bool &= v->kind == V_BOOL;
    wide |= v->kind == V_INT && (v->i < INT32_MIN || v->i > INT32_MAX);
  }
  return any_float || nest->n == 0 ? UJ_FLOAT32 : all_bool ? UJ_BOOL : wide ? UJ_INT64 : UJ_INT32;
}

static void nested_put(uj_scalar dt, void *buf, size_t k, const Value *v) {
  switch (dt) {
  case UJ_BOOL: ((uint8_t *)buf)[k] = value_number(v) != 0; break;
  case UJ_INT32: ((int32_t *)buf)[k] = (int32_t)v->i; break;
  case UJ_INT64: ((int64_t *)buf)[k] = v->kind == V_FLOAT ? (int64_t)v->f : v->i; break;
  case UJ_FLOAT32: ((float *)buf)[k] = (float)value_number(v); break;
  default: ((double *)buf)[k] = value_number(v); break;
  }
}

/* The numbers as a tensor of dt (one of those nested_put writes). */
static uj_tensor *nested_tensor(Call *c, const Nested *nest, uj_scalar dt) {
  size_t esize = dt == UJ_BOOL ? 1 : dt == UJ_INT32 || dt == UJ_FLOAT32 ? 4 : 8;
  void *buf = calloc(nest->n + 1, esize);
  if (!buf) return call_error(c, "out of memory"), NULL;
  for (size_t k = 0; k < nest->n; k++) nested_put(dt, buf, k, nest->flat[k]);
  uj_tensor *t = uj_tensor_from_data(c->L->session, dt, nest->shape, nest->ndim, buf);
  free(buf);
  if (!t) call_lib_error(c);
  return t;
}

/* With dtype=: built exactly (float64 or int64), then cast. */
static uj_tensor *nested_cast(Call *c, const Nested *nest, uj_scalar want) {
  uj_scalar built = nested_dtype(nest);
  if (built != want) built = built == UJ_FLOAT32 ? UJ_FLOAT64 : built == UJ_BOOL ? UJ_BOOL : UJ_INT64;
  uj_tensor *t = nested_tensor(c, nest, built);
  if (!t || built == want) return t;
  uj_tensor *cast = uj_tensor_cast(t, want);
  uj_tensor_free(t);
  if (!cast) call_lib_error(c);
  return cast;
}

static bool f_tensor(Call *c, const Callable *f, Value *out) {
  Nested nest = {0};
  uj_scalar want = UJ_VOID;
  if (c->arg[1] && !arg_dtype(c, c->arg[1], &want)) return false;
  if (!nested_shape(c, c->arg[0], &nest)) return false;
  size_t count = 1;
  for (unsigned k = 0; k < nest.ndim; k++) count *= (size_t)nest.shape[k];
  if (!(nest.flat = calloc(count + 1, sizeof *nest.flat))) return call_error(c, "out of memory");
  uj_tensor *t = NULL;
  if (nested_flatten(c, c->arg[0], 0, &nest))
    t = want == UJ_VOID ? nested_tensor(c, &nest, nested_dtype(&nest)) : nested_cast(c, &nest, want);
  free(nest.flat);
  return t ? call_return(c, t, out) : false;
}

/* ---- files ---- */

static bool f_load(Call *c, const Callable *f, Value *out) {
  const char *path;
  return arg_str(c, c->arg[0], "path", &path) && call_return(c, uj_tensor_load_npy(c->L->session, path), out);
}

static bool f_save(Call *c, const Callable *f, Value *out) {
  uj_tensor *t;
  const char *path;
  if (!arg_tensor(c, c->arg[0], "t", &t) || !arg_str(c, c->arg[1], "path", &path)) return false;
  return uj_tensor_save_npy(t, path) == UJ_OK || call_lib_error(c);
}

/* ---- where, matmul ---- */

/* The shape the tensors among vals broadcast to (NumPy: aligned on the
 * right, size 1 stretches); a mismatch is left for the library to report. */
static void where_shape(const Value *const *vals, int64_t *shape, unsigned *ndim) {
  *ndim = 0;
  for (int k = 0; k < 3; k++) {
    if (vals[k]->kind != V_TENSOR) continue;
    uj_tensor *t = vals[k]->t->t;
    unsigned n = uj_tensor_ndim(t);
    if (n > *ndim) { /* new leading axes of size 1 */
      memmove(shape + (n - *ndim), shape, *ndim * sizeof *shape);
      for (unsigned d = 0; d < n - *ndim; d++) shape[d] = 1;
      *ndim = n;
    }
    for (unsigned d = 0; d < n; d++) {
      int64_t *have = &shape[*ndim - n + d], size = uj_tensor_shape(t)[d];
      if (*have == 1) *have = size;
    }
  }
}

/* v as a tensor: its own, or a new one (*made) of the broadcast shape,
 * of like's dtype (weakly typed as uj_tensor_binary_scalar does). */
static uj_tensor *where_operand(Call *c, const Value *v, const char *what, uj_tensor *like,
                                const int64_t *shape, unsigned ndim, uj_tensor **made) {
  if (v->kind == V_TENSOR) return v->t->t;
  if (!value_is_number(v)) return call_error(c, "%s must be a tensor or a number, not %s", what, value_a_kind(v)), NULL;
  uj_scalar dt = dtype_of_number(v);
  if (like && !(uj_tensor_dtype(like) < UJ_FLOAT16 && v->kind == V_FLOAT && v->f != floor(v->f))) dt = uj_tensor_dtype(like);
  if (!(*made = uj_tensor_full(c->L->session, dt, shape, ndim, value_number(v)))) call_lib_error(c);
  return *made;
}

static bool f_where(Call *c, const Callable *f, Value *out) {
  uj_tensor *made[3] = {NULL, NULL, NULL}, *r = NULL;
  const Value *a = c->arg[1], *b = c->arg[2];
  Value cond = *c->arg[0]; /* a copy to read, not to free */
  if (value_is_number(&cond)) cond = (Value){.kind = V_BOOL, .i = value_number(&cond) != 0};
  int64_t shape[UJ_MAX_DIMS];
  unsigned ndim;
  where_shape((const Value *const[]){&cond, a, b}, shape, &ndim);
  uj_tensor *tc = where_operand(c, &cond, "cond", NULL, shape, ndim, &made[0]);
  uj_tensor *ta = tc ? where_operand(c, a, "a", b->kind == V_TENSOR ? b->t->t : NULL, shape, ndim, &made[1]) : NULL;
  uj_tensor *tb = ta ? where_operand(c, b, "b", ta, shape, ndim, &made[2]) : NULL;
  if (tb && !(r = uj_tensor_where(tc, ta, tb))) call_lib_error(c);
  for (int k = 0; k < 3; k++)
    if (made[k]) uj_tensor_free(made[k]);
  return r ? call_return(c, r, out) : false;
}

static bool f_matmul(Call *c, const Callable *f, Value *out) {
  uj_tensor *a, *b;
  return arg_tensor(c, c->arg[0], "a", &a) && arg_tensor(c, c->arg[1], "b", &b) &&
         call_return(c, uj_tensor_matmul(a, b), out);
}

/* ---- convolution and pools ---- */

static bool f_conv2d(Call *c, const Callable *f, Value *out) {
  uj_tensor *x, *w, *bias = NULL;
  int64_t stride[2] = {1, 1}, padding[2] = {0, 0}, dilation[2] = {1, 1}, groups = 1;
  const Value *const *a = c->arg;
  if (!arg_tensor(c, a[0], "x", &x) || !arg_tensor(c, a[1], "w", &w)) return false;
  if (a[2] && a[2]->kind != V_NONE && !arg_tensor(c, a[2], "bias", &bias)) return false;
  if ((a[3] && !arg_pair(c, a[3], "stride", stride)) || (a[4] && !arg_pair(c, a[4], "padding", padding)) ||
      (a[5] && !arg_pair(c, a[5], "dilation", dilation)) || (a[6] && !arg_int(c, a[6], "groups", &groups)))
    return false;
  return call_return(c, uj_tensor_conv2d(x, w, bias, stride, padding, dilation, groups), out);
}

static bool f_layernorm(Call *c, const Callable *f, Value *out) {
  uj_tensor *x, *w = NULL, *b = NULL;
  double eps = 1e-5;
  const Value *const *a = c->arg;
  if (!arg_tensor(c, a[0], "x", &x)) return false;
  if ((a[1] && a[1]->kind != V_NONE && !arg_tensor(c, a[1], "weight", &w)) || (a[2] && a[2]->kind != V_NONE && !arg_tensor(c, a[2], "bias", &b)))
    return false;
  if (a[3] && !value_is_number(a[3])) return call_error(c, "eps must be a number, not %s", value_a_kind(a[3]));
  if (a[3]) eps = value_number(a[3]);
  return call_return(c, uj_tensor_layernorm(x, w, b, eps), out);
}

static bool f_cross_entropy(Call *c, const Callable *f, Value *out) {
  uj_tensor *logits, *target;
  int64_t ignore = -100;
  const Value *const *a = c->arg;
  if (!arg_tensor(c, a[0], "logits", &logits) || !arg_tensor(c, a[1], "target", &target) ||
      (a[2] && !arg_int(c, a[2], "ignore_index", &ignore)))
    return false;
  return call_return(c, uj_tensor_cross_entropy(logits, target, ignore), out);
}

static bool f_attention(Call *c, const Callable *f, Value *out) {
  uj_tensor *q, *k, *v;
  bool causal = false;
  const Value *const *a = c->arg;
  if (!arg_tensor(c, a[0], "q", &q) || !arg_tensor(c, a[1], "k", &k) || !arg_tensor(c, a[2], "v", &v) ||
      (a[3] && !arg_bool(c, a[3], "causal", &causal)))
    return false;
  return call_return(c, uj_tensor_attention(q, k, v, causal), out);
}

static bool f_pool(Call *c, const Callable *f, Value *out) {
  uj_tensor *x;
  int64_t kernel[2], stride[2], padding[2] = {0, 0};
  const Value *const *a = c->arg;
  bool has_stride = a[2] && a[2]->kind != V_NONE;
  if (!arg_tensor(c, a[0], "x", &x) || !arg_pair(c, a[1], "kernel", kernel)) return false;
  if ((has_stride && !arg_pair(c, a[2], "stride", stride)) || (a[3] && !arg_pair(c, a[3], "padding", padding)))
    return false;
  uj_tensor *(*pool)(uj_tensor *, const int64_t *, const int64_t *, const int64_t *) =
      f->code ? uj_tensor_avgpool2d : uj_tensor_maxpool2d;
  return call_return(c, pool(x, kernel, has_stride ? stride : NULL, padding), out);
}

/* ---- cat, stack ---- */

static bool f_join(Call *c, const Callable *f, Value *out) {
  const Value *items = c->pos;
  size_t n = c->npos;
  int axis = 0;
  if (n == 1 && (items[0].kind == V_LIST || items[0].kind == V_TUPLE)) n = items[0].n, items = items[0].items;
  if (n == 0) return call_error(c, "give at least one tensor");
  if (c->arg[0] && !arg_axis(c, c->arg[0], "axis", &axis)) return false;
  uj_tensor **ts = calloc(n, sizeof *ts);
  if (!ts) return call_error(c, "out of memory");
  bool ok = true;
  for (size_t k = 0; ok && k < n; k++) ok = arg_tensor(c, &items[k], "each item", &ts[k]);
  uj_tensor *r = NULL;
  if (ok) r = f->code ? uj_tensor_stack(ts, (unsigned)n, axis) : uj_tensor_cat(ts, (unsigned)n, axis);
  free(ts);
  return ok && call_return(c, r, out);
}

static bool f_print(Call *c, const Callable *f, Value *out) {
  for (size_t k = 0; k < c->npos; k++)
    if (!print_value(c->L, c->at, &c->pos[k])) return false;
  return true;
}

/* ---- the table ---- */

static const Callable functions[] = {
    {"zeros", f_fill, {"dtype"}, 0, true, 0},
    {"ones", f_fill, {"dtype"}, 0, true, 1},
    {"full", f_full, {"value", "dtype"}, 0, true, 0},
    {"arange", f_arange, {"dtype"}, 1, true, 0},
    {"rand", f_random, {"seed"}, 0, true, 0},
    {"randn", f_random, {"seed"}, 0, true, 1},
    {"tensor", f_tensor, {"data", "dtype"}, 1, false, 0},
    {"load", f_load, {"path"}, 1, false, 0},
    {"save", f_save, {"t", "path"}, 2, false, 0},
    {"where", f_where, {"cond", "a", "b"}, 3, false, 0},
    {"matmul", f_matmul, {"a", "b"}, 2, false, 0},
    {"conv2d", f_conv2d, {"x", "w", "bias", "stride", "padding", "dilation", "groups"}, 2, false, 0},
    {"maxpool2d", f_pool, {"x", "kernel", "stride", "padding"}, 2, false, 0},
    {"avgpool2d", f_pool, {"x", "kernel", "stride", "padding"}, 2, false, 1},
    {"layernorm", f_layernorm, {"x", "weight", "bias", "eps"}, 1, false, 0},
    {"cross_entropy", f_cross_entropy, {"logits", "target", "ignore_index"}, 2, false, 0},
    {"attention", f_attention, {"q", "k", "v", "causal"}, 3, false, 0},
    {"cat", f_join, {"axis"}, 1, true, 0},
    {"stack", f_join, {"axis"}, 1, true, 1},
    {"print", f_print, {NULL}, 0, true, 0},
};

void func_names(NameSink add, void *acc) {
  for (size_t k = 0; k < sizeof functions / sizeof *functions; k++) add(acc, functions[k].name);
  train_names(false, add, acc);
}

bool func_call(Lang *L, const Node *n, Value *out) {
  const Callable *f = NULL;
  Callable m;
  for (size_t k = 0; !f && k < sizeof functions / sizeof *functions; k++)
    if (!strcmp(functions[k].name, n->name)) f = &functions[k];
  if (!f) f = train_function_find(n->name);
  if (!f && !method_find(n->name, &m)) {
    lang_error(&L->err, n->line, n->col, "unknown function '%s'", n->name);
    return false;
  }
  Call c;
  bool ok = call_eval_args(L, n, n->name, &c);
  if (ok && f) ok = call_bind(&c, f) && f->fn(&c, f, out);
  else if (ok) ok = method_call_with(&c, &m, out);
  call_free(&c);
  return ok;
}
