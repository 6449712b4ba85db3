/* test_grad.c — gradients of every tensor operation (lib/tensor/grad.c),
 * checked against central finite differences in float64.
 *
 * Each case builds y = f(x1, .., xn) from random float64 inputs and the
 * loss sum(y * w) for a random w (so that every element of y is weighed
 * differently). The gradients come from uj_tensor_gradients, realized by
 * the session's device and checked against the tensor evaluator (their
 * own graph, evaluated); the finite differences come from the tensor
 * evaluator alone, the loss's graph evaluated with one input element
 * moved by +-h: nothing compiled takes part in the reference. Inputs keep
 * away from kinks (relu at 0, ties of max) unless the case is about them,
 * and those cases check exact values (PyTorch's tie rules). */
#include "tensor_util.h"

enum { MAX_IN = 3 };

typedef uj_tensor *(*Build)(uj_tensor *const *x);

typedef struct Case {
  const char *name;
  Build f;
  unsigned nin;
  int64_t shape[MAX_IN][4];
  unsigned nd[MAX_IN];
  double lo, hi; /* inputs uniform in [lo, hi) */
} Case;

static uj_session *S;

/* ---- builders ---- */

#define UN(op) static uj_tensor *f_##op(uj_tensor *const *x) { return uj_tensor_unary(UJ_UN_##op, x[0]); }
UN(NEG) UN(EXP) UN(LOG) UN(EXP2) UN(LOG2) UN(SQRT) UN(RECIP) UN(SIN) UN(COS) UN(ABS) UN(RELU) UN(GELU) UN(SIGMOID) UN(TANH)
#define BIN(op) static uj_tensor *f_##op(uj_tensor *const *x) { return uj_tensor_binary(UJ_BIN_##op, x[0], x[1]); }
BIN(ADD) BIN(SUB) BIN(MUL) BIN(DIV) BIN(POW) BIN(MAXIMUM) BIN(MINIMUM)

