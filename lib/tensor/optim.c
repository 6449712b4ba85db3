/* optim.c — SGD with momentum and AdamW (tensor.h, docs/autodiff.md).
 *
 * In: parameters (realized float tensors) whose grads backward made. A
 * step is two schedules: the grads (with whatever the caller realizes
 * beside them, the loss, and the global norm when clipping), then one
 * assignment of every new moment and parameter, in place, into the
 * buffers they had (tensor_assign_many): a parameter's update reads its
 * new moments through the same nodes, which orders their kernels.
 *
 * The learning rate and the bias corrections are not constants in the
 * kernels: they are read from a small device buffer (`hyper`) written
 * before each step, so a schedule of learning rates compiles nothing
 * after the first step. A step that drew dropout masks moves the
 * session's generator on (random.c) once its grads are computed, so the
 * next step draws new ones from the same graph. The formulas are
 * PyTorch's (torch.optim.SGD with dampening 0, torch.optim.AdamW,
 * clip_grad_norm_), so that a run matches PyTorch's from the same
 * weights. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_impl.h"
#include "uop/alu.h"

enum { HYPER_LR, HYPER_DECAY, HYPER_STEP, HYPER_BC2, HYPER_COUNT };

struct uj_optimizer {
  uj_session *s;
  uj_optim_config cfg;
  size_t n;
  uj_tensor **params;
  uj_tensor **m, **v; /* SGD: momentum buffers in m (none without momentum); AdamW: both moments */
  uj_tensor **grads; /* where each step writes the grads (made at the first step that has one) */
  uj_tensor *hyper;   /* float32 [HYPER_COUNT]: what changes from step to step */
  uj_tensor *norm;    /* float32 (): the last step's global gradient norm (clipping), or NULL */
  int64_t steps;
};

static const UOp *konst(uj_session *s, const UOp *like, double v) { return node_full(s, like->dtype, v, like->shape, like->ndim); }
static const UOp *mul(uj_session *s, const UOp *a, const UOp *b) { return node_alu(s, UJ_OP_MUL, a, b); }
static const UOp *add(uj_session *s, const UOp *a, const UOp *b) { return node_alu(s, UJ_OP_ADD, a, b); }

/* hyper[i] as a tensor of like's shape and dtype. */
static const UOp *hyper(uj_optimizer *o, int i, const UOp *like) {
  uj_session *s = o->s;
  int64_t lohi[2] = {i, i + 1};
  const UOp *h = node_reshape(s, node_shrink(s, o->hyper->node, lohi), NULL, 0);
  return node_broadcast(s, "step", node_cast(s, h, (uj_scalar)like->dtype.scalar), like->shape, like->ndim);
}

/* Zeros in a buffer of their own (realizing uj_tensor_zeros twice would
 * give one buffer: the graphs are one node). */
static uj_tensor *zeros_like(uj_session *s, const uj_tensor *p) {
  size_t bytes = (size_t)uj_tensor_numel(p) * elem_bytes(dt_scalar(uj_tensor_dtype(p)));
  void *zero = calloc(bytes ? bytes : 1, 1);
  uj_tensor *z = zero ? uj_tensor_from_data(s, uj_tensor_dtype(p), uj_tensor_shape(p), uj_tensor_ndim(p), zero) : NULL;
  free(zero);
  return z ? z : tensor_fail(s, "optimizer", "out of memory");
}

void uj_optim_free(uj_optimizer *o) {
  if (!o) return;
  for (size_t i = 0; i < o->n; i++) {
    if (o->m) uj_tensor_free(o->m[i]);
    if (o->v) uj_tensor_free(o->v[i]);
    if (o->grads) uj_tensor_free(o->grads[i]);
  }
  uj_tensor_free(o->hyper), uj_tensor_free(o->norm);
  free(o->params), free(o->m), free(o->v), free(o->grads), free(o);
}

