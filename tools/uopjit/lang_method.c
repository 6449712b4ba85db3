/* lang_method.c — the methods and attributes of tensors.
 *
 * In: a tensor value (self) and a call's arguments. Out: a new value, most
 * often the tensor an operation of tensor.h returns. Besides the table
 * below, every elementwise op of the library is a method under the name
 * uj_unop_name / uj_binop_name gives it (x.exp(), x.maximum(0)). Shapes
 * and axis lists are given as several ints or one list: x.reshape(2, 3)
 * is x.reshape([2, 3]). */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "lang.h"

static uj_tensor *self_of(const Call *c) { return c->self->t->t; }

/* ---- movement ---- */

static bool m_reshape(Call *c, const Callable *f, Value *out) {
  int64_t shape[UJ_MAX_DIMS];
  unsigned ndim;
  return arg_shape(c, c->pos, c->npos, shape, &ndim) && call_return(c, uj_tensor_reshape(self_of(c), shape, ndim), out);
}

/* expand: -1 keeps the size of the axis it lines up with (the library's rule). */
static bool m_expand(Call *c, const Callable *f, Value *out) {
  int64_t shape[UJ_MAX_DIMS];
  unsigned ndim;
  return arg_shape(c, c->pos, c->npos, shape, &ndim) && call_return(c, uj_tensor_expand(self_of(c), shape, ndim), out);
}

/* Axes from star arguments (permute) or one argument (flip). */
static bool m_axes(Call *c, const Value *v, size_t n, int *axes, unsigned *count) {
  int64_t wide[UJ_MAX_DIMS];
  return arg_shape(c, v, n, wide, count) && arg_narrow_axes(c, wide, *count, axes);
}

static bool m_permute(Call *c, const Callable *f, Value *out) {
  int order[UJ_MAX_DIMS];
  unsigned n;
  return m_axes(c, c->pos, c->npos, order, &n) && call_return(c, uj_tensor_permute(self_of(c), order, n), out);
}

static bool m_flip(Call *c, const Callable *f, Value *out) {
  int axes[UJ_MAX_DIMS];
  unsigned n;
  return m_axes(c, c->arg[0], 1, axes, &n) && call_return(c, uj_tensor_flip(self_of(c), axes, n), out);
}

static bool m_reverse(Call *c, Value *out) {
  int order[UJ_MAX_DIMS];
  unsigned n = uj_tensor_ndim(self_of(c));
  for (unsigned k = 0; k < n; k++) order[k] = (int)(n - 1 - k);
  return call_return(c, uj_tensor_permute(self_of(c), order, n), out);
}

/* transpose(): every axis reversed, as .T; transpose(a0, a1): two swapped. */
static bool m_transpose(Call *c, const Callable *f, Value *out) {
  int a0, a1;
  if (!c->arg[0] && !c->arg[1]) return m_reverse(c, out);
  if (!c->arg[0] || !c->arg[1]) return call_error(c, "give two axes, or none to reverse them all");
  return arg_axis(c, c->arg[0], "axis0", &a0) && arg_axis(c, c->arg[1], "axis1", &a1) &&
         call_return(c, uj_tensor_transpose(self_of(c), a0, a1), out);
}

/* One (lo, hi) pair per axis, None for an axis left alone: (0, 0) for
 * pad, (0, size) for shrink. */
static bool m_pairs(Call *c, const Value *v, bool shrink, int64_t *lohi) {
  unsigned ndim = uj_tensor_ndim(self_of(c)), n;
  if ((v->kind != V_LIST && v->kind != V_TUPLE) || v->n != ndim)
    return call_error(c, "give a list of %u (lo, hi) pairs, one per axis", ndim);
  for (unsigned k = 0; k < ndim; k++) {
    const Value *p = &v->items[k];
    lohi[2 * k] = 0, lohi[2 * k + 1] = shrink ? uj_tensor_shape(self_of(c))[k] : 0;
    if (p->kind == V_NONE) continue;
    if ((p->kind != V_LIST && p->kind != V_TUPLE) || p->n != 2) return call_error(c, "axis %u: expected a (lo, hi) pair or None", k);
    if (!arg_ints(c, p, "a pair", &lohi[2 * k], 2, &n)) return false;
  }
  return true;
}

static bool m_pad_shrink(Call *c, const Callable *f, Value *out) {
  int64_t lohi[2 * UJ_MAX_DIMS];
  uj_tensor *t = self_of(c);
  unsigned n = uj_tensor_ndim(t);
  if (!m_pairs(c, c->arg[0], f->code, lohi)) return false;
  return call_return(c, f->code ? uj_tensor_shrink(t, lohi, n) : uj_tensor_pad(t, lohi, n), out);
}

