/* nn.c — matmul, conv2d and pooling (tensor.h) as movement ops, a MUL and
 * a REDUCE: nothing here is a special case for the scheduler.
 *
 * matmul: a (.., M, K) as (.., M, 1, K), b (.., K, N) as (.., 1, N, K),
 * multiplied (broadcast to (.., M, N, K)) and summed over K.
 *
 * Sliding windows (conv2d, pooling), one axis at a time: y[o, j] =
 * x[o*stride + j*dilation] for o < O, j < k. Repeat x along a new axis and
 * flatten, cut to k rows of length R = dilation + m*L (m >= 1): row j then
 * starts at x[j*dilation] (j*R = j*dilation mod L). Keep the first O*stride
 * columns, reshape them to (O, stride) and keep column 0. Windows that do
 * not overlap (dilation 1, kernel <= stride) need no repeat: reshape the
 * first O*stride elements to (O, stride) and keep the first k columns. */
#include <math.h>
#include <string.h>

#include "tensor/tensor_impl.h"

/* ---- matmul ---- */

uj_tensor *uj_tensor_matmul(uj_tensor *a, uj_tensor *b) {
  if (!a || !b) return NULL;
  uj_session *s = a->s;
  const UOp *x = a->node, *y = b->node;
  char sa[128], sb[128];
  if (x->ndim == 0 || y->ndim == 0) return tensor_fail(s, "matmul", "takes tensors of 1 or more axes, not a scalar");
  if (x->ndim >= UJ_MAX_DIMS || y->ndim >= UJ_MAX_DIMS) return tensor_fail(s, "matmul", "too many axes");
  bool vec_a = x->ndim == 1, vec_b = y->ndim == 1;
  if (vec_a) x = node_reshape(s, x, (int64_t[]){1, x->shape[0]}, 2);
  if (vec_b) y = node_reshape(s, y, (int64_t[]){y->shape[0], 1}, 2);
  if (!x || !y) return NULL;
  int64_t K = x->shape[x->ndim - 1];
  if (y->shape[y->ndim - 2] != K)
    return tensor_fail(s, "matmul", "shapes %s and %s: contracted axes differ (%lld and %lld)", tensor_shape_str(a->node, sa, sizeof sa),
                       tensor_shape_str(b->node, sb, sizeof sb), (long long)K, (long long)y->shape[y->ndim - 2]);
  for (unsigned k = 3; k <= x->ndim && k <= y->ndim; k++) { /* batch axes broadcast, named as given */
    int64_t bx = x->shape[x->ndim - k], by = y->shape[y->ndim - k];
    if (bx != by && bx != 1 && by != 1)
      return tensor_fail(s, "matmul", "shapes %s and %s: batch axes do not broadcast", tensor_shape_str(a->node, sa, sizeof sa),
                         tensor_shape_str(b->node, sb, sizeof sb));
  }
  if (dt_is_bool(x->dtype)) x = node_cast(s, x, UJ_INT32);
  if (dt_is_bool(y->dtype)) y = node_cast(s, y, UJ_INT32);
  int64_t shx[UJ_MAX_DIMS + 1], shy[UJ_MAX_DIMS + 1], perm[UJ_MAX_DIMS];
  unsigned nx = x->ndim, ny = y->ndim;
  memcpy(shx, x->shape, nx * sizeof *shx), shx[nx] = K, shx[nx - 1] = 1; /* (.., M, 1, K) */
  for (unsigned k = 0; k < ny; k++) perm[k] = k;
  perm[ny - 2] = ny - 1, perm[ny - 1] = ny - 2;
  const UOp *yt = node_permute(s, y, perm); /* (.., N, K) */
  if (!yt) return NULL;
  memcpy(shy, yt->shape, ny * sizeof *shy), shy[ny] = K, shy[ny - 1] = yt->shape[ny - 1 - 1], shy[ny - 2] = 1; /* (.., 1, N, K) */
  const UOp *xm = node_reshape(s, x, shx, nx + 1), *ym = node_reshape(s, yt, shy, ny + 1);
  if (!node_promote(s, "matmul", &xm, &ym)) return NULL;
  int64_t last = xm->ndim - 1;
  const UOp *r = node_reduce(s, UJ_OP_ADD, node_alu(s, UJ_OP_MUL, xm, ym), &last, 1);
  if (!r) return NULL;
  int64_t out[UJ_MAX_DIMS];
  unsigned nd = 0;
  for (unsigned k = 0; k + 1 < r->ndim; k++) /* drop K; and M or N for vectors */
    if (!((vec_a && k == r->ndim - 3u) || (vec_b && k == r->ndim - 2u))) out[nd++] = r->shape[k];
  return tensor_wrap(s, "matmul", node_reshape(s, r, out, nd));
}

