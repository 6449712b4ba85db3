/* lang_args.c — arguments of functions and methods: evaluating, binding
 * them to parameters as Python does, converting each to what the library
 * wants.
 *
 * In: a call node and a Callable (its parameter names, how many are
 * required, whether positional arguments are gathered). Out: c->arg[k],
 * the value given for parameter k or NULL. Errors name the function:
 * `reshape: takes at most 1 argument (2 given)`, `sum: unexpected keyword
 * argument 'axes'`, `conv2d: stride must be an int or a list of 2 ints,
 * not a string`. */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"

bool call_error(Call *c, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  lang_error(&c->L->err, c->at->line, c->at->col, "%s: %s", c->name, msg);
  return false;
}

bool call_lib_error(Call *c) { return eval_lib_error(c->L, c->at, "the operation failed"); }

bool call_eval_args(Lang *L, const Node *n, const char *name, Call *c) {
  *c = (Call){.L = L, .at = n, .name = name};
  size_t nkw = 0;
  for (size_t k = 0; k < n->n; k++) nkw += n->keys[k] != NULL;
  c->pos = calloc(n->n - nkw + 1, sizeof *c->pos);
  c->kw = calloc(nkw + 1, sizeof *c->kw);
  c->keys = calloc(nkw + 1, sizeof *c->keys);
  if (!c->pos || !c->kw || !c->keys) return call_error(c, "out of memory");
  for (size_t k = 0; k < n->n; k++) {
    Value *v = n->keys[k] ? &c->kw[c->nkw] : &c->pos[c->npos];
    if (!lang_eval_expr(L, n->items[k], v)) return false;
    if (n->keys[k]) c->keys[c->nkw++] = n->keys[k];
    else c->npos++;
  }
  return true;
}

void call_free(Call *c) {
  for (size_t k = 0; k < c->npos; k++) value_free(&c->pos[k]);
  for (size_t k = 0; k < c->nkw; k++) value_free(&c->kw[k]);
  free(c->pos);
  free(c->kw);
  free(c->keys);
}

/* ---- binding ---- */

static int call_param(const Callable *f, const char *name) {
  for (int k = 0; k < CALL_MAX_PARAMS && f->params[k]; k++)
    if (!strcmp(f->params[k], name)) return k;
  return -1;
}

static unsigned call_nparams(const Callable *f) {
  unsigned n = 0;
  while (n < CALL_MAX_PARAMS && f->params[n]) n++;
  return n;
}

bool call_bind(Call *c, const Callable *f) {
  unsigned np = call_nparams(f);
  memset(c->arg, 0, sizeof c->arg);
  if (!f->star && c->npos > np)
    return call_error(c, "takes at most %u argument%s (%zu given)", np, np == 1 ? "" : "s", c->npos);
  for (size_t k = 0; !f->star && k < c->npos; k++) c->arg[k] = &c->pos[k];
  for (size_t k = 0; k < c->nkw; k++) {
    int p = call_param(f, c->keys[k]);
    if (p < 0) return call_error(c, "unexpected keyword argument '%s'", c->keys[k]);
    if (c->arg[p]) return call_error(c, "argument '%s' given twice", c->keys[k]);
    c->arg[p] = &c->kw[k];
  }
  if (f->star && f->required > 0 && c->npos == 0) return call_error(c, "expects at least one argument");
  for (unsigned k = 0; !f->star && k < f->required; k++)
    if (!c->arg[k]) return call_error(c, "missing argument '%s'", f->params[k]);
  return true;
}

/* ---- conversions ---- */

static bool arg_kind_error(Call *c, const Value *v, const char *what, const char *want) {
  return call_error(c, "%s must be %s, not %s", what, want, value_a_kind(v));
}

bool arg_tensor(Call *c, const Value *v, const char *what, uj_tensor **t) {
  if (v->kind != V_TENSOR) return arg_kind_error(c, v, what, "a tensor");
  *t = v->t->t;
  return true;
}

bool arg_int(Call *c, const Value *v, const char *what, int64_t *i) {
  if (v->kind != V_INT) return arg_kind_error(c, v, what, "an int");
  *i = v->i;
  return true;
}