/* ---- reductions ---- */

static bool m_reduce(Call *c, const Callable *f, Value *out) {
  int axes[UJ_MAX_DIMS];
  unsigned n;
  bool keepdim = false;
  const Value *keep = c->arg[1] ? c->arg[1] : c->arg[2];
  if (c->arg[1] && c->arg[2]) return call_error(c, "give keepdim or keepdims, not both");
  if (!arg_axes(c, c->arg[0], axes, &n) || (keep && !arg_bool(c, keep, "keepdim", &keepdim))) return false;
  return call_return(c, uj_tensor_reduce((uj_reduceop)f->code, self_of(c), axes, n, keepdim), out);
}

static bool m_softmax(Call *c, const Callable *f, Value *out) {
  int axis = -1;
  if (c->arg[0] && !arg_axis(c, c->arg[0], "axis", &axis)) return false;
  uj_tensor *t = self_of(c);
  return call_return(c, f->code ? uj_tensor_log_softmax(t, axis) : uj_tensor_softmax(t, axis), out);
}

/* ---- the rest ---- */

static bool m_cast(Call *c, const Callable *f, Value *out) {
  uj_scalar dt;
  return arg_dtype(c, c->arg[0], &dt) && call_return(c, uj_tensor_cast(self_of(c), dt), out);
}

static bool m_gather(Call *c, const Callable *f, Value *out) {
  int axis;
  uj_tensor *index;
  return arg_axis(c, c->arg[0], "axis", &axis) && arg_tensor(c, c->arg[1], "index", &index) &&
         call_return(c, uj_tensor_gather(self_of(c), axis, index), out);
}

static bool m_matmul(Call *c, const Callable *f, Value *out) {
  uj_tensor *b;
  return arg_tensor(c, c->arg[0], "other", &b) && call_return(c, uj_tensor_matmul(self_of(c), b), out);
}

static bool m_realize(Call *c, const Callable *f, Value *out) {
  uj_tensor *t = self_of(c);
  if (uj_tensor_realize(&t, 1) != UJ_OK) return call_lib_error(c);
  return value_copy(c->self, out) || call_error(c, "out of memory");
}

static bool m_numel(Call *c, const Callable *f, Value *out) {
  *out = (Value){.kind = V_INT, .i = uj_tensor_numel(self_of(c))};
  return true;
}

static bool m_unary(Call *c, const Callable *f, Value *out) {
  return call_return(c, uj_tensor_unary((uj_unop)f->code, self_of(c)), out);
}

static bool m_binary(Call *c, const Callable *f, Value *out) {
  const Value *o = c->arg[0];
  uj_binop op = (uj_binop)f->code;
  if (o->kind == V_TENSOR) return call_return(c, uj_tensor_binary(op, self_of(c), o->t->t), out);
  if (!value_is_number(o)) return call_error(c, "other must be a tensor or a number, not %s", value_a_kind(o));
  return call_return(c, uj_tensor_binary_scalar(op, self_of(c), value_number(o), false), out);
}

static const Callable methods[] = {
    {"reshape", m_reshape, {NULL}, 1, true, 0},
    {"expand", m_expand, {NULL}, 1, true, 0},
    {"permute", m_permute, {NULL}, 1, true, 0},
    {"flip", m_flip, {"axis"}, 1, false, 0},
    {"transpose", m_transpose, {"axis0", "axis1"}, 0, false, 0},
    {"pad", m_pad_shrink, {"pairs"}, 1, false, 0},
    {"shrink", m_pad_shrink, {"pairs"}, 1, false, 1},
    {"sum", m_reduce, {"axis", "keepdim", "keepdims"}, 0, false, UJ_RED_SUM},
    {"max", m_reduce, {"axis", "keepdim", "keepdims"}, 0, false, UJ_RED_MAX},
    {"min", m_reduce, {"axis", "keepdim", "keepdims"}, 0, false, UJ_RED_MIN},
    {"mean", m_reduce, {"axis", "keepdim", "keepdims"}, 0, false, UJ_RED_MEAN},
    {"argmax", m_reduce, {"axis", "keepdim", "keepdims"}, 0, false, UJ_RED_ARGMAX},
    {"argmin", m_reduce, {"axis", "keepdim", "keepdims"}, 0, false, UJ_RED_ARGMIN},
    {"softmax", m_softmax, {"axis"}, 0, false, 0},
    {"log_softmax", m_softmax, {"axis"}, 0, false, 1},
    {"cast", m_cast, {"dtype"}, 1, false, 0},
    {"astype", m_cast, {"dtype"}, 1, false, 0},
    {"gather", m_gather, {"axis", "index"}, 2, false, 0},
    {"matmul", m_matmul, {"other"}, 1, false, 0},
    {"realize", m_realize, {NULL}, 0, false, 0},
    {"numel", m_numel, {NULL}, 0, false, 0},
};