/* ---- sliding windows ---- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/* x with axis ax (length L) replaced by O windows and a new last axis of
 * the k elements of each. */
static const UOp *window_axis(uj_session *s, const UOp *x, unsigned ax, int64_t k, int64_t st, int64_t d, int64_t O) {
  if (!x) return NULL;
  unsigned nd = x->ndim;
  int64_t L = x->shape[ax], perm[UJ_MAX_DIMS + 1], sh[UJ_MAX_DIMS + 2];
  for (unsigned i = 0, j = 0; i < nd; i++)
    if (i != ax) perm[j++] = i;
  perm[nd - 1] = ax;
  const UOp *y = node_permute(s, x, perm); /* (others.., L) */
  if (!y) return NULL;
  memcpy(sh, y->shape, nd * sizeof *sh);
  int64_t lohi[2 * (UJ_MAX_DIMS + 2)];
  if (d == 1 && k <= st) { /* windows do not overlap: no repeat */
    for (unsigned i = 0; i < nd; i++) lohi[2 * i] = 0, lohi[2 * i + 1] = 0;
    lohi[2 * nd - 1] = O * st > L ? O * st - L : 0;
    y = node_pad(s, y, lohi); /* never read: the last window ends in x */
    for (unsigned i = 0; i + 1 < nd; i++) lohi[2 * i + 1] = sh[i];
    lohi[2 * nd - 2] = 0, lohi[2 * nd - 1] = O * st;
    y = node_shrink(s, y, lohi);
    sh[nd - 1] = O, sh[nd] = st;
    y = node_reshape(s, y, sh, nd + 1); /* (others.., O, st) */
    for (unsigned i = 0; i < nd; i++) lohi[2 * i] = 0, lohi[2 * i + 1] = sh[i];
    lohi[2 * nd] = 0, lohi[2 * nd + 1] = k;
    y = node_shrink(s, y, lohi); /* (others.., O, k) */
    for (unsigned p = 0, j = 0; p < nd; p++) perm[p] = p == ax ? nd - 1 : j++;
    perm[nd] = nd;
    return node_permute(s, y, perm);
  }
  int64_t m = O * st > d ? ceil_div(O * st - d, L) : 1, R = d + (m > 1 ? m : 1) * L, rep = ceil_div(k * R, L);
  sh[nd - 1] = 1, sh[nd] = L;
  y = node_reshape(s, y, sh, nd + 1);
  sh[nd - 1] = rep;
  y = node_expand(s, y, sh, nd + 1);
  sh[nd - 1] = rep * L;
  y = node_reshape(s, y, sh, nd); /* x repeated */
  for (unsigned i = 0; i + 1 < nd; i++) lohi[2 * i] = 0, lohi[2 * i + 1] = sh[i];
  lohi[2 * (nd - 1)] = 0, lohi[2 * (nd - 1) + 1] = k * R;
  y = node_shrink(s, y, lohi);
  sh[nd - 1] = k, sh[nd] = R;
  y = node_reshape(s, y, sh, nd + 1); /* row j starts at x[j*d] */
  for (unsigned i = 0; i + 1 < nd; i++) lohi[2 * i] = 0, lohi[2 * i + 1] = sh[i];
  lohi[2 * (nd - 1)] = 0, lohi[2 * (nd - 1) + 1] = k, lohi[2 * nd] = 0, lohi[2 * nd + 1] = O * st;
  y = node_shrink(s, y, lohi);
  sh[nd] = O, sh[nd + 1] = st;
  y = node_reshape(s, y, sh, nd + 2); /* (others.., k, O, st) */
  for (unsigned i = 0; i < nd + 1; i++) lohi[2 * i] = 0, lohi[2 * i + 1] = sh[i];
  lohi[2 * (nd + 1)] = 0, lohi[2 * (nd + 1) + 1] = 1;
  y = node_reshape(s, node_shrink(s, y, lohi), sh, nd + 1); /* (others.., k, O) */
  for (unsigned p = 0, j = 0; p < nd; p++) perm[p] = p == ax ? nd : j++; /* O back at ax, k last */
  perm[nd] = nd - 1;
  return node_permute(s, y, perm);
}