static uj_tensor *f_pow_int(uj_tensor *const *x) { return uj_tensor_binary_scalar(UJ_BIN_POW, x[0], 3, false); }
static uj_tensor *f_pow_neg(uj_tensor *const *x) { return uj_tensor_binary_scalar(UJ_BIN_POW, x[0], -2, false); }
static uj_tensor *f_pow_half(uj_tensor *const *x) { return uj_tensor_binary_scalar(UJ_BIN_POW, x[0], 0.5, false); }
static uj_tensor *f_rsub(uj_tensor *const *x) { return uj_tensor_binary_scalar(UJ_BIN_SUB, x[0], 2, true); }
static uj_tensor *f_rdiv(uj_tensor *const *x) { return uj_tensor_binary_scalar(UJ_BIN_DIV, x[0], 3, true); }
static uj_tensor *f_where(uj_tensor *const *x) {
  return uj_tensor_where(uj_tensor_binary(UJ_BIN_LT, x[0], x[1]), uj_tensor_binary(UJ_BIN_MUL, x[0], x[1]), x[2]);
}
/* comparisons give the gradient nothing: (x < y) * x differentiates as its mask times x */
static uj_tensor *f_compare(uj_tensor *const *x) {
  return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_cast(uj_tensor_binary(UJ_BIN_GE, x[0], x[1]), UJ_FLOAT64), x[0]);
}
static uj_tensor *f_reshape(uj_tensor *const *x) {
  return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_reshape(x[0], (int64_t[]){3, 4}, 2), uj_tensor_reshape(x[0], (int64_t[]){3, 4}, 2));
}
static uj_tensor *f_expand(uj_tensor *const *x) { return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_expand(x[0], (int64_t[]){2, 3, 4}, 3), x[1]); }
static uj_tensor *f_permute(uj_tensor *const *x) {
  return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_permute(x[0], (int[]){2, 0, 1}, 3), uj_tensor_unary(UJ_UN_SIN, uj_tensor_permute(x[0], (int[]){2, 0, 1}, 3)));
}
static uj_tensor *f_transpose(uj_tensor *const *x) { return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_transpose(x[0], 0, 1), x[1]); }
static uj_tensor *f_flip(uj_tensor *const *x) { return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_flip(x[0], (int[]){0, 1}, 2), x[0]); }
static uj_tensor *f_pad(uj_tensor *const *x) { return uj_tensor_unary(UJ_UN_EXP, uj_tensor_pad(x[0], (int64_t[]){1, 0, 2, 1}, 2)); }
static uj_tensor *f_shrink(uj_tensor *const *x) {
  return uj_tensor_binary(UJ_BIN_MUL, uj_tensor_shrink(x[0], (int64_t[]){1, 3, 0, 2}, 2), uj_tensor_shrink(x[0], (int64_t[]){0, 2, 2, 4}, 2));
}
static uj_tensor *f_cat(uj_tensor *const *x) { return uj_tensor_unary(UJ_UN_TANH, uj_tensor_cat((uj_tensor *[]){x[0], x[1], x[0]}, 3, 1)); }
static uj_tensor *f_stack(uj_tensor *const *x) { return uj_tensor_unary(UJ_UN_SIN, uj_tensor_stack((uj_tensor *[]){x[0], x[1]}, 2, 1)); }
static uj_tensor *f_sum(uj_tensor *const *x) {
  return uj_tensor_unary(UJ_UN_SIN, uj_tensor_reduce(UJ_RED_SUM, x[0], (int[]){0, 2}, 2, false));
}
static uj_tensor *f_sum_all(uj_tensor *const *x) { return uj_tensor_unary(UJ_UN_EXP, uj_tensor_reduce(UJ_RED_SUM, x[0], NULL, 0, true)); }
static uj_tensor *f_mean(uj_tensor *const *x) { return uj_tensor_unary(UJ_UN_EXP, uj_tensor_reduce(UJ_RED_MEAN, x[0], (int[]){1}, 1, true)); }
static uj_tensor *f_max(uj_tensor *const *x) { return uj_tensor_reduce(UJ_RED_MAX, uj_tensor_unary(UJ_UN_SIN, x[0]), (int[]){-1}, 1, false); }
static uj_tensor *f_min(uj_tensor *const *x) { return uj_tensor_reduce(UJ_RED_MIN, x[0], (int[]){0}, 1, false); }
static uj_tensor *f_softmax(uj_tensor *const *x) { return uj_tensor_softmax(x[0], 1); }
static uj_tensor *f_log_softmax(uj_tensor *const *x) { return uj_tensor_log_softmax(x[0], -1); }
static uj_tensor *f_matmul(uj_tensor *const *x) { return uj_tensor_matmul(x[0], x[1]); }
static uj_tensor *f_conv(uj_tensor *const *x) { return uj_tensor_conv2d(x[0], x[1], x[2], NULL, NULL, NULL, 1); }
static uj_tensor *f_conv_strided(uj_tensor *const *x) {
  return uj_tensor_conv2d(x[0], x[1], NULL, (int64_t[]){2, 1}, (int64_t[]){1, 1}, (int64_t[]){1, 2}, 2);
}
static uj_tensor *f_maxpool(uj_tensor *const *x) { return uj_tensor_maxpool2d(x[0], (int64_t[]){2, 2}, NULL, NULL); }
static uj_tensor *f_maxpool_pad(uj_tensor *const *x) { return uj_tensor_maxpool2d(x[0], (int64_t[]){3, 3}, (int64_t[]){2, 2}, (int64_t[]){1, 1}); }
static uj_tensor *f_avgpool(uj_tensor *const *x) { return uj_tensor_avgpool2d(x[0], (int64_t[]){3, 2}, (int64_t[]){1, 2}, (int64_t[]){1, 1}); }
static uj_tensor *f_gather(uj_tensor *const *x) {
  int32_t idx[6] = {2, 0, 3, 3, 1, 0};
  uj_tensor *i = uj_tensor_from_data(S, UJ_INT32, (int64_t[]){2, 3}, 2, idx);
  return uj_tensor_unary(UJ_UN_EXP, uj_tensor_gather(x[0], 1, i));
}
static uj_tensor *f_attention(uj_tensor *const *x) { return uj_tensor_attention(x[0], x[1], x[2], true); }
static uj_tensor *f_mlp(uj_tensor *const *x) { /* relu(x w1) w2, softmax'd */
  return uj_tensor_log_softmax(uj_tensor_matmul(uj_tensor_unary(UJ_UN_RELU, uj_tensor_matmul(x[0], x[1])), x[2]), 1);
}

