/* test_tensor_limits.c — sizes that would wrap (docs/tensor.md, "Limits").
 *
 * A tensor spans at most 2^40 elements (its sizes multiplied, a size of 0
 * counted as 1: an empty (0, 2^62) has strides that overflow int64 all
 * the same), and every operation that makes a shape — creation, reshape,
 * expand, pad, cat, stack, a reduction over an empty axis, matmul, the
 * windows of conv2d and pooling — refuses one past that, with a message
 * naming the op and the shape, before any size is computed in a way that
 * could wrap; a scalar is never wrapped into a dtype that cannot hold it
 * (int8 + 300 is int16). Under UBSan (the sanitizer build) any signed overflow on the
 * way fails the test. Also: the numel of every tensor that exists is its
 * true count (never -1); empty reductions that are allowed compute; argmax
 * of nothing is an error; a session's limit can be set lower. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "expect.h"
#include "tensor/tensor_impl.h"

#define BIG ((int64_t)1 << 62)
#define CAP ((int64_t)1 << 40)

static uj_tensor *zeros(uj_session *s, const int64_t *shape, unsigned nd) { return uj_tensor_zeros(s, UJ_FLOAT32, shape, nd); }

/* t exists, with numel elements. */
static void expect_numel(uj_tensor *t, int64_t numel, const char *what) {
  CHECK(t != NULL, "%s: failed: %s", what, t ? "" : "(see the session)");
  if (t) CHECK(uj_tensor_numel(t) == numel, "%s: numel %lld, want %lld", what, (long long)uj_tensor_numel(t), (long long)numel);
}

static void test_creation(uj_session *s) {
  EXPECT_NULL(s, zeros(s, SHAPE(0, BIG)), "zeros", "(0, 4611686018427387904)", "too large", "a 0 counted as 1", "2^40");
  EXPECT_NULL(s, uj_tensor_ones(s, UJ_INT32, SHAPE(BIG, BIG)), "ones", "too large");
  EXPECT_NULL(s, zeros(s, SHAPE(CAP + 1)), "zeros", "(1099511627777,)", "more than 2^40 elements");
  EXPECT_NULL(s, zeros(s, SHAPE(1 << 20, 1 << 20, 2)), "zeros", "more than 2^40 elements");
  EXPECT_NULL(s, uj_tensor_full(s, UJ_FLOAT32, SHAPE(INT64_MAX, 2), 1), "full", "too large");
  EXPECT_NULL(s, uj_tensor_from_data(s, UJ_FLOAT32, SHAPE(0, BIG), NULL), "from_data", "too large");
  EXPECT_NULL(s, uj_tensor_randn(s, SHAPE(2, 0, BIG), 1), "randn", "too large");
  EXPECT_NULL(s, uj_tensor_arange(s, UJ_INT64, 0, 0x1p41, 1), "arange", "too many elements");
  expect_numel(zeros(s, SHAPE(CAP)), CAP, "zeros(2^40), lazy");
  expect_numel(zeros(s, SHAPE(1 << 20, 1 << 20)), CAP, "zeros(2^20, 2^20)");
  expect_numel(zeros(s, SHAPE(0, CAP)), 0, "zeros(0, 2^40)");
}

static void test_views(uj_session *s) {
  uj_tensor *empty = zeros(s, SHAPE(0, 1)), *one = zeros(s, SHAPE(1)), *big = zeros(s, SHAPE(CAP));
  EXPECT_NULL(s, uj_tensor_expand(empty, SHAPE(0, BIG)), "expand", "(0, 4611686018427387904)", "too large");
  EXPECT_NULL(s, uj_tensor_expand(one, SHAPE(CAP + 1)), "expand", "too large");
  EXPECT_NULL(s, uj_tensor_expand(one, SHAPE(INT64_MAX, INT64_MAX, 1)), "expand", "too large");
  EXPECT_NULL(s, uj_tensor_reshape(empty, SHAPE(0, BIG)), "reshape", "too large");
  EXPECT_NULL(s, uj_tensor_reshape(empty, SHAPE(BIG, BIG, -1)), "reshape", "cannot reshape");
  EXPECT_NULL(s, uj_tensor_reshape(one, SHAPE(BIG, BIG, 0)), "reshape", "(4611686018427387904, 4611686018427387904, 0)");
  EXPECT_NULL(s, uj_tensor_reshape(one, SHAPE(1, -7)), "reshape", "negative size -7");
  EXPECT_NULL(s, uj_tensor_pad(one, (const int64_t[]){0, BIG}, 1), "pad", "out of range");
  EXPECT_NULL(s, uj_tensor_pad(one, (const int64_t[]){0, BIG / 4}, 1), "pad", "too large");
  EXPECT_NULL(s, uj_tensor_pad(one, (const int64_t[]){INT64_MAX, INT64_MAX}, 1), "pad");
  EXPECT_NULL(s, uj_tensor_pad(big, (const int64_t[]){0, 1}, 1), "pad", "(1099511627777,)", "too large");
  EXPECT_NULL(s, uj_tensor_shrink(one, (const int64_t[]){-BIG, BIG}, 1), "shrink");
  EXPECT_NULL(s, uj_tensor_shrink(one, (const int64_t[]){INT64_MIN, INT64_MAX}, 1), "shrink");
  uj_tensor *two[2] = {big, big};
  EXPECT_NULL(s, uj_tensor_cat(two, 2, 0), "cat", "(2199023255552,)", "too large");
  EXPECT_NULL(s, uj_tensor_stack(two, 2, 0), "stack", "too large");
  uj_tensor *bigs[4] = {zeros(s, SHAPE(INT64_MAX / 4)), NULL, NULL, NULL}; /* refused: cat never sees it */
  CHECK(bigs[0] == NULL, "zeros(2^61) exists");
  expect_numel(uj_tensor_expand(empty, SHAPE(0, CAP)), 0, "expand (0, 1) to (0, 2^40)");
  expect_numel(uj_tensor_pad(zeros(s, SHAPE(CAP - 2)), (const int64_t[]){1, 1}, 1), CAP, "pad to 2^40");
}