/* Output length of a window over n elements; < 1 is an error. */
static int64_t window_count(int64_t n, int64_t k, int64_t st, int64_t d) { return (n - d * (k - 1) - 1) / st + 1; }

/* Whether the sizes window_axis computes for an axis of L elements (O
 * windows of k, stride st, dilation d: O*st, m*L, k*R, rep*L) stay below
 * SHAPE_MAX_SPAN, so that its int64 arithmetic is exact. In double: a
 * product that would overflow int64 is still seen to be too large. */
static bool window_fits(double L, double k, double st, double d, double O) {
  double m = O * st > d ? ceil((O * st - d) / L) : 1, R = d + (m > 1 ? m : 1) * L, rep = ceil(k * R / L);
  double most = fmax(fmax(O * st, R), fmax(k * R, rep * L));
  return most <= (double)SHAPE_MAX_SPAN;
}

/* x (.., H, W) -> (.., OH, OW, KH, KW). */
static const UOp *windows_2d(uj_session *s, const char *op, const UOp *x, const int64_t *k, const int64_t *st, const int64_t *d) {
  if (!x) return NULL;
  unsigned nd = x->ndim;
  int64_t O[2], ste[2], de[2];
  for (int i = 0; i < 2; i++) {
    int64_t L = x->shape[nd - 2 + i];
    if (k[i] < 1 || st[i] < 1 || d[i] < 1)
      return tensor_fail(s, op, "kernel %lld, stride %lld and dilation %lld must be at least 1", (long long)k[i], (long long)st[i],
                         (long long)d[i]);
    bool fit = L >= 1 && (k[i] - 1) <= (L - 1) / d[i]; /* d (k - 1) + 1 <= L, without overflow */
    O[i] = fit ? window_count(L, k[i], st[i], d[i]) : 0;
    if (O[i] < 1)
      return tensor_fail(s, op, "a window of %lld (dilation %lld) does not fit an axis of %lld", (long long)k[i], (long long)d[i],
                         (long long)L);
    /* the same windows: a stride past the axis moves none (O = 1), a dilation moves no element of a kernel of 1 */
    ste[i] = st[i] > L ? L : st[i], de[i] = k[i] == 1 ? 1 : d[i];
    if (!window_fits((double)L, (double)k[i], (double)ste[i], (double)de[i], (double)O[i]))
      return tensor_fail(s, op, "a window of %lld, stride %lld, dilation %lld over an axis of %lld: too large to index", (long long)k[i],
                         (long long)st[i], (long long)d[i], (long long)L);
  }
  return window_axis(s, window_axis(s, x, nd - 2, k[0], ste[0], de[0], O[0]), nd - 1, k[1], ste[1], de[1], O[1]);
}

/* x (.., H, W) padded by pd (each >= 0) on its last two axes: false
 * ("op: ...") when a pad passes 2^40 or the padded shape is too large to
 * index, before any size is computed. */
static bool check_padded(uj_session *s, const char *op, const UOp *x, const int64_t *pd) {
  if (pd[0] > SHAPE_MAX_ELEMENTS || pd[1] > SHAPE_MAX_ELEMENTS)
    return tensor_fail(s, op, "padding (%lld, %lld) is too large (past 2^40)", (long long)pd[0], (long long)pd[1]), false;
  int64_t shape[UJ_MAX_DIMS];
  memcpy(shape, x->shape, x->ndim * sizeof *shape);
  shape[x->ndim - 2] += 2 * pd[0], shape[x->ndim - 1] += 2 * pd[1];
  return node_check_span(s, op, shape, x->ndim);
}

/* ---- conv2d ---- */