static uj_tensor *f_layernorm(uj_tensor *const *x) { return uj_tensor_layernorm(x[0], x[1], x[2], 1e-5); }
static uj_tensor *f_layernorm_plain(uj_tensor *const *x) { return uj_tensor_layernorm(x[0], NULL, NULL, 0.5); }
static uj_tensor *f_cross_entropy(uj_tensor *const *x) {
  int32_t t[4] = {2, -100, 0, 4}; /* the second row ignored */
  return uj_tensor_cross_entropy(x[0], uj_tensor_from_data(S, UJ_INT32, (int64_t[]){4}, 1, t), -100);
}
/* the mask fixed by the session's generator: a mask times a scale to the finite differences too */
static uj_tensor *f_dropout(uj_tensor *const *x) { return uj_tensor_dropout(uj_tensor_unary(UJ_UN_SIN, x[0]), 0.375); }
static const Case cases[] = {
  {"neg", f_NEG, 1, {{2, 3}}, {2}, -2, 2},
  {"exp", f_EXP, 1, {{2, 3}}, {2}, -2, 2},
  {"log", f_LOG, 1, {{2, 3}}, {2}, 0.5, 3},
  {"exp2", f_EXP2, 1, {{5}}, {1}, -2, 2},
  {"log2", f_LOG2, 1, {{5}}, {1}, 0.5, 3},
  {"sqrt", f_SQRT, 1, {{5}}, {1}, 0.5, 3},
  {"recip", f_RECIP, 1, {{5}}, {1}, 0.5, 3},
  {"sin", f_SIN, 1, {{2, 3}}, {2}, -3, 3},
  {"cos", f_COS, 1, {{2, 3}}, {2}, -3, 3},
  {"abs", f_ABS, 1, {{2, 3}}, {2}, -2, 2},
  {"relu", f_RELU, 1, {{2, 3}}, {2}, -2, 2},
  {"gelu", f_GELU, 1, {{2, 3}}, {2}, -3, 3},
  {"sigmoid", f_SIGMOID, 1, {{2, 3}}, {2}, -3, 3},
  {"tanh", f_TANH, 1, {{2, 3}}, {2}, -2, 2},
  {"add (broadcast)", f_ADD, 2, {{2, 3}, {3}}, {2, 1}, -2, 2},
  {"sub (broadcast)", f_SUB, 2, {{2, 1}, {1, 3}}, {2, 2}, -2, 2},
  {"mul (broadcast)", f_MUL, 2, {{2, 3, 1}, {4}}, {3, 1}, -2, 2},
  {"div", f_DIV, 2, {{2, 3}, {2, 3}}, {2, 2}, 0.5, 2},
  {"pow", f_POW, 2, {{2, 3}, {2, 3}}, {2, 2}, 0.5, 2},
  {"pow 3", f_pow_int, 1, {{2, 3}}, {2}, -2, 2},
  {"pow -2", f_pow_neg, 1, {{2, 3}}, {2}, 0.5, 2},
  {"pow 0.5", f_pow_half, 1, {{2, 3}}, {2}, 0.5, 2},
  {"2 - x", f_rsub, 1, {{4}}, {1}, -2, 2},
  {"3 / x", f_rdiv, 1, {{4}}, {1}, 0.5, 2},
  {"maximum", f_MAXIMUM, 2, {{2, 3}, {2, 3}}, {2, 2}, -2, 2},
  {"minimum (broadcast)", f_MINIMUM, 2, {{2, 3}, {3}}, {2, 1}, -2, 2},
  {"where", f_where, 3, {{2, 3}, {2, 3}, {3}}, {2, 2, 1}, -2, 2},
  {"comparison", f_compare, 2, {{2, 3}, {2, 3}}, {2, 2}, -2, 2},
  {"reshape", f_reshape, 1, {{2, 6}}, {2}, -2, 2},
  {"expand", f_expand, 2, {{3, 1}, {2, 3, 4}}, {2, 3}, -2, 2},
  {"permute", f_permute, 1, {{2, 3, 2}}, {3}, -2, 2},
  {"transpose", f_transpose, 2, {{3, 2}, {2, 3}}, {2, 2}, -2, 2},
  {"flip", f_flip, 1, {{2, 3}}, {2}, -2, 2},
  {"pad", f_pad, 1, {{2, 3}}, {2}, -2, 2},
  {"shrink", f_shrink, 1, {{3, 4}}, {2}, -2, 2},
  {"cat", f_cat, 2, {{2, 2}, {2, 3}}, {2, 2}, -2, 2},
  {"stack", f_stack, 2, {{2, 3}, {2, 3}}, {2, 2}, -2, 2},
  {"sum", f_sum, 1, {{2, 3, 2}}, {3}, -2, 2},
  {"sum (all)", f_sum_all, 1, {{2, 3}}, {2}, -0.5, 0.5},
  {"mean", f_mean, 1, {{2, 4}}, {2}, -2, 2},
  {"max", f_max, 1, {{3, 4}}, {2}, -3, 3},
  {"min", f_min, 1, {{3, 4}}, {2}, -3, 3},
  {"softmax", f_softmax, 1, {{2, 5}}, {2}, -3, 3},
  {"log_softmax", f_log_softmax, 1, {{3, 4}}, {2}, -3, 3},
  {"matmul", f_matmul, 2, {{3, 4}, {4, 2}}, {2, 2}, -2, 2},
  {"matmul (batch broadcast)", f_matmul, 2, {{2, 1, 2, 3}, {3, 3, 2}}, {4, 3}, -2, 2},
  {"matmul (vector)", f_matmul, 2, {{3}, {2, 3, 2}}, {1, 3}, -2, 2},
  {"conv2d", f_conv, 3, {{1, 2, 4, 4}, {3, 2, 2, 3}, {3}}, {4, 4, 1}, -2, 2},
  {"conv2d (stride, padding, dilation, groups)", f_conv_strided, 2, {{2, 4, 5, 5}, {2, 2, 2, 2}}, {4, 4}, -2, 2},
  {"maxpool2d", f_maxpool, 1, {{1, 2, 4, 4}}, {4}, -3, 3},
  {"maxpool2d (stride, padding)", f_maxpool_pad, 1, {{2, 5, 5}}, {3}, -3, 3},
  {"avgpool2d", f_avgpool, 1, {{1, 4, 5}}, {3}, -3, 3},
  {"gather", f_gather, 1, {{2, 4}}, {2}, -2, 2},
  {"layernorm", f_layernorm, 3, {{2, 3, 5}, {5}, {5}}, {3, 1, 1}, -2, 2},
  {"layernorm (no affine)", f_layernorm_plain, 1, {{4, 6}}, {2}, -2, 2},
  {"cross_entropy (an ignored row)", f_cross_entropy, 1, {{4, 5}}, {2}, -3, 3},
  {"attention (causal, the queries the last 3 of 4)", f_attention, 3, {{2, 3, 2}, {2, 4, 2}, {2, 4, 3}}, {3, 3, 3}, -1, 1},
  {"mlp", f_mlp, 3, {{4, 3}, {3, 5}, {5, 2}}, {2, 2, 2}, -2, 2},
  {"dropout", f_dropout, 1, {{3, 2, 4}}, {3}, -2, 2},
};