/* A reduction over an empty axis makes a shape with no 0 in it: the
 * tensor (0, n) sums to (1, n) of zeros. */
static void test_empty_reductions(uj_session *s) {
  EXPECT_NULL(s, zeros(s, SHAPE(0, BIG)), "zeros"); /* the case starts here, refused */
  uj_tensor *e = zeros(s, SHAPE(0, 1 << 20));
  uj_tensor *sum = uj_tensor_reduce(UJ_RED_SUM, e, (const int[]){0}, 1, true);
  expect_numel(sum, 1 << 20, "sum over an empty axis");
  float *host = malloc((1u << 20) * sizeof *host);
  if (sum && host) {
    CHECK(uj_tensor_to_host(sum, host, (1u << 20) * sizeof *host) == UJ_OK, "realize: %s", uj_session_error(s));
    int nonzero = 0;
    for (int i = 0; i < 1 << 20; i++) nonzero += host[i] != 0;
    CHECK(nonzero == 0, "the empty sum has %d nonzero elements", nonzero);
  }
  free(host);
  uj_tensor *wide = zeros(s, SHAPE(0, CAP));
  expect_numel(uj_tensor_reduce(UJ_RED_SUM, wide, (const int[]){0}, 1, false), CAP, "sum of (0, 2^40) over axis 0, lazy");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_ARGMAX, zeros(s, SHAPE(0)), NULL, 0, false), "argmax", "empty");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_ARGMIN, zeros(s, SHAPE(3, 0)), NULL, 0, true), "argmin", "empty");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_ARGMAX, zeros(s, SHAPE(3, 0)), (const int[]){1}, 1, false), "argmax", "size 0");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_MAX, zeros(s, SHAPE(0)), NULL, 0, false), "max", "size 0");
}

/* matmul and the sliding windows build large nodes inside the op (never
 * in memory); past 2^52 index points the op is refused by name. */
static void test_inner_nodes(uj_session *s) {
  uj_tensor *a = zeros(s, SHAPE(1 << 20, 1 << 20));
  EXPECT_NULL(s, uj_tensor_matmul(a, a), "matmul", "too large");
  uj_tensor *m = uj_tensor_matmul(zeros(s, SHAPE(1 << 14, 1 << 14)), zeros(s, SHAPE(1 << 14, 1 << 14)));
  expect_numel(m, (int64_t)1 << 28, "matmul 2^14: its 2^42-point product is allowed inside the op");
  uj_tensor *x = zeros(s, SHAPE(1, 1, 10, 10)), *w = zeros(s, SHAPE(1, 1, 1, 1)), *w3 = zeros(s, SHAPE(1, 1, 3, 3));
  const int64_t huge[2] = {BIG, BIG}, one[2] = {1, 1};
  expect_numel(uj_tensor_conv2d(x, w, NULL, huge, NULL, huge, 1), 1, "conv2d, stride and dilation 2^62, a 1x1 kernel");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w3, NULL, NULL, NULL, huge, 1), "conv2d", "does not fit");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w3, NULL, one, huge, NULL, 1), "conv2d", "too large");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w3, NULL, NULL, NULL, NULL, 0), "conv2d", "groups must be at least 1");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w3, NULL, NULL, NULL, NULL, -5), "conv2d", "groups must be at least 1, not -5");
  expect_numel(uj_tensor_maxpool2d(x, (const int64_t[]){3, 3}, huge, NULL), 1, "maxpool2d, stride 2^62");
  EXPECT_NULL(s, uj_tensor_maxpool2d(x, (const int64_t[]){3, 3}, NULL, huge), "maxpool2d", "padding");
  EXPECT_NULL(s, uj_tensor_avgpool2d(x, (const int64_t[]){3, INT64_MAX}, NULL, (const int64_t[]){1, INT64_MAX / 2}), "avgpool2d");
  uj_tensor *line = zeros(s, SHAPE(1, 1 << 30));
  EXPECT_NULL(s, uj_tensor_maxpool2d(line, (const int64_t[]){1, 1 << 23}, one, NULL), "maxpool2d", "too large to index");
}

