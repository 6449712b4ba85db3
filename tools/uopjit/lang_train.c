/* lang_train.c — training in the tensor language: parameters, backward,
 * grads, dropout and optimizers (docs/language.md, "Training").
 *
 * In: calls on tensors (w.requires_grad(), loss.backward(), w.grad,
 * w.zero_grad(), x.dropout(p)), the functions sgd(...), adamw(...),
 * manual_seed(seed) and rng_next(), and the methods
 * of the optimizer they return (opt.step(loss), opt.zero_grad(),
 * opt.set_lr(x); opt.lr). Out: values; the work is the library's
 * (tensor.h). */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"

/* ---- methods of tensors ---- */

static bool t_requires_grad(Call *c, const Callable *f, Value *out) {
  bool on = true;
  if (c->arg[0] && !arg_bool(c, c->arg[0], "on", &on)) return false;
  if (uj_tensor_set_requires_grad(c->self->t->t, on) != UJ_OK) return call_lib_error(c);
  return value_copy(c->self, out) || call_error(c, "out of memory");
}

static bool t_backward(Call *c, const Callable *f, Value *out) {
  return uj_tensor_backward(c->self->t->t) == UJ_OK || call_lib_error(c);
}

static bool t_zero_grad(Call *c, const Callable *f, Value *out) {
  uj_tensor_zero_grad(c->self->t->t);
  return true;
}

/* x.dropout(p), also dropout(x, p) */
static bool t_dropout(Call *c, const Callable *f, Value *out) {
  if (!value_is_number(c->arg[0])) return call_error(c, "p must be a number, not %s", value_a_kind(c->arg[0]));
  return call_return(c, uj_tensor_dropout(c->self->t->t, value_number(c->arg[0])), out);
}

static const Callable tensor_methods[] = {
    {"requires_grad", t_requires_grad, {"on"}, 0, false, 0},
    {"backward", t_backward, {NULL}, 0, false, 0},
    {"zero_grad", t_zero_grad, {NULL}, 0, false, 0},
    {"dropout", t_dropout, {"p"}, 1, false, 0},
};

bool train_method_find(const char *name, Callable *out) {
  for (size_t k = 0; k < sizeof tensor_methods / sizeof *tensor_methods; k++)
    if (!strcmp(tensor_methods[k].name, name)) return *out = tensor_methods[k], true;
  return false;
}

/* t.grad: a handle of its own on the grad's graph (the grad stays the
 * parameter's); an error when there is none. */
bool train_grad_attr(Call *c, uj_tensor *t, Value *out) {
  uj_tensor *g = uj_tensor_grad(t);
  if (!g) return call_error(c, uj_tensor_requires_grad(t) ? "no grad yet: call loss.backward() first" : "not a parameter: call .requires_grad() first");
  return call_return(c, uj_tensor_reshape(g, uj_tensor_shape(g), uj_tensor_ndim(g)), out);
}

/* ---- optimizers ---- */

static bool arg_number(Call *c, const Value *v, const char *what, double *x) {
  if (!v) return true;
  if (!value_is_number(v)) return call_error(c, "%s must be a number, not %s", what, value_a_kind(v));
  *x = value_number(v);
  return true;
}

/* sgd(params, lr, momentum, weight_decay, max_grad_norm);
 * adamw(params, lr, beta1, beta2, eps, weight_decay, max_grad_norm). */
static bool f_optimizer(Call *c, const Callable *f, Value *out) {
  const Value *ps = c->arg[0];
  if (ps->kind != V_LIST && ps->kind != V_TUPLE) return call_error(c, "params must be a list of tensors, not %s", value_a_kind(ps));
  uj_optim_config cfg = {.kind = f->code ? UJ_OPTIM_ADAMW : UJ_OPTIM_SGD};
  bool ok = arg_number(c, c->arg[1], "lr", &cfg.lr);
  if (f->code)
    ok = ok && arg_number(c, c->arg[2], "beta1", &cfg.beta1) && arg_number(c, c->arg[3], "beta2", &cfg.beta2) &&
         arg_number(c, c->arg[4], "eps", &cfg.eps) && arg_number(c, c->arg[5], "weight_decay", &cfg.weight_decay) &&
         arg_number(c, c->arg[6], "max_grad_norm", &cfg.max_grad_norm);
  else
    ok = ok && arg_number(c, c->arg[2], "momentum", &cfg.momentum) && arg_number(c, c->arg[3], "weight_decay", &cfg.weight_decay) &&
         arg_number(c, c->arg[4], "max_grad_norm", &cfg.max_grad_norm);
  if (!ok) return false;
  uj_tensor **ts = malloc((ps->n ? ps->n : 1) * sizeof *ts);
  if (!ts) return call_error(c, "out of memory");
  for (size_t k = 0; ok && k < ps->n; k++) {
    char what[32];
    snprintf(what, sizeof what, "params[%zu]", k);
    ok = arg_tensor(c, &ps->items[k], what, &ts[k]);
  }
  uj_session *s = c->L->session;
  uj_optimizer *o = ok ? uj_optim_new(s, &cfg, ts, ps->n) : NULL;
  free(ts);
  if (!ok) return false;
  if (!o) return call_lib_error(c);
  OptimRef *r = malloc(sizeof *r);
  Value *held = malloc(sizeof *held);
  if (!r || !held || !value_copy(ps, held)) {
    free(r), free(held), uj_optim_free(o);
    return call_error(c, "out of memory");
  }
  *r = (OptimRef){o, f->code ? "adamw" : "sgd", held, 1};
  *out = (Value){.kind = V_OPTIM, .opt = r};
  return true;
}