/* ---- the reference: finite differences through the evaluator ---- */

/* The bindings of every BUFFER under root: host copies (malloc'd). */
static size_t bind(const UOp *root, TensorBinding **out) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(S->ctx, root, &nodes), nb = 0;
  TensorBinding *tb = malloc((n ? n : 1) * sizeof *tb);
  for (size_t i = 0; i < n; i++) {
    if (nodes[i]->op != UJ_OP_BUFFER) continue;
    RtBuffer *m = buffer_table_get(&S->buffers, nodes[i]->ints[0]);
    void *host = malloc(m->bytes ? m->bytes : 1);
    S->device->ops->copy_out(S->device, host, m->mem, m->bytes);
    tb[nb++] = (TensorBinding){nodes[i], host, m->bytes};
  }
  free(nodes);
  *out = tb;
  return nb;
}

static double eval_scalar(const UOp *root, const TensorBinding *tb, size_t nb) {
  TensorValue v = {0};
  bool ok = eval_tensor(S->ctx, root, tb, nb, &v);
  CHECK(ok, "eval_tensor: %s", uj_error(S->ctx));
  double r = ok ? word_value(UJ_FLOAT64, v.words[0]) : NAN;
  tensor_value_free(&v);
  return r;
}

static void run_case(const Case *c, Rng *r) {
  uj_tensor *x[MAX_IN];
  double *xv[MAX_IN];
  for (unsigned i = 0; i < c->nin; i++) {
    int64_t n = shape_numel(c->shape[i], c->nd[i]);
    xv[i] = malloc((size_t)n * sizeof *xv[i]);
    for (int64_t e = 0; e < n; e++) xv[i][e] = rng_uniform(r, c->lo, c->hi);
    x[i] = uj_tensor_from_data(S, UJ_FLOAT64, c->shape[i], c->nd[i], xv[i]);
  }
  uj_tensor *y = c->f(x);
  CHECK(y != NULL, "%s: %s", c->name, uj_session_error(S));
  if (!y) return;
  int64_t ny = uj_tensor_numel(y);
  double *wv = malloc((size_t)(ny ? ny : 1) * sizeof *wv);
  for (int64_t e = 0; e < ny; e++) wv[e] = rng_uniform(r, -1, 1);
  uj_tensor *w = uj_tensor_from_data(S, UJ_FLOAT64, uj_tensor_shape(y), uj_tensor_ndim(y), wv);
  uj_tensor *loss = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_binary(UJ_BIN_MUL, y, w), NULL, 0, false);
  uj_tensor *g[MAX_IN] = {0};
  uj_status st = uj_tensor_gradients(loss, NULL, x, c->nin, g);
  CHECK(st == UJ_OK, "%s: gradients: %s", c->name, uj_session_error(S));
  TensorBinding *tb = NULL;
  size_t nb = bind(uj_tensor_uop(loss), &tb);
  const double h = 1e-6;
  for (unsigned i = 0; st == UJ_OK && i < c->nin; i++) {
    char what[160];
    snprintf(what, sizeof what, "%s: d loss / d x%u", c->name, i + 1);
    if (!shape_is(g[i], c->shape[i], c->nd[i], what)) continue;
    double *got = values(S, g[i], BOUNDED, what);
    TensorBinding *mine = NULL;
    for (size_t k = 0; k < nb; k++)
      if (tb[k].buffer == schedule_view_buffer(uj_tensor_uop(x[i]))) mine = &tb[k];
    int64_t n = uj_tensor_numel(x[i]), bad = 0;
    for (int64_t e = 0; got && mine && e < n; e++) {
      double *at = (double *)mine->data + e, keep = *at;
      *at = keep + h;
      double up = eval_scalar(uj_tensor_uop(loss), tb, nb);
      *at = keep - h;
      double down = eval_scalar(uj_tensor_uop(loss), tb, nb);
      *at = keep;
      double fd = (up - down) / (2 * h);
      if (!(fabs(got[e] - fd) <= 1e-5 * (1 + fabs(fd))) && bad++ < 3)
        CHECK(false, "%s: element %lld: gradient %.10g, finite difference %.10g", what, (long long)e, got[e], fd);
    }
    CHECK(bad == 0 && got && mine, "%s: %lld of %lld elements differ", what, (long long)bad, (long long)n);
    free(got);
  }
  for (size_t k = 0; k < nb; k++) free((void *)tb[k].data);
  free(tb), free(wv);
  for (unsigned i = 0; i < c->nin; i++) free(xv[i]), uj_tensor_free(x[i]), uj_tensor_free(g[i]);
  uj_tensor_free(y), uj_tensor_free(w), uj_tensor_free(loss);
}