uj_optimizer *uj_optim_new(uj_session *s, const uj_optim_config *cfg, uj_tensor *const *params, size_t n) {
  if (!s || !cfg || (n && !params)) return NULL;
  uj_optim_config c = *cfg;
  if (c.kind != UJ_OPTIM_SGD && c.kind != UJ_OPTIM_ADAMW) return tensor_fail(s, "optimizer", "unknown kind %d", (int)c.kind);
  if (c.kind == UJ_OPTIM_ADAMW) {
    if (c.beta1 == 0) c.beta1 = 0.9;
    if (c.beta2 == 0) c.beta2 = 0.999;
    if (c.eps == 0) c.eps = 1e-8;
  }
  if (!(c.lr >= 0) || !(c.momentum >= 0) || !(c.weight_decay >= 0) || !(c.max_grad_norm >= 0) || !(c.beta1 >= 0 && c.beta1 < 1) ||
      !(c.beta2 >= 0 && c.beta2 < 1) || !(c.eps >= 0))
    return tensor_fail(s, "optimizer", "lr, momentum, weight decay, eps and max_grad_norm must be at least 0, betas in [0, 1)");
  for (size_t i = 0; i < n; i++) {
    if (!params[i]) return NULL;
    if (params[i]->s != s) return tensor_fail(s, "optimizer", "the tensors belong to different sessions");
    if (!params[i]->requires_grad) return tensor_fail(s, "optimizer", "tensor %zu is not a parameter (requires_grad)", i);
    for (size_t j = 0; j < i; j++)
      if (params[j] == params[i]) return tensor_fail(s, "optimizer", "tensor %zu appears twice", i);
  }
  uj_optimizer *o = calloc(1, sizeof *o);
  if (!o) return tensor_fail(s, "optimizer", "out of memory");
  *o = (uj_optimizer){.s = s, .cfg = c, .n = n};
  bool moments = c.kind == UJ_OPTIM_ADAMW || c.momentum > 0, second = c.kind == UJ_OPTIM_ADAMW;
  o->params = malloc((n ? n : 1) * sizeof *o->params);
  o->m = moments ? calloc(n ? n : 1, sizeof *o->m) : NULL;
  o->v = second ? calloc(n ? n : 1, sizeof *o->v) : NULL;
  o->grads = calloc(n ? n : 1, sizeof *o->grads);
  bool ok = o->params && o->grads && (!moments || o->m) && (!second || o->v);
  if (!ok) tensor_fail(s, "optimizer", "out of memory");
  for (size_t i = 0; ok && i < n; i++) {
    o->params[i] = params[i];
    if (moments) ok = (o->m[i] = zeros_like(s, params[i])) != NULL;
    if (ok && second) ok = (o->v[i] = zeros_like(s, params[i])) != NULL;
  }
  float h[HYPER_COUNT] = {0};
  o->hyper = ok ? uj_tensor_from_data(s, UJ_FLOAT32, (int64_t[]){HYPER_COUNT}, 1, h) : NULL;
  if (!o->hyper) return uj_optim_free(o), NULL;
  if (c.max_grad_norm > 0 && !(o->norm = uj_tensor_from_data(s, UJ_FLOAT32, NULL, 0, &(float){NAN}))) return uj_optim_free(o), NULL;
  return o;
}

void uj_optim_zero_grad(uj_optimizer *o) {
  for (size_t i = 0; o && i < o->n; i++) uj_tensor_zero_grad(o->params[i]);
}

void uj_optim_set_lr(uj_optimizer *o, double lr) {
  if (o && lr >= 0) o->cfg.lr = lr;
}
double uj_optim_lr(const uj_optimizer *o) { return o ? o->cfg.lr : NAN; }

uj_tensor *uj_optim_state(uj_optimizer *o, size_t i, int which) {
  if (!o || i >= o->n) return NULL;
  if (which == 0) return o->m ? o->m[i] : NULL;
  return which == 1 && o->v ? o->v[i] : NULL;
}

int64_t uj_optim_steps(const uj_optimizer *o) { return o ? o->steps : -1; }

uj_status uj_optim_set_steps(uj_optimizer *o, int64_t steps) {
  if (!o) return UJ_ERR_ARG;
  if (steps < 0) return tensor_fail(o->s, "optimizer", "a step count must be at least 0, not %lld", (long long)steps), UJ_ERR_ARG;
  o->steps = steps;
  return UJ_OK;
}

double uj_optim_grad_norm(const uj_optimizer *o) {
  float v;
  if (!o || !o->norm || !o->steps || uj_tensor_to_host(o->norm, &v, sizeof v) != UJ_OK) return NAN;
  return v;
}