/* ---- the session's generator (dropout's masks) ---- */

/* manual_seed(seed): uj_session_rng_seed. */
static bool f_manual_seed(Call *c, const Callable *f, Value *out) {
  int64_t seed;
  if (!arg_int(c, c->arg[0], "seed", &seed)) return false;
  if (seed < 0) return call_error(c, "seed must not be negative");
  return uj_session_rng_seed(c->L->session, (uint64_t)seed) == UJ_OK || call_lib_error(c);
}

/* rng_next(): uj_session_rng_next. */
static bool f_rng_next(Call *c, const Callable *f, Value *out) {
  return uj_session_rng_next(c->L->session) == UJ_OK || call_lib_error(c);
}

static const Callable train_functions[] = {
    {"sgd", f_optimizer, {"params", "lr", "momentum", "weight_decay", "max_grad_norm"}, 2, false, 0},
    {"adamw", f_optimizer, {"params", "lr", "beta1", "beta2", "eps", "weight_decay", "max_grad_norm"}, 2, false, 1},
    {"manual_seed", f_manual_seed, {"seed"}, 1, false, 0},
    {"rng_next", f_rng_next, {NULL}, 0, false, 0},
};

const Callable *train_function_find(const char *name) {
  for (size_t k = 0; k < sizeof train_functions / sizeof *train_functions; k++)
    if (!strcmp(train_functions[k].name, name)) return &train_functions[k];
  return NULL;
}

/* opt.step(*also): the tensors given (the loss) are realized with the grads. */
static bool o_step(Call *c, const Callable *f, Value *out) {
  uj_tensor **also = malloc((c->npos ? c->npos : 1) * sizeof *also);
  if (!also) return call_error(c, "out of memory");
  bool ok = true;
  for (size_t k = 0; ok && k < c->npos; k++) ok = arg_tensor(c, &c->pos[k], "what to realize with the step", &also[k]);
  ok = ok && (uj_optim_step(c->self->opt->o, also, c->npos) == UJ_OK || call_lib_error(c));
  free(also);
  return ok;
}

static bool o_zero_grad(Call *c, const Callable *f, Value *out) {
  uj_optim_zero_grad(c->self->opt->o);
  return true;
}

static bool o_set_lr(Call *c, const Callable *f, Value *out) {
  double lr = NAN;
  if (!arg_number(c, c->arg[0], "lr", &lr)) return false;
  if (!(lr >= 0)) return call_error(c, "lr must be at least 0, not %g", lr);
  uj_optim_set_lr(c->self->opt->o, lr);
  return true;
}

static const Callable optimizer_methods[] = {
    {"step", o_step, {NULL}, 0, true, 0},
    {"zero_grad", o_zero_grad, {NULL}, 0, false, 0},
    {"set_lr", o_set_lr, {"lr"}, 1, false, 0},
};

bool train_optim_method(Call *c, const char *name, Value *out) {
  for (size_t k = 0; k < sizeof optimizer_methods / sizeof *optimizer_methods; k++)
    if (!strcmp(optimizer_methods[k].name, name))
      return call_bind(c, &optimizer_methods[k]) && optimizer_methods[k].fn(c, &optimizer_methods[k], out);
  return call_error(c, "an optimizer has no method '%s' (step, zero_grad, set_lr)", name);
}

bool train_optim_attr(Call *c, const OptimRef *r, const char *name, Value *out) {
  if (!strcmp(name, "lr")) return *out = (Value){.kind = V_FLOAT, .f = uj_optim_lr(r->o)}, true;
  if (!strcmp(name, "grad_norm")) return *out = (Value){.kind = V_FLOAT, .f = uj_optim_grad_norm(r->o)}, true;
  return call_error(c, "an optimizer has no attribute '%s' (lr, grad_norm)", name);
}

void train_names(bool methods, NameSink add, void *acc) {
  if (methods) {
    for (size_t k = 0; k < sizeof tensor_methods / sizeof *tensor_methods; k++) add(acc, tensor_methods[k].name);
    for (size_t k = 0; k < sizeof optimizer_methods / sizeof *optimizer_methods; k++) add(acc, optimizer_methods[k].name);
  } else {
    for (size_t k = 0; k < sizeof train_functions / sizeof *train_functions; k++) add(acc, train_functions[k].name);
  }
}
