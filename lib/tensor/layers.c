/* layers.c — the layers a transformer trains with, built of tensor ops
 * (tensor.h): layernorm, cross-entropy and attention. Their gradients follow from
 * what they are built of (docs/autodiff.md); the scheduler fuses each
 * into kernels by rows like a softmax.
 *
 * In: tensors. Out: a new tensor; the intermediates each builds are
 * freed here (their nodes stay in its graph). */
#include <math.h>

#include "tensor/tensor_impl.h"

/* Frees the n tensors in ts (NULLs skipped). */
static void drop(uj_tensor **ts, int n) {
  for (int i = 0; i < n; i++) uj_tensor_free(ts[i]);
}

uj_tensor *uj_tensor_layernorm(uj_tensor *x, uj_tensor *weight, uj_tensor *bias, double eps) {
  if (!x) return NULL;
  uj_session *s = x->s;
  char a[128], b[128];
  unsigned nd = uj_tensor_ndim(x);
  if (nd == 0) return tensor_fail(s, "layernorm", "takes a tensor of 1 or more axes, not a scalar");
  if (!dt_is_float(x->node->dtype)) return tensor_fail(s, "layernorm", "takes a float tensor");
  if (!(eps >= 0)) return tensor_fail(s, "layernorm", "eps must be at least 0, not %g", eps);
  int64_t n = x->node->shape[nd - 1];
  uj_tensor *affine[2] = {weight, bias};
  for (int i = 0; i < 2; i++)
    if (affine[i] && (affine[i]->s != s || affine[i]->node->ndim != 1 || affine[i]->node->shape[0] != n))
      return affine[i]->s != s ? tensor_fail(s, "layernorm", "the tensors belong to different sessions")
                               : tensor_fail(s, "layernorm", "%s of shape %s for a last axis of %lld in %s", i ? "bias" : "weight",
                                             tensor_shape_str(affine[i]->node, a, sizeof a), (long long)n, tensor_shape_str(x->node, b, sizeof b));
  /* (x - mean) / sqrt(mean((x - mean)^2) + eps), the biased variance (PyTorch's) */
  int last = -1;
  uj_tensor *t[8] = {0};
  t[0] = uj_tensor_reduce(UJ_RED_MEAN, x, &last, 1, true);
  t[1] = uj_tensor_binary(UJ_BIN_SUB, x, t[0]);
  t[2] = uj_tensor_binary(UJ_BIN_MUL, t[1], t[1]);
  t[3] = uj_tensor_reduce(UJ_RED_MEAN, t[2], &last, 1, true);
  t[4] = uj_tensor_unary(UJ_UN_SQRT, uj_tensor_binary_scalar(UJ_BIN_ADD, t[3], eps, false));
  t[5] = uj_tensor_binary(UJ_BIN_DIV, t[1], t[4]);
  uj_tensor *r = t[5];
  if (r && weight) r = t[6] = uj_tensor_binary(UJ_BIN_MUL, r, weight);
  if (r && bias) r = t[7] = uj_tensor_binary(UJ_BIN_ADD, r, bias);
  r = r ? tensor_wrap(s, "layernorm", r->node) : NULL;
  drop(t, 8);
  return r;
}

uj_tensor *uj_tensor_cross_entropy(uj_tensor *logits, uj_tensor *target, int64_t ignore_index) {
  if (!logits || !target) return NULL;
  uj_session *s = logits->s;
  char a[128], b[128];
  const UOp *l = logits->node, *tg = target->node;
  if (target->s != s) return tensor_fail(s, "cross_entropy", "the tensors belong to different sessions");
  if (!dt_is_float(l->dtype)) return tensor_fail(s, "cross_entropy", "takes float logits");
  if (l->ndim != 2 || tg->ndim != 1 || tg->shape[0] != l->shape[0] || !dt_is_int(tg->dtype))
    return tensor_fail(s, "cross_entropy", "takes logits (N, C) and integer targets (N,), not %s and %s", tensor_shape_str(l, a, sizeof a),
                       tensor_shape_str(tg, b, sizeof b));
  int64_t n = l->shape[0];
  uj_tensor *t[10] = {0};
  t[0] = uj_tensor_log_softmax(logits, 1);
  t[1] = uj_tensor_reshape(target, (int64_t[]){n, 1}, 2);
  t[2] = uj_tensor_gather(t[0], 1, t[1]); /* (N, 1): log p of each target; a target out of range picks nothing */
  t[3] = uj_tensor_binary_scalar(UJ_BIN_NE, t[1], (double)ignore_index, false);
  t[4] = uj_tensor_cast(t[3], (uj_scalar)l->dtype.scalar);
  t[5] = uj_tensor_binary(UJ_BIN_MUL, t[2], t[4]);
  t[6] = uj_tensor_reduce(UJ_RED_SUM, t[5], NULL, 0, false);
  t[7] = uj_tensor_reduce(UJ_RED_SUM, t[4], NULL, 0, false); /* the rows that count (none: 0/0, NaN, as PyTorch) */
  t[8] = uj_tensor_binary(UJ_BIN_DIV, t[6], t[7]);
  t[9] = uj_tensor_unary(UJ_UN_NEG, t[8]);
  uj_tensor *r = t[9] ? tensor_wrap(s, "cross_entropy", t[9]->node) : NULL;
  drop(t, 10);
  return r;
}