static bool check_rank(uj_session *s, const char *op, const char *what, const UOp *x, unsigned nd) {
  char b[128];
  if (x->ndim == nd) return true;
  return tensor_fail(s, op, "%s must have %u axes, not shape %s", what, nd, tensor_shape_str(x, b, sizeof b)), false;
}

uj_tensor *uj_tensor_conv2d(uj_tensor *xt, uj_tensor *wt, uj_tensor *bias, const int64_t *stride, const int64_t *padding,
                            const int64_t *dilation, int64_t groups) {
  if (!xt || !wt) return NULL;
  uj_session *s = xt->s;
  const UOp *x = xt->node, *w = wt->node;
  char b1[128], b2[128];
  if (!check_rank(s, "conv2d", "the input (N, C, H, W)", x, 4) || !check_rank(s, "conv2d", "the weight (O, C/groups, KH, KW)", w, 4))
    return NULL;
  int64_t N = x->shape[0], C = x->shape[1], O = w->shape[0], G = groups;
  if (G < 1) return tensor_fail(s, "conv2d", "groups must be at least 1, not %lld", (long long)G);
  if (C % G || O % G || w->shape[1] != C / G)
    return tensor_fail(s, "conv2d", "input %s and weight %s do not agree for %lld groups (weight axis 1 must be C/groups)",
                       tensor_shape_str(x, b1, sizeof b1), tensor_shape_str(w, b2, sizeof b2), (long long)G);
  int64_t one[2] = {1, 1}, zero[2] = {0, 0};
  const int64_t *st = stride ? stride : one, *pd = padding ? padding : zero, *dl = dilation ? dilation : one;
  if (pd[0] < 0 || pd[1] < 0) return tensor_fail(s, "conv2d", "padding (%lld, %lld) is negative", (long long)pd[0], (long long)pd[1]);
  if (!check_padded(s, "conv2d", x, pd)) return NULL;
  const UOp *xp = node_pad(s, x, (int64_t[]){0, 0, 0, 0, pd[0], pd[0], pd[1], pd[1]});
  /* padded, the input gets a buffer of its own (a copy kernel of N·C·(H+2p)·(W+2p) elements): the
   * convolution then reads it without gates, and its lanes stay vectors (docs/opt.md, "Upcast") */
  if (xp && (pd[0] || pd[1])) xp = tensor_node(s, "conv2d", UJ_OP_STAGE, xp->dtype, &xp, 1, arg_none());
  const UOp *win = xp ? windows_2d(s, "conv2d", xp, w->shape + 2, st, dl) : NULL; /* (N, C, OH, OW, KH, KW) */
  if (!win) return NULL;
  int64_t OH = win->shape[2], OW = win->shape[3], KH = w->shape[2], KW = w->shape[3], Cg = C / G, Og = O / G;
  int64_t full[8] = {N, G, Og, Cg, OH, OW, KH, KW};
  if (!node_check_span(s, "conv2d", full, 8)) return NULL;
  const UOp *xv = node_reshape(s, win, (int64_t[]){N, G, 1, Cg, OH, OW, KH, KW}, 8);
  const UOp *wv = node_reshape(s, w, (int64_t[]){1, G, Og, Cg, 1, 1, KH, KW}, 8);
  xv = node_expand(s, xv, full, 8), wv = node_expand(s, wv, full, 8);
  if (!node_promote(s, "conv2d", &xv, &wv)) return NULL;
  const UOp *r = node_reduce(s, UJ_OP_ADD, node_alu(s, UJ_OP_MUL, xv, wv), (int64_t[]){3, 6, 7}, 3);
  r = node_reshape(s, r, (int64_t[]){N, O, OH, OW}, 4);
  if (r && bias) {
    const UOp *bv = bias->node;
    if (bv->ndim != 1 || bv->shape[0] != O)
      return tensor_fail(s, "conv2d", "bias of shape %s for %lld output channels", tensor_shape_str(bv, b1, sizeof b1), (long long)O);
    bv = node_reshape(s, bv, (int64_t[]){1, O, 1, 1}, 4);
    if (!node_promote(s, "conv2d", &r, &bv)) return NULL;
    r = node_alu(s, UJ_OP_ADD, r, bv);
  }
  return tensor_wrap(s, "conv2d", r);
}

/* ---- pooling ---- */