/* ---- exact cases: PyTorch's rules at ties and kinks ---- */

static void expect_grad(uj_tensor *loss, uj_tensor *x, const double *want, const char *what) {
  uj_tensor *g = NULL;
  uj_status st = uj_tensor_gradients(loss, NULL, &x, 1, &g);
  CHECK(st == UJ_OK, "%s: %s", what, uj_session_error(S));
  if (st == UJ_OK) expect(S, g, uj_tensor_shape(x), uj_tensor_ndim(x), want, EXACT, what);
  uj_tensor_free(g);
}

static uj_tensor *sum(uj_tensor *t) { return uj_tensor_reduce(UJ_RED_SUM, t, NULL, 0, false); }

static void test_ties(void) {
  const double third = (float)(1.0 / 3); /* the float32 the gradient holds */
  uj_tensor *x = uj_tensor_from_data(S, UJ_FLOAT32, (int64_t[]){4}, 1, (float[]){-1, 0, 2, 2});
  uj_tensor *y = uj_tensor_from_data(S, UJ_FLOAT32, (int64_t[]){4}, 1, (float[]){0, 0, 2, 1});
  expect_grad(sum(uj_tensor_unary(UJ_UN_RELU, x)), x, VALS(0, 0, 1, 1), "relu'(0) is 0");
  expect_grad(sum(uj_tensor_unary(UJ_UN_ABS, x)), x, VALS(-1, 0, 1, 1), "abs'(0) is 0");
  expect_grad(sum(uj_tensor_binary(UJ_BIN_MAXIMUM, x, y)), x, VALS(0, 0.5, 0.5, 1), "maximum: ties split");
  expect_grad(sum(uj_tensor_binary(UJ_BIN_MAXIMUM, x, y)), y, VALS(1, 0.5, 0.5, 0), "maximum: ties split (other side)");
  expect_grad(sum(uj_tensor_binary(UJ_BIN_MINIMUM, x, y)), x, VALS(1, 0.5, 0.5, 0), "minimum: ties split");
  expect_grad(sum(uj_tensor_binary(UJ_BIN_MAXIMUM, x, x)), x, VALS(1, 1, 1, 1), "maximum(x, x)");
  expect_grad(uj_tensor_reduce(UJ_RED_MAX, x, NULL, 0, false), x, VALS(0, 0, 0.5, 0.5), "max: ties share evenly");
  uj_tensor *m = uj_tensor_from_data(S, UJ_FLOAT32, (int64_t[]){2, 3}, 2, (float[]){1, 5, 5, 3, 3, 3});
  expect_grad(sum(uj_tensor_reduce(UJ_RED_MIN, m, (int[]){1}, 1, false)), m, VALS(1, 0, 0, third, third, third), "min along an axis");
  expect_grad(sum(uj_tensor_reduce(UJ_RED_MAX, m, (int[]){1}, 1, false)), m, VALS(0, 0.5, 0.5, third, third, third), "max along an axis");
  /* a cast passes the gradient back in the source's dtype: float64 x through float32 */
  uj_tensor *x64 = uj_tensor_from_data(S, UJ_FLOAT64, (int64_t[]){3}, 1, (double[]){0.5, -1.25, 3});
  uj_tensor *x32 = uj_tensor_cast(x64, UJ_FLOAT32);
  expect_grad(sum(uj_tensor_cast(uj_tensor_binary(UJ_BIN_MUL, x32, x32), UJ_FLOAT64)), x64, VALS(1, -2.5, 6), "cast");
  uj_tensor *i = uj_tensor_cast(x64, UJ_INT32); /* through an integer: nothing */
  expect_grad(sum(uj_tensor_binary(UJ_BIN_MUL, uj_tensor_cast(i, UJ_FLOAT64), x64)), x64, VALS(0, -1, 3), "cast to int");
  /* gradients of gradients: d/dx of d/dx sum(x^3) = 6 x */
  uj_tensor *g = NULL, *gg = NULL;
  CHECK(uj_tensor_gradients(sum(uj_tensor_binary_scalar(UJ_BIN_POW, x, 3, false)), NULL, &x, 1, &g) == UJ_OK, "d x^3");
  CHECK(g && uj_tensor_gradients(sum(g), NULL, &x, 1, &gg) == UJ_OK, "d (3 x^2): %s", uj_session_error(S));
  if (gg) expect(S, gg, (int64_t[]){4}, 1, VALS(-6, 0, 12, 12), EXACT, "second derivative");
  /* a tensor the loss does not read gets zeros; a seed weighs a loss of many elements */
  uj_tensor *z = NULL;
  CHECK(uj_tensor_gradients(sum(x), NULL, &y, 1, &z) == UJ_OK, "unread");
  if (z) expect(S, z, (int64_t[]){4}, 1, VALS(0, 0, 0, 0), EXACT, "a tensor the loss does not read");
  uj_tensor *seed = uj_tensor_from_data(S, UJ_FLOAT32, (int64_t[]){4}, 1, (float[]){1, 2, 3, 4});
  uj_tensor *gs = NULL;
  CHECK(uj_tensor_gradients(uj_tensor_binary(UJ_BIN_MUL, x, y), seed, &x, 1, &gs) == UJ_OK, "seed");
  if (gs) expect(S, gs, (int64_t[]){4}, 1, VALS(0, 0, 6, 4), EXACT, "seeded");
}