/* The global norm of the grads: sqrt of the sum of each one's norm
 * squared (clip_grad_norm_'s norm of norms). */
static const UOp *global_norm(uj_optimizer *o) {
  uj_session *s = o->s;
  const UOp *total = NULL;
  for (size_t i = 0; i < o->n; i++) {
    const UOp *g = o->params[i]->grad ? node_cast(s, o->params[i]->grad->node, UJ_FLOAT32) : NULL;
    if (!g) continue;
    int64_t axes[UJ_MAX_DIMS];
    for (unsigned a = 0; a < g->ndim; a++) axes[a] = a;
    const UOp *sq = node_reshape(s, node_reduce(s, UJ_OP_ADD, mul(s, g, g), axes, g->ndim), NULL, 0);
    const UOp *norm = node_alu(s, UJ_OP_SQRT, sq, NULL);
    const UOp *part = mul(s, norm, norm);
    total = total ? add(s, total, part) : part;
  }
  return total ? node_alu(s, UJ_OP_SQRT, total, NULL) : node_full(s, dt_scalar(UJ_FLOAT32), 0, NULL, 0);
}

/* p's grad (as the step wrote it), scaled by the clipping factor when
 * there is one. */
static const UOp *grad_of(uj_optimizer *o, size_t i) {
  uj_session *s = o->s;
  const UOp *g = o->grads[i]->node;
  if (!o->norm) return g;
  /* min(max_norm / (norm + 1e-6), 1) */
  const UOp *nrm = o->norm->node;
  const UOp *coef = node_alu(s, UJ_OP_FDIV, konst(s, nrm, o->cfg.max_grad_norm), add(s, nrm, konst(s, nrm, 1e-6)));
  const UOp *src[3] = {node_alu(s, UJ_OP_CMPLT, coef, konst(s, nrm, 1)), coef, konst(s, nrm, 1)};
  const UOp *clamped = tensor_node(s, "step", UJ_OP_WHERE, nrm->dtype, src, 3, arg_none());
  return mul(s, g, node_broadcast(s, "step", node_cast(s, clamped, (uj_scalar)g->dtype.scalar), g->shape, g->ndim));
}

/* The new values of p and its moments (into vals/dsts from *n on). */
static void update(uj_optimizer *o, size_t i, uj_tensor **dsts, const UOp **vals, size_t *n) {
  uj_session *s = o->s;
  const uj_optim_config *c = &o->cfg;
  uj_tensor *pt = o->params[i];
  const UOp *p = pt->node, *g = grad_of(o, i);
  if (c->kind == UJ_OPTIM_SGD) { /* d = g + wd p; buf = momentum buf + d; p -= lr buf */
    const UOp *d = c->weight_decay > 0 ? add(s, g, mul(s, p, konst(s, p, c->weight_decay))) : g;
    if (o->m) {
      d = add(s, mul(s, o->m[i]->node, konst(s, p, c->momentum)), d);
      dsts[*n] = o->m[i], vals[(*n)++] = d;
    }
    dsts[*n] = pt, vals[(*n)++] = node_alu(s, UJ_OP_SUB, p, mul(s, hyper(o, HYPER_LR, p), d));
    return;
  }
  /* AdamW: p *= 1 - lr wd; m = b1 m + (1 - b1) g; v = b2 v + (1 - b2) g^2;
   * p -= (lr / bc1) m / (sqrt(v) / sqrt(bc2) + eps) */
  const UOp *m = add(s, mul(s, o->m[i]->node, konst(s, p, c->beta1)), mul(s, g, konst(s, p, 1 - c->beta1)));
  const UOp *v = add(s, mul(s, o->v[i]->node, konst(s, p, c->beta2)), mul(s, mul(s, g, g), konst(s, p, 1 - c->beta2)));
  const UOp *denom = add(s, node_alu(s, UJ_OP_FDIV, node_alu(s, UJ_OP_SQRT, v, NULL), hyper(o, HYPER_BC2, p)), konst(s, p, c->eps));
  const UOp *decayed = c->weight_decay > 0 ? mul(s, p, hyper(o, HYPER_DECAY, p)) : p;
  const UOp *stepped = mul(s, hyper(o, HYPER_STEP, p), node_alu(s, UJ_OP_FDIV, m, denom));
  dsts[*n] = o->m[i], vals[(*n)++] = m;
  dsts[*n] = o->v[i], vals[(*n)++] = v;
  dsts[*n] = pt, vals[(*n)++] = node_alu(s, UJ_OP_SUB, decayed, stepped);
}