void method_names(NameSink add, void *acc) {
  for (size_t k = 0; k < sizeof methods / sizeof *methods; k++) add(acc, methods[k].name);
  train_names(true, add, acc);
  for (int op = 0; op < UJ_UN_COUNT; op++) add(acc, uj_unop_name((uj_unop)op));
  for (int op = 0; op < UJ_BIN_COUNT; op++) add(acc, uj_binop_name((uj_binop)op));
}

bool method_find(const char *name, Callable *out) {
  for (size_t k = 0; k < sizeof methods / sizeof *methods; k++)
    if (!strcmp(methods[k].name, name)) return *out = methods[k], true;
  if (train_method_find(name, out)) return true;
  for (int op = 0; op < UJ_UN_COUNT; op++)
    if (!strcmp(uj_unop_name((uj_unop)op), name)) return *out = (Callable){name, m_unary, {NULL}, 0, false, op}, true;
  for (int op = 0; op < UJ_BIN_COUNT; op++)
    if (!strcmp(uj_binop_name((uj_binop)op), name)) return *out = (Callable){name, m_binary, {"other"}, 1, false, op}, true;
  return false;
}

static bool method_run(Call *c, const Callable *f, Value *out) {
  if (c->self->kind != V_TENSOR)
    return call_error(c, "expects a tensor, not %s", value_a_kind(c->self));
  return call_bind(c, f) && f->fn(c, f, out);
}

bool method_call(Lang *L, const Node *n, const Value *self, Value *out) {
  Callable f;
  if (self->kind == V_OPTIM) {
    Call c;
    bool ok = call_eval_args(L, n, n->name, &c);
    c.self = self;
    ok = ok && train_optim_method(&c, n->name, out);
    call_free(&c);
    return ok;
  }
  if (!method_find(n->name, &f)) {
    lang_error(&L->err, n->line, n->col, "%s has no method '%s'", self->kind == V_TENSOR ? "a tensor" : value_kind_name(self), n->name);
    return false;
  }
  Call c;
  bool ok = call_eval_args(L, n, n->name, &c);
  c.self = self;
  ok = ok && method_run(&c, &f, out);
  call_free(&c);
  return ok;
}

bool method_call_with(Call *c, const Callable *f, Value *out) {
  if (c->npos == 0) return call_error(c, "missing argument: the tensor to apply it to");
  Value *all = c->pos;
  c->self = &all[0], c->pos = all + 1, c->npos--;
  bool ok = method_run(c, f, out);
  c->pos = all, c->npos++;
  return ok;
}

/* ---- attributes ---- */

static bool attr_shape(Lang *L, const Node *n, uj_tensor *t, Value *out) {
  unsigned ndim = uj_tensor_ndim(t);
  *out = (Value){.kind = V_TUPLE};
  if (ndim && !(out->items = calloc(ndim, sizeof *out->items))) {
    lang_error(&L->err, n->line, n->col, "out of memory");
    return false;
  }
  for (out->n = 0; out->n < ndim; out->n++) out->items[out->n] = (Value){.kind = V_INT, .i = uj_tensor_shape(t)[out->n]};
  return true;
}

bool method_attr(Lang *L, const Node *n, const Value *self, Value *out) {
  Callable f;
  char buf[32];
  Call c = {.L = L, .at = n, .name = n->name, .self = self};
  if (self->kind == V_OPTIM) return train_optim_attr(&c, self->opt, n->name, out);
  if (self->kind != V_TENSOR) return call_error(&c, "%s has no attributes", value_kind_name(self));
  uj_tensor *t = self->t->t;
  if (!strcmp(n->name, "grad")) return train_grad_attr(&c, t, out);
  if (!strcmp(n->name, "T")) return m_reverse(&c, out);
  if (!strcmp(n->name, "shape")) return attr_shape(L, n, t, out);
  if (!strcmp(n->name, "ndim")) return *out = (Value){.kind = V_INT, .i = uj_tensor_ndim(t)}, true;
  if (!strcmp(n->name, "dtype")) return value_str(dtype_name(uj_tensor_dtype(t), buf, sizeof buf), out) || call_error(&c, "out of memory");
  if (method_find(n->name, &f)) {
    lang_error(&L->err, n->line, n->col, "'%s' is a method: call it as .%s()", n->name, n->name);
    return false;
  }
  lang_error(&L->err, n->line, n->col, "a tensor has no attribute '%s' (T, shape, dtype, ndim, grad)", n->name);
  return false;
}