bool arg_bool(Call *c, const Value *v, const char *what, bool *b) {
  if (v->kind != V_BOOL && v->kind != V_INT) return arg_kind_error(c, v, what, "True or False");
  *b = v->i != 0;
  return true;
}

bool arg_str(Call *c, const Value *v, const char *what, const char **s) {
  if (v->kind != V_STR) return arg_kind_error(c, v, what, "a string");
  *s = v->s;
  return true;
}

const char *dtype_name(uj_scalar s, char *buf, size_t size) {
  return uj_dtype_name(uj_dtype_scalar(s), buf, size);
}

/* The dtype named name, or UJ_VOID. */
static uj_scalar dtype_by_name(const char *name) {
  char buf[32];
  for (int s = UJ_BOOL; s < UJ_SCALAR_COUNT; s++)
    if (!strcmp(dtype_name((uj_scalar)s, buf, sizeof buf), name)) return (uj_scalar)s;
  return UJ_VOID;
}

bool arg_dtype(Call *c, const Value *v, uj_scalar *dt) {
  const char *name = NULL;
  if (!arg_str(c, v, "dtype", &name)) return false;
  if ((*dt = dtype_by_name(name)) != UJ_VOID) return true;
  return call_error(c, "unknown dtype '%s' (known: bool, int8 .. int64, uint8 .. uint64, float16, "
                       "bfloat16, float32, float64)", name);
}

static bool arg_is_seq(const Value *v) { return v->kind == V_LIST || v->kind == V_TUPLE; }

bool arg_ints(Call *c, const Value *v, const char *what, int64_t *out, unsigned max, unsigned *n) {
  const Value *items = arg_is_seq(v) ? v->items : v;
  size_t count = arg_is_seq(v) ? v->n : 1;
  if (count > max) return call_error(c, "%s has %zu values, at most %u allowed", what, count, max);
  for (size_t k = 0; k < count; k++)
    if (items[k].kind != V_INT) return arg_kind_error(c, &items[k], what, "an int or a list of ints");
  for (size_t k = 0; k < count; k++) out[k] = items[k].i;
  *n = (unsigned)count;
  return true;
}

bool arg_shape(Call *c, const Value *vals, size_t n, int64_t *shape, unsigned *ndim) {
  if (n == 1 && arg_is_seq(&vals[0])) return arg_ints(c, &vals[0], "the shape", shape, UJ_MAX_DIMS, ndim);
  if (n > UJ_MAX_DIMS) return call_error(c, "a shape has at most %d axes, not %zu", UJ_MAX_DIMS, n);
  for (size_t k = 0; k < n; k++) {
    if (vals[k].kind != V_INT) return arg_kind_error(c, &vals[k], "the shape", "ints or one list of ints");
    shape[k] = vals[k].i;
  }
  *ndim = (unsigned)n;
  return true;
}

bool arg_pair(Call *c, const Value *v, const char *what, int64_t out[2]) {
  unsigned n;
  if (v->kind == V_INT) return out[0] = out[1] = v->i, true;
  if (!arg_is_seq(v) || v->n != 2) return arg_kind_error(c, v, what, "an int or a list of 2 ints");
  return arg_ints(c, v, what, out, 2, &n);
}

bool arg_narrow_axes(Call *c, const int64_t *wide, unsigned n, int *axes) {
  for (unsigned k = 0; k < n; k++) {
    if (wide[k] < INT_MIN || wide[k] > INT_MAX) return call_error(c, "axis %lld is out of range", (long long)wide[k]);
    axes[k] = (int)wide[k];
  }
  return true;
}

bool arg_axis(Call *c, const Value *v, const char *what, int *axis) {
  int64_t wide = 0;
  return arg_int(c, v, what, &wide) && arg_narrow_axes(c, &wide, 1, axis);
}

bool arg_axes(Call *c, const Value *v, int *axes, unsigned *n) {
  int64_t wide[UJ_MAX_DIMS];
  *n = 0;
  if (!v || v->kind == V_NONE) return true;
  return arg_ints(c, v, "axis", wide, UJ_MAX_DIMS, n) && arg_narrow_axes(c, wide, *n, axes);
}

bool call_return(Call *c, uj_tensor *t, Value *out) {
  if (!t) return call_lib_error(c);
  return value_tensor(t, out) || call_error(c, "out of memory");
}