/* backward, grads of parameters, and the errors of the API */
static void test_backward(void) {
  uj_tensor *w = uj_tensor_from_data(S, UJ_FLOAT32, (int64_t[]){3}, 1, (float[]){1, 2, 3});
  uj_tensor *b = uj_tensor_full(S, UJ_FLOAT32, NULL, 0, 0.5);
  CHECK(uj_tensor_set_requires_grad(w, true) == UJ_OK && uj_tensor_set_requires_grad(b, true) == UJ_OK, "mark: %s", uj_session_error(S));
  CHECK(uj_tensor_requires_grad(w) && uj_tensor_grad(w) == NULL, "marked, no grad yet");
  uj_tensor *loss = sum(uj_tensor_binary(UJ_BIN_ADD, uj_tensor_binary(UJ_BIN_MUL, w, w), b));
  uj_tensor *unread = uj_tensor_zeros(S, UJ_FLOAT32, (int64_t[]){2}, 1);
  CHECK(uj_tensor_set_requires_grad(unread, true) == UJ_OK, "mark");
  CHECK(uj_tensor_backward(loss) == UJ_OK, "backward: %s", uj_session_error(S));
  CHECK(uj_tensor_grad(unread) == NULL, "a parameter the loss does not read gets no grad");
  expect(S, uj_tensor_grad(w), (int64_t[]){3}, 1, VALS(2, 4, 6), EXACT, "grad of w");
  expect(S, uj_tensor_grad(b), NULL, 0, VALS(3), EXACT, "grad of b (broadcast)");
  CHECK(uj_tensor_backward(loss) == UJ_OK, "backward again: %s", uj_session_error(S));
  expect(S, uj_tensor_grad(w), (int64_t[]){3}, 1, VALS(4, 8, 12), EXACT, "grads add up");
  uj_tensor_zero_grad(w);
  CHECK(uj_tensor_grad(w) == NULL, "zero_grad drops it");
  uj_tensor_free(uj_tensor_grad(b)); /* freeing a grad detaches it */
  CHECK(uj_tensor_grad(b) == NULL, "a freed grad is gone");

  uj_tensor *i = uj_tensor_arange(S, UJ_INT32, 0, 3, 1), *g = NULL;
  CHECK(uj_tensor_set_requires_grad(i, true) != UJ_OK, "an int parameter");
  CHECK_STR(uj_session_error(S), "requires_grad: a parameter must be a float tensor", "int parameter");
  CHECK(uj_tensor_gradients(w, NULL, &w, 1, &g) != UJ_OK, "loss of 3 elements");
  CHECK_STR(uj_session_error(S), "gradient: the loss (3,) has 3 elements: give a seed of its shape", "no seed");
  CHECK(uj_tensor_gradients(w, b, &w, 1, &g) != UJ_OK, "seed shape");
  CHECK_STR(uj_session_error(S), "gradient: seed of shape () for a loss of shape (3,)", "seed shape");
  CHECK(uj_tensor_gradients(loss, NULL, &i, 1, &g) != UJ_OK, "int wrt");
  CHECK_STR(uj_session_error(S), "gradient: tensor 0 is not a float tensor", "int wrt");
  CHECK(uj_tensor_gradients(uj_tensor_cast(i, UJ_INT64), NULL, &w, 1, &g) != UJ_OK, "int loss");
  CHECK_STR(uj_session_error(S), "gradient: the loss must be a float tensor", "int loss");
  uj_tensor *done = sum(uj_tensor_binary(UJ_BIN_MUL, w, w));
  CHECK(uj_tensor_realize(&done, 1) == UJ_OK && uj_tensor_gradients(done, NULL, &w, 1, &g) != UJ_OK, "a realized loss");
  CHECK_STR(uj_session_error(S), "gradient: the loss was computed already (read or realized): take its gradients first, or compute it with the step",
            "a realized loss");
  CHECK(uj_tensor_gradients(loss, NULL, (uj_tensor *[]){w, w}, 2, (uj_tensor *[2]){0}) != UJ_OK, "twice");
  CHECK_STR(uj_session_error(S), "gradient: a tensor appears twice among those differentiated with respect to", "twice");
  uj_session_clear_error(S);
}