/* x padded on its last two axes, the new elements `fill`. */
static const UOp *pad_2d(uj_session *s, const UOp *x, const int64_t *pd, double fill) {
  int64_t lohi[2 * UJ_MAX_DIMS] = {0};
  unsigned nd = x->ndim;
  lohi[2 * (nd - 2)] = lohi[2 * (nd - 2) + 1] = pd[0];
  lohi[2 * (nd - 1)] = lohi[2 * (nd - 1) + 1] = pd[1];
  const UOp *p = node_pad(s, x, lohi);
  if (fill == 0 || !p || p == x) return p;
  const UOp *mask = node_pad(s, node_full(s, dt_scalar(UJ_BOOL), 1, x->shape, nd), lohi);
  const UOp *src[3] = {mask, p, node_full(s, x->dtype, fill, p->shape, nd)};
  return tensor_node(s, "pool", UJ_OP_WHERE, x->dtype, src, 3, arg_none());
}

static uj_tensor *pool(uj_tensor *a, const char *op, bool max, const int64_t *kernel, const int64_t *stride, const int64_t *padding) {
  if (!a) return NULL;
  uj_session *s = a->s;
  const UOp *x = a->node;
  char b[128];
  if (x->ndim < 2 || x->ndim + 2 > UJ_MAX_DIMS)
    return tensor_fail(s, op, "takes (.., H, W) with 2 to %d axes, not %s", UJ_MAX_DIMS - 2, tensor_shape_str(x, b, sizeof b));
  if (!kernel) return tensor_fail(s, op, "no kernel size");
  int64_t zero[2] = {0, 0}, one[2] = {1, 1};
  const int64_t *st = stride ? stride : kernel, *pd = padding ? padding : zero;
  if (pd[0] < 0 || pd[1] < 0 || pd[0] > kernel[0] / 2 || pd[1] > kernel[1] / 2)
    return tensor_fail(s, op, "padding (%lld, %lld) must be between 0 and half the kernel (%lld, %lld)", (long long)pd[0],
                       (long long)pd[1], (long long)kernel[0], (long long)kernel[1]);
  if (!check_padded(s, op, x, pd)) return NULL;
  if (!dt_is_float(x->dtype) && !max) x = node_cast(s, x, UJ_FLOAT32);
  double low = dt_is_float(x->dtype) ? -INFINITY : dt_is_signed(x->dtype) ? -ldexp(1, (int)dt_bits(x->dtype) - 1) : 0;
  const UOp *win = windows_2d(s, op, pad_2d(s, x, pd, max ? low : 0), kernel, st, one);
  if (!win) return NULL;
  int64_t axes[2] = {win->ndim - 2, win->ndim - 1};
  int64_t out[UJ_MAX_DIMS];
  memcpy(out, win->shape, (win->ndim - 2) * sizeof *out);
  if (max) return tensor_wrap(s, op, node_reshape(s, node_reduce(s, UJ_OP_MAX, win, axes, 2), out, win->ndim - 2u));
  const UOp *sum = node_reduce(s, UJ_OP_ADD, win, axes, 2); /* divided by the real elements of each window */
  const UOp *ones = node_full(s, x->dtype, 1, x->shape + x->ndim - 2, 2);
  const UOp *cnt = node_reduce(s, UJ_OP_ADD, windows_2d(s, op, pad_2d(s, ones, pd, 0), kernel, st, one), (int64_t[]){2, 3}, 2);
  if (!sum) return NULL; /* cnt (OH, OW, 1, 1) broadcasts against sum (.., OH, OW, 1, 1) */
  const UOp *mean = node_alu(s, UJ_OP_FDIV, sum, node_broadcast(s, op, cnt, sum->shape, sum->ndim));
  return tensor_wrap(s, op, node_reshape(s, mean, out, win->ndim - 2u));
}

uj_tensor *uj_tensor_maxpool2d(uj_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding) {
  return pool(x, "maxpool2d", true, kernel, stride, padding);
}

uj_tensor *uj_tensor_avgpool2d(uj_tensor *x, const int64_t *kernel, const int64_t *stride, const int64_t *padding) {
  return pool(x, "avgpool2d", false, kernel, stride, padding);
}