/* -inf where key j lies after query i (j > i + S - T: the queries are the
 * last T of S positions), else 0: (T, S), of dtype d, from the session's
 * kept iotas (no buffer of its own). */
static uj_tensor *causal_mask(uj_session *s, int64_t t, int64_t sk, uj_scalar d) {
  const UOp *rows = tensor_iota(s, UJ_INT64, t), *cols = tensor_iota(s, UJ_INT64, sk);
  uj_tensor *r = tensor_wrap(s, "attention", node_reshape(s, rows, (int64_t[]){t, 1}, 2));
  uj_tensor *c = tensor_wrap(s, "attention", node_reshape(s, cols, (int64_t[]){1, sk}, 2));
  uj_tensor *m[7] = {r, c};
  m[2] = uj_tensor_binary_scalar(UJ_BIN_ADD, r, (double)(sk - t), false);
  m[3] = uj_tensor_binary(UJ_BIN_GT, c, m[2]);
  m[4] = uj_tensor_full(s, d, NULL, 0, -INFINITY), m[5] = uj_tensor_full(s, d, NULL, 0, 0);
  m[6] = uj_tensor_where(m[3], m[4], m[5]);
  uj_tensor *out = m[6] ? tensor_wrap(s, "attention", m[6]->node) : NULL;
  drop(m, 7);
  return out;
}

uj_tensor *uj_tensor_attention(uj_tensor *q, uj_tensor *k, uj_tensor *v, bool causal) {
  if (!q || !k || !v) return NULL;
  uj_session *s = q->s;
  char a[128], b[128], c[128];
  const UOp *qn = q->node, *kn = k->node, *vn = v->node;
  if (k->s != s || v->s != s) return tensor_fail(s, "attention", "the tensors belong to different sessions");
  bool ok = qn->ndim >= 2 && kn->ndim == qn->ndim && vn->ndim == qn->ndim && dt_is_float(qn->dtype);
  unsigned nd = qn->ndim;
  ok = ok && kn->shape[nd - 1] == qn->shape[nd - 1] && vn->shape[nd - 2] == kn->shape[nd - 2];
  ok = ok && (!causal || kn->shape[nd - 2] >= qn->shape[nd - 2]);
  if (!ok)
    return tensor_fail(s, "attention", "q %s, k %s, v %s: want float (.., T, D), (.., S, D), (.., S, E)%s", tensor_shape_str(qn, a, sizeof a),
                       tensor_shape_str(kn, b, sizeof b), tensor_shape_str(vn, c, sizeof c), causal ? " with S >= T" : "");
  int64_t t = qn->shape[nd - 2], sk = kn->shape[nd - 2], d = qn->shape[nd - 1];
  uj_tensor *x[7] = {0};
  x[0] = uj_tensor_transpose(k, -2, -1);
  x[1] = uj_tensor_matmul(q, x[0]);
  x[2] = uj_tensor_binary_scalar(UJ_BIN_MUL, x[1], 1.0 / sqrt((double)d), false);
  uj_tensor *scores = x[2];
  if (causal && scores) {
    x[3] = causal_mask(s, t, sk, (uj_scalar)qn->dtype.scalar);
    scores = x[4] = uj_tensor_binary(UJ_BIN_ADD, scores, x[3]);
  }
  x[5] = uj_tensor_softmax(scores, -1);
  x[6] = uj_tensor_matmul(x[5], v);
  uj_tensor *out = x[6] ? tensor_wrap(s, "attention", x[6]->node) : NULL;
  drop(x, 7);
  return out;
}