uj_status uj_optim_step(uj_optimizer *o, uj_tensor *const *also, size_t nalso) {
  if (!o) return UJ_ERR_ARG;
  uj_session *s = o->s;
  for (size_t i = 0; i < nalso; i++)
    if (!also[i] || also[i]->s != s) return also[i] ? tensor_fail(s, "step", "the tensors belong to different sessions"), UJ_ERR_ARG : UJ_ERR_ARG;
  tensor_collect_nodes(s); /* now, while every node the step reads is a live tensor's */
  /* 1: the grads into the optimizer's buffers (the same every step, so
   * that the update below is the same graph every step: its schedule is
   * cached), the norm, and what the caller wants beside them */
  size_t cap = o->n + nalso + 1, n = 0, ngrads = 0;
  const UOp **vals = malloc(cap * sizeof *vals), **views = calloc(cap, sizeof *views);
  uj_tensor **into = calloc(cap, sizeof *into);
  uj_status st = vals && views && into ? UJ_OK : UJ_ERR_NOMEM;
  for (size_t i = 0; st == UJ_OK && i < o->n; i++) {
    if (!o->params[i]->grad) continue;
    if (!o->grads[i] && !(o->grads[i] = zeros_like(s, o->params[i]))) st = UJ_ERR_NOMEM;
    else into[n] = o->grads[i], vals[n++] = o->params[i]->grad->node, ngrads++;
  }
  if (st == UJ_OK && ngrads == 0) return free(vals), free(views), free(into), UJ_OK; /* nothing to do */
  if (st == UJ_OK && o->norm && !(vals[n] = global_norm(o))) st = UJ_ERR_NOMEM;
  if (st == UJ_OK && o->norm) into[n++] = o->norm;
  for (size_t i = 0; st == UJ_OK && i < nalso; i++) vals[n++] = also[i]->node;
  if (st == UJ_OK) st = tensor_run(s, vals, n, into, views);
  for (size_t i = 0; st == UJ_OK && i < nalso; i++) also[i]->node = views[n - nalso + i];
  free(views), free(into);
  /* the masks of this step are drawn: the next step's dropouts draw new ones, from the same graph */
  if (st == UJ_OK && s->rng_calls) st = uj_session_rng_next(s);
  /* 2: the hyperparameters of this step, then every update in one schedule */
  if (st == UJ_OK) {
    o->steps++;
    const uj_optim_config *c = &o->cfg;
    double bc1 = 1 - pow(c->beta1, (double)o->steps), bc2 = 1 - pow(c->beta2, (double)o->steps);
    bool adam = c->kind == UJ_OPTIM_ADAMW;
    float h[HYPER_COUNT] = {(float)c->lr, (float)(1 - c->lr * c->weight_decay), (float)(adam ? c->lr / bc1 : c->lr), (float)(adam ? sqrt(bc2) : 1)};
    st = tensor_write(o->hyper, h, sizeof h);
  }
  uj_tensor **dsts = st == UJ_OK ? malloc(3 * o->n * sizeof *dsts) : NULL;
  const UOp **upd = dsts ? malloc(3 * o->n * sizeof *upd) : NULL;
  if (st == UJ_OK && !upd) st = UJ_ERR_NOMEM;
  n = 0;
  for (size_t i = 0; st == UJ_OK && i < o->n; i++)
    if (o->params[i]->grad) update(o, i, dsts, upd, &n);
  for (size_t i = 0; st == UJ_OK && i < n; i++)
    if (!upd[i]) st = UJ_ERR_ARG;
  if (st == UJ_OK) st = tensor_assign_many(s, dsts, upd, n);
  if (st == UJ_ERR_NOMEM && !uj_session_error(s)[0]) tensor_fail(s, "step", "out of memory");
  free(dsts), free(upd), free(vals);
  return st;
}