/* A scalar an integer tensor's dtype cannot hold is not wrapped into it:
 * the result takes the narrowest dtype that holds both. */
static void expect_scalar(uj_session *s, uj_scalar d, uj_binop op, double v, uj_scalar want_dtype, const int64_t *want) {
  const int64_t vals[2] = {1, 2};
  uj_tensor *x = uj_tensor_cast(uj_tensor_from_data(s, UJ_INT64, SHAPE(2), vals), d);
  uj_tensor *r = uj_tensor_cast(uj_tensor_binary_scalar(op, x, v, false), UJ_INT64);
  int64_t got[2] = {0, 0};
  uj_scalar dt = uj_tensor_dtype(uj_tensor_binary_scalar(op, x, v, false));
  CHECK(r && uj_tensor_to_host(r, got, sizeof got) == UJ_OK, "%s %g: %s", uj_binop_name(op), v, uj_session_error(s));
  CHECK(dt == want_dtype, "%s %g: dtype %d, want %d", uj_binop_name(op), v, (int)dt, (int)want_dtype);
  CHECK(got[0] == want[0] && got[1] == want[1], "%s %g: got %lld %lld, want %lld %lld", uj_binop_name(op), v, (long long)got[0],
        (long long)got[1], (long long)want[0], (long long)want[1]);
}

static void test_scalars(uj_session *s) {
  expect_scalar(s, UJ_INT8, UJ_BIN_ADD, 300, UJ_INT16, (const int64_t[]){301, 302});
  expect_scalar(s, UJ_INT8, UJ_BIN_ADD, 126, UJ_INT8, (const int64_t[]){127, -128}); /* fits: int8 wraps, as documented */
  expect_scalar(s, UJ_INT8, UJ_BIN_SUB, 129, UJ_INT16, (const int64_t[]){-128, -127});
  expect_scalar(s, UJ_UINT8, UJ_BIN_ADD, 256, UJ_UINT16, (const int64_t[]){257, 258});
  expect_scalar(s, UJ_UINT8, UJ_BIN_ADD, -1, UJ_INT16, (const int64_t[]){0, 1});
  expect_scalar(s, UJ_INT32, UJ_BIN_MUL, 0x1p40, UJ_INT64, (const int64_t[]){(int64_t)1 << 40, (int64_t)1 << 41});
  expect_scalar(s, UJ_INT32, UJ_BIN_LT, 1e10, UJ_BOOL, (const int64_t[]){1, 1});
  expect_scalar(s, UJ_INT32, UJ_BIN_GT, -1e10, UJ_BOOL, (const int64_t[]){1, 1});
}

/* A session's limit set lower holds for every op, creation or not. */
static void test_session_limit(void) {
  uj_session *s = uj_session_new("CPU", NULL);
  CHECK(s != NULL, "session");
  if (!s) return;
  tensor_set_max_elements(s, 1000);
  EXPECT_NULL(s, zeros(s, SHAPE(1001)), "zeros", "more than 1000 elements");
  uj_tensor *t = zeros(s, SHAPE(10, 1));
  expect_numel(t, 10, "zeros(10, 1)");
  EXPECT_NULL(s, uj_tensor_expand(t, SHAPE(10, 101)), "expand", "(10, 101)", "more than 1000 elements");
  uj_tensor *col = zeros(s, SHAPE(40, 1));
  EXPECT_NULL(s, uj_tensor_matmul(col, uj_tensor_reshape(col, SHAPE(1, 40))), "matmul", "(40, 40)");
  EXPECT_NULL(s, uj_tensor_arange(s, UJ_INT32, 0, 1001, 1), "arange");
  tensor_set_max_elements(s, -1); /* out of range: the default */
  expect_numel(zeros(s, SHAPE(CAP)), CAP, "the default limit again");
  uj_session_free(s);
}

int main(void) {
  uj_session *s = uj_session_new("CPU", NULL);
  CHECK(s != NULL, "session");
  if (!s) return check_report("test_tensor_limits");
  test_creation(s);
  test_views(s);
  test_empty_reductions(s);
  test_inner_nodes(s);
  test_scalars(s);
  uj_session_free(s);
  test_session_limit();
  return check_report("test_tensor_limits");
}