/* layernorm and cross_entropy: their values against the formulas here
 * (their gradients are cases above), and their errors */
static void test_layers(void) {
  float xv[6] = {1, 2, 4, -1, 0, 5}, w[3] = {1, 2, 0.5f}, b[3] = {0, 1, -1};
  uj_tensor *x = tf32(S, (int64_t[]){2, 3}, 2, xv);
  double want[6];
  for (int r = 0; r < 2; r++) {
    double m = (xv[3 * r] + xv[3 * r + 1] + xv[3 * r + 2]) / 3, v = 0;
    for (int k = 0; k < 3; k++) v += (xv[3 * r + k] - m) * (xv[3 * r + k] - m) / 3;
    for (int k = 0; k < 3; k++) want[3 * r + k] = (xv[3 * r + k] - m) / sqrt(v + 1e-5) * w[k] + b[k];
  }
  expect(S, uj_tensor_layernorm(x, tf32(S, (int64_t[]){3}, 1, w), tf32(S, (int64_t[]){3}, 1, b), 1e-5), (int64_t[]){2, 3}, 2, want,
         ulps(8, 1e-6), "layernorm");
  int32_t tg[2] = {2, 7};
  uj_tensor *t = uj_tensor_from_data(S, UJ_INT32, (int64_t[]){2}, 1, tg);
  double lse = log(exp(1.0) + exp(2.0) + exp(4.0));
  expect(S, uj_tensor_cross_entropy(x, t, 7), NULL, 0, VALS(lse - 4), ulps(8, 1e-6), "cross_entropy, one row ignored");
  uj_tensor *all = uj_tensor_from_data(S, UJ_INT32, (int64_t[]){2}, 1, (int32_t[]){7, 7});
  expect(S, uj_tensor_cross_entropy(x, all, 7), NULL, 0, VALS(NAN), EXACT, "cross_entropy, every row ignored");
  CHECK(!uj_tensor_cross_entropy(x, x, -1), "float targets");
  CHECK_STR(uj_session_error(S), "cross_entropy: takes logits (N, C) and integer targets (N,), not (2, 3) and (2, 3)", "targets");
  CHECK(!uj_tensor_layernorm(x, t, NULL, 1e-5), "weight");
  CHECK_STR(uj_session_error(S), "layernorm: weight of shape (2,) for a last axis of 3 in (2, 3)", "weight shape");
  uj_session_clear_error(S);
}

