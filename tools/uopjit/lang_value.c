/* lang_value.c — the values of the tensor language.
 *
 * In/out: Values. A value owns its string and list items; tensors are
 * shared through a counted TensorRef, so that `y = x` and a temporary
 * both holding one tensor free it (uj_tensor_free) exactly once, when the
 * last value holding it goes. */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "lang.h"

void value_free(Value *v) {
  free(v->s);
  for (size_t k = 0; k < v->n; k++) value_free(&v->items[k]);
  free(v->items);
  if (v->t && --v->t->refs == 0) {
    uj_tensor_free(v->t->t);
    free(v->t);
  }
  if (v->opt && --v->opt->refs == 0) {
    uj_optim_free(v->opt->o);
    value_free(v->opt->params);
    free(v->opt->params), free(v->opt);
  }
  *v = (Value){.kind = V_NONE};
}

bool value_copy(const Value *v, Value *out) {
  *out = *v;
  out->s = NULL, out->items = NULL, out->n = 0;
  if (v->t) v->t->refs++;
  if (v->opt) v->opt->refs++;
  if (v->s && !(out->s = strdup(v->s))) return value_free(out), false;
  if (v->n && !(out->items = calloc(v->n, sizeof *out->items))) return value_free(out), false;
  for (; out->n < v->n; out->n++)
    if (!value_copy(&v->items[out->n], &out->items[out->n])) return value_free(out), false;
  return true;
}

bool value_tensor(uj_tensor *t, Value *out) {
  *out = (Value){.kind = V_TENSOR};
  if (!(out->t = malloc(sizeof *out->t))) {
    uj_tensor_free(t);
    return false;
  }
  *out->t = (TensorRef){t, 1};
  return true;
}

bool value_str(const char *s, Value *out) {
  *out = (Value){.kind = V_STR};
  return (out->s = strdup(s)) != NULL;
}

const char *value_kind_name(const Value *v) {
  static const char *const names[] = {
      [V_NONE] = "None", [V_INT] = "int",   [V_FLOAT] = "float", [V_BOOL] = "bool",
      [V_STR] = "string", [V_LIST] = "list", [V_TUPLE] = "tuple", [V_TENSOR] = "tensor",
      [V_OPTIM] = "optimizer",
  };
  return names[v->kind];
}

const char *value_a_kind(const Value *v) {
  static const char *const names[] = {
      [V_NONE] = "None",       [V_INT] = "an int",   [V_FLOAT] = "a float",  [V_BOOL] = "a bool",
      [V_STR] = "a string",    [V_LIST] = "a list",  [V_TUPLE] = "a tuple",  [V_TENSOR] = "a tensor",
      [V_OPTIM] = "an optimizer",
  };
  return names[v->kind];
}

bool value_is_number(const Value *v) { return v->kind == V_INT || v->kind == V_FLOAT || v->kind == V_BOOL; }

double value_number(const Value *v) { return v->kind == V_FLOAT ? v->f : (double)v->i; }