/* A cross-entropy's gradient and its sum of squares (what an optimizer's
 * clipping reads) in one schedule: the online softmax's chunking of the
 * max over 32 classes once rewrote the range of a sum nested in a reader
 * (REDUCE source 1 is an ADD); the gradient must equal the one realized alone. */
static void test_norm_with_grad(void) {
  enum { N = 2, V = 32 };
  int32_t tg[N] = {3, 8};
  uj_tensor *target = uj_tensor_from_data(S, UJ_INT32, (int64_t[]){N}, 1, tg);
  uj_tensor *h = uj_tensor_randn(S, (int64_t[]){1, N, 1}, 3, 1), *w = uj_tensor_randn(S, (int64_t[]){1, V}, 2, 2);
  uj_tensor_realize((uj_tensor *[]){h, w}, 2);
  float both[V], alone[V];
  for (int pass = 0; pass < 2; pass++) {
    uj_tensor *mm = uj_tensor_matmul(h, w), *logits = uj_tensor_reshape(mm, (int64_t[]){N, V}, 2);
    uj_tensor *loss = uj_tensor_cross_entropy(logits, target, -100), *g[2] = {NULL, NULL};
    bool ok = uj_tensor_gradients(loss, NULL, &w, 1, g) == UJ_OK;
    uj_tensor *sq = ok ? uj_tensor_binary(UJ_BIN_MUL, g[0], g[0]) : NULL;
    g[1] = pass == 0 && sq ? uj_tensor_reduce(UJ_RED_SUM, sq, NULL, 0, false) : NULL;
    ok = ok && uj_tensor_realize(g, pass == 0 ? 2 : 1) == UJ_OK && uj_tensor_to_host(g[0], pass ? alone : both, sizeof both) == UJ_OK;
    CHECK(ok, "gradient and its norm in one schedule (pass %d): %s", pass, uj_session_error(S));
    for (int i = 0; i < 2; i++) uj_tensor_free(g[i]);
    uj_tensor_free(sq), uj_tensor_free(loss), uj_tensor_free(logits), uj_tensor_free(mm);
  }
  CHECK(memcmp(both, alone, sizeof both) == 0, "the gradient with its norm is the gradient alone");
  uj_tensor_free(h), uj_tensor_free(w), uj_tensor_free(target);
}

int main(void) {
  S = suite_session("test_grad");
  test_norm_with_grad();
  Rng r = {0x9e3779b97f4a7c15ull};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) run_case(&cases[c], &r);
  test_ties();
  test_backward();
  test_layers();
  uj_session_free(S);
  return check_report("test_grad");
}
