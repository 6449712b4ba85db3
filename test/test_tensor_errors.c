/* test_tensor_errors.c — bad input to the lazy tensor API (tensor.h).
 *
 * Every mistake gives NULL (or a status != UJ_OK) and a message in the
 * session that names the operation and what was wrong: for shape errors
 * both shapes, as shape_str writes them ("(2, 3)"); for axis errors the
 * axis. A NULL tensor argument gives NULL and keeps the first message, so
 * a chain of calls is checked once at its end. Also: .npy files missing
 * or malformed (the message names the path), dtypes .npy cannot hold,
 * unknown and absent devices, to_host with the wrong byte count. The
 * session stays usable after each error. The suite runs under ASan/LSan:
 * nothing a failed call makes may leak. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "expect.h"
#include "uopjit/tensor.h"

static uj_tensor *zeros(uj_session *s, const int64_t *shape, unsigned nd) {
  return uj_tensor_zeros(s, UJ_FLOAT32, shape, nd);
}
static uj_tensor *rnd(uj_session *s, const int64_t *shape, unsigned nd) {
  return uj_tensor_rand(s, shape, nd, 1);
}

/* ---- shapes of elementwise ops and views ---- */

static void test_broadcast_errors(uj_session *s) {
  uj_tensor *a = rnd(s, SHAPE(2, 3)), *b = rnd(s, SHAPE(4, 5)), *c = rnd(s, SHAPE(3, 2));
  EXPECT_NULL(s, uj_tensor_binary(UJ_BIN_ADD, a, b), "add", "(2, 3)", "(4, 5)");
  EXPECT_NULL(s, uj_tensor_binary(UJ_BIN_LT, c, a), "lt", "(3, 2)", "(2, 3)");
  EXPECT_NULL(s, uj_tensor_binary(UJ_BIN_POW, a, rnd(s, SHAPE(2, 2, 2))), "pow", "(2, 3)",
              "(2, 2, 2)");
  EXPECT_NULL(s, uj_tensor_where(uj_tensor_binary_scalar(UJ_BIN_GT, a, 0.5, false), a, c), "where",
              "(2, 3)", "(3, 2)");
  EXPECT_NULL(s, uj_tensor_where(uj_tensor_cast(c, UJ_BOOL), a, a), "where", "(3, 2)", "(2, 3)");
  EXPECT_NULL(s, uj_tensor_binary(UJ_BIN_AND, a, a), "and", "float");
  EXPECT_NULL(s, uj_tensor_binary_scalar(UJ_BIN_XOR, a, 1, false), "xor", "float");
  EXPECT_NULL(s, uj_tensor_unary(UJ_UN_NOT, a), "not", "float");
  EXPECT_NULL(s, uj_tensor_binary((uj_binop)99, a, a), "unknown op 99");
  EXPECT_NULL(s, uj_tensor_unary((uj_unop)99, a), "unknown op 99");
  EXPECT_NULL(s, uj_tensor_cast(a, (uj_scalar)99), "cast", "99");
  EXPECT_NULL(s, uj_tensor_cast(a, UJ_VOID), "cast", "dtype");
}

static void test_view_errors(uj_session *s) {
  uj_tensor *a = rnd(s, SHAPE(2, 3));
  EXPECT_NULL(s, uj_tensor_reshape(a, SHAPE(4, 2)), "reshape", "(2, 3)", "(4, 2)");
  EXPECT_NULL(s, uj_tensor_reshape(a, SHAPE(7)), "reshape", "(2, 3)", "(7,)");
  EXPECT_NULL(s, uj_tensor_reshape(a, SHAPE(4, -1)), "reshape", "(2, 3)", "(4, -1)");
  EXPECT_NULL(s, uj_tensor_reshape(a, SHAPE(-1, -1)), "reshape", "-1");
  EXPECT_NULL(s, uj_tensor_reshape(a, SHAPE(-2, -3)), "reshape", "negative");
  EXPECT_NULL(s, uj_tensor_reshape(a, SHAPE(1, 1, 1, 1, 1, 1, 1, 2, 3)), "reshape", "at most 8");
  EXPECT_NULL(s, uj_tensor_expand(a, SHAPE(4, 3)), "expand", "(2, 3)", "(4, 3)");
  EXPECT_NULL(s, uj_tensor_expand(a, SHAPE(3)), "expand", "(2, 3)", "(3,)");
  EXPECT_NULL(s, uj_tensor_expand(a, SHAPE(2, 3, 2)), "expand", "(2, 3)", "(2, 3, 2)");
  EXPECT_NULL(s, uj_tensor_permute(a, (const int[]){0, 0}, 2), "permute", "axis 0 appears twice");
  EXPECT_NULL(s, uj_tensor_permute(a, (const int[]){0, 2}, 2), "permute", "axis 2", "2 axes");
  EXPECT_NULL(s, uj_tensor_permute(a, (const int[]){1, -3}, 2), "permute", "axis -3");
  EXPECT_NULL(s, uj_tensor_permute(a, (const int[]){0}, 1), "permute",
              "1 axes given for a tensor of 2");
  EXPECT_NULL(s, uj_tensor_transpose(a, 0, 2), "transpose", "axis 2");
  EXPECT_NULL(s, uj_tensor_transpose(a, -3, 0), "transpose", "axis -3");
  EXPECT_NULL(s, uj_tensor_flip(a, (const int[]){2}, 1), "flip", "axis 2");
  EXPECT_NULL(s, uj_tensor_flip(a, (const int[]){1, -1}, 2), "flip", "appears twice");
  EXPECT_NULL(s, uj_tensor_flip(a, (const int[]){0, 1, 0}, 3), "flip",
              "3 axes given for a tensor of 2");
  EXPECT_NULL(s, uj_tensor_pad(a, (const int64_t[]){0, 0, -1, 2}, 2), "pad", "axis 1", "negative");
  EXPECT_NULL(s, uj_tensor_pad(a, (const int64_t[]){1, 1}, 1), "pad", "1 (lo, hi) pairs", "2 axes");
  EXPECT_NULL(s, uj_tensor_shrink(a, (const int64_t[]){0, 2, 0, 4}, 2), "shrink", "axis 1",
              "[0, 4)", "(2, 3)");
  EXPECT_NULL(s, uj_tensor_shrink(a, (const int64_t[]){-1, 1, 0, 3}, 2), "shrink", "axis 0",
              "(2, 3)");
  EXPECT_NULL(s, uj_tensor_shrink(a, (const int64_t[]){2, 1, 0, 3}, 2), "shrink", "[2, 1)",
              "(2, 3)");
  EXPECT_NULL(s, uj_tensor_shrink(a, (const int64_t[]){0, 1, 0, 3, 0, 1}, 3), "shrink",
              "3 (lo, hi) pairs");
  /* cat and stack */
  uj_tensor *b = rnd(s, SHAPE(2, 4)), *c = rnd(s, SHAPE(2, 3, 1));
  uj_tensor *ab[2] = {a, b}, *ac[2] = {a, c}, *aa[2] = {a, a};
  EXPECT_NULL(s, uj_tensor_cat(ab, 2, 0), "cat", "(2, 3)", "(2, 4)", "axis 0");
  EXPECT_NULL(s, uj_tensor_cat(ac, 2, 1), "cat", "(2, 3)", "(2, 3, 1)");
  EXPECT_NULL(s, uj_tensor_cat(aa, 2, 2), "cat", "axis 2");
  EXPECT_NULL(s, uj_tensor_cat(aa, 2, -3), "cat", "axis -3");
  EXPECT_NULL(s, uj_tensor_stack(ab, 2, 0), "stack", "(2, 3)", "(2, 4)");
  EXPECT_NULL(s, uj_tensor_stack(aa, 2, 3), "stack", "axis 3");
  CHECK(uj_tensor_cat(ab, 2, 1) != NULL, "cat along the axis where they differ: %s",
        uj_session_error(s));
}

/* ---- reductions, gather ---- */

static void test_reduce_errors(uj_session *s) {
  uj_tensor *a = rnd(s, SHAPE(2, 3, 4));
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_SUM, a, (const int[]){3}, 1, false), "sum", "axis 3",
              "3 axes");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_MAX, a, (const int[]){-4}, 1, false), "max", "axis -4");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_MEAN, a, (const int[]){1, -2}, 2, true), "mean",
              "appears twice");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_ARGMAX, a, (const int[]){0, 1}, 2, false), "argmax",
              "one axis");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_ARGMIN, a, (const int[]){5}, 1, false), "argmin",
              "axis 5");
  EXPECT_NULL(s, uj_tensor_reduce((uj_reduceop)42, a, NULL, 0, false), "reduce", "unknown op 42");
  EXPECT_NULL(s, uj_tensor_reduce(UJ_RED_MAX, zeros(s, SHAPE(2, 0)), (const int[]){1}, 1, false),
              "max", "size 0");
  CHECK(uj_tensor_reduce(UJ_RED_SUM, zeros(s, SHAPE(2, 0)), (const int[]){1}, 1, false) != NULL,
        "the sum of nothing is 0");
  EXPECT_NULL(s, uj_tensor_softmax(a, 3), "softmax", "axis 3");
  EXPECT_NULL(s, uj_tensor_log_softmax(a, -4), "log_softmax", "axis -4");
  /* gather */
  uj_tensor *x = rnd(s, SHAPE(3, 4)), *fi = zeros(s, SHAPE(3, 4));
  EXPECT_NULL(s, uj_tensor_gather(x, 0, fi), "gather", "integer");
  uj_tensor *ix = uj_tensor_zeros(s, UJ_INT32, SHAPE(3, 5));
  EXPECT_NULL(s, uj_tensor_gather(x, 0, ix), "gather", "(3, 5)", "(3, 4)");
  EXPECT_NULL(s, uj_tensor_gather(x, 0, uj_tensor_zeros(s, UJ_INT32, SHAPE(3))), "gather", "(3,)",
              "(3, 4)");
  EXPECT_NULL(s, uj_tensor_gather(x, 2, ix), "gather", "axis 2");
  CHECK(uj_tensor_gather(x, 1, ix) != NULL, "gather along the axis where the index is longer: %s",
        uj_session_error(s));
}

/* ---- matmul, conv2d, pooling ---- */

static void test_nn_errors(uj_session *s) {
  uj_tensor *a = rnd(s, SHAPE(2, 3)), *b = rnd(s, SHAPE(4, 5));
  EXPECT_NULL(s, uj_tensor_matmul(a, b), "matmul", "(2, 3)", "(4, 5)");
  EXPECT_NULL(s, uj_tensor_matmul(rnd(s, SHAPE(4)), a), "matmul", "(4,)", "(2, 3)");
  EXPECT_NULL(s, uj_tensor_matmul(a, rnd(s, SHAPE(2))), "matmul", "(2, 3)", "(2,)");
  EXPECT_NULL(s, uj_tensor_matmul(rnd(s, SHAPE(2, 2, 3)), rnd(s, SHAPE(3, 3, 4))), "matmul",
              "(2, 2, 3)", "(3, 3, 4)");
  EXPECT_NULL(s, uj_tensor_matmul(uj_tensor_full(s, UJ_FLOAT32, NULL, 0, 1), a), "matmul",
              "scalar");
  /* conv2d */
  uj_tensor *x = rnd(s, SHAPE(1, 4, 6, 6)), *w = rnd(s, SHAPE(2, 4, 3, 3));
  EXPECT_NULL(s, uj_tensor_conv2d(rnd(s, SHAPE(4, 6, 6)), w, NULL, NULL, NULL, NULL, 1), "conv2d",
              "4 axes", "(4, 6, 6)");
  EXPECT_NULL(s, uj_tensor_conv2d(x, rnd(s, SHAPE(2, 4, 3)), NULL, NULL, NULL, NULL, 1), "conv2d",
              "4 axes", "(2, 4, 3)");
  EXPECT_NULL(s, uj_tensor_conv2d(x, rnd(s, SHAPE(2, 3, 3, 3)), NULL, NULL, NULL, NULL, 1),
              "conv2d", "(1, 4, 6, 6)", "(2, 3, 3, 3)");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w, NULL, NULL, NULL, NULL, 3), "conv2d", "(1, 4, 6, 6)",
              "(2, 4, 3, 3)", "3 groups");
  EXPECT_NULL(s, uj_tensor_conv2d(x, rnd(s, SHAPE(3, 2, 3, 3)), NULL, NULL, NULL, NULL, 2),
              "conv2d", "(3, 2, 3, 3)", "2 groups");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w, NULL, NULL, NULL, NULL, 0), "conv2d", "groups must be at least 1, not 0");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w, rnd(s, SHAPE(3)), NULL, NULL, NULL, 1), "conv2d", "bias",
              "(3,)", "2 output channels");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w, NULL, NULL, (const int64_t[]){-1, 0}, NULL, 1), "conv2d",
              "padding (-1, 0)");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w, NULL, (const int64_t[]){0, 1}, NULL, NULL, 1), "conv2d",
              "stride 0");
  EXPECT_NULL(s, uj_tensor_conv2d(x, rnd(s, SHAPE(2, 4, 7, 3)), NULL, NULL, NULL, NULL, 1),
              "conv2d", "window of 7", "axis of 6");
  EXPECT_NULL(s, uj_tensor_conv2d(x, w, NULL, NULL, NULL, (const int64_t[]){3, 1}, 1), "conv2d",
              "dilation 3");
  /* pooling */
  uj_tensor *p = rnd(s, SHAPE(2, 5, 5));
  EXPECT_NULL(s, uj_tensor_maxpool2d(p, (const int64_t[]){2, 2}, NULL, (const int64_t[]){2, 0}),
              "maxpool2d", "padding (2, 0)", "kernel (2, 2)");
  EXPECT_NULL(s, uj_tensor_avgpool2d(p, (const int64_t[]){3, 3}, NULL, (const int64_t[]){0, -1}),
              "avgpool2d", "padding (0, -1)");
  EXPECT_NULL(s, uj_tensor_maxpool2d(p, (const int64_t[]){6, 2}, NULL, NULL), "maxpool2d",
              "window of 6", "axis of 5");
  EXPECT_NULL(s, uj_tensor_avgpool2d(p, (const int64_t[]){2, 0}, NULL, NULL), "avgpool2d",
              "kernel 0");
  EXPECT_NULL(s, uj_tensor_maxpool2d(rnd(s, SHAPE(5)), (const int64_t[]){2, 2}, NULL, NULL),
              "maxpool2d", "(5,)");
  EXPECT_NULL(s, uj_tensor_avgpool2d(p, NULL, NULL, NULL), "avgpool2d", "kernel");
}

/* ---- creation ---- */

static void test_creation_errors(uj_session *s) {
  EXPECT_NULL(s, uj_tensor_zeros(s, UJ_FLOAT32, SHAPE(2, -3)), "zeros", "axis 1",
              "negative size -3");
  EXPECT_NULL(s, uj_tensor_from_data(s, UJ_FLOAT32, SHAPE(2, -3), NULL), "from_data", "negative");
  EXPECT_NULL(s, uj_tensor_from_data(s, UJ_FLOAT32, SHAPE(2, 3), NULL), "from_data", "no data");
  EXPECT_NULL(s, uj_tensor_from_data(s, UJ_VOID, SHAPE(2), (const float[]){1, 2}), "from_data",
              "bad dtype");
  EXPECT_NULL(s, uj_tensor_full(s, (uj_scalar)77, SHAPE(2), 1), "full", "bad dtype 77");
  EXPECT_NULL(s, uj_tensor_rand(s, SHAPE(1 << 21, 1 << 21), 1), "rand", "(2097152, 2097152)", "too large", "more than 2^40 elements");
  EXPECT_NULL(s, uj_tensor_randn(s, SHAPE(1, 1, 1, 1, 1, 1, 1, 1, 1), 1), "randn", "at most 8");
  EXPECT_NULL(s, uj_tensor_arange(s, UJ_FLOAT32, 0, 5, 0), "arange", "step");
  EXPECT_NULL(s, uj_tensor_arange(s, UJ_FLOAT32, 0, 1.0 / 0.0, 1), "arange", "finite");
  EXPECT_NULL(s, uj_tensor_arange(s, UJ_INT32, 0, 1e30, 1), "arange", "too many elements");
}

/* ---- NULL arguments keep the first message ---- */

static void test_null_chain(uj_session *s) {
  uj_tensor *a = rnd(s, SHAPE(2, 3)), *b = rnd(s, SHAPE(4, 5));
  uj_session_clear_error(s);
  CHECK(!strcmp(uj_session_error(s), ""), "no error after clear: '%s'", uj_session_error(s));
  uj_tensor *bad = uj_tensor_binary(UJ_BIN_ADD, a, b); /* the first error */
  char first[512];
  snprintf(first, sizeof first, "%s", uj_session_error(s));
  CHECK(bad == NULL && strstr(first, "add") && strstr(first, "(2, 3)") && strstr(first, "(4, 5)"),
        "first error: '%s'", first);
  uj_tensor *t = uj_tensor_unary(UJ_UN_RELU, bad);
  t = uj_tensor_binary(UJ_BIN_MUL, t, a);
  t = uj_tensor_binary(UJ_BIN_MUL, a, t);
  t = uj_tensor_binary_scalar(UJ_BIN_ADD, t, 1, false);
  t = uj_tensor_reshape(t, SHAPE(-1));
  t = uj_tensor_expand(t, SHAPE(2, 6));
  t = uj_tensor_permute(t, (const int[]){1, 0}, 2);
  t = uj_tensor_transpose(t, 0, 1);
  t = uj_tensor_flip(t, (const int[]){0}, 1);
  t = uj_tensor_pad(t, (const int64_t[]){1, 1}, 1);
  t = uj_tensor_shrink(t, (const int64_t[]){0, 1}, 1);
  t = uj_tensor_cast(t, UJ_INT32);
  t = uj_tensor_where(t, a, a);
  t = uj_tensor_where(a, t, a);
  t = uj_tensor_where(a, a, t);
  uj_tensor *pair[2] = {a, t};
  t = uj_tensor_cat(pair, 2, 0);
  t = uj_tensor_stack(pair, 2, 0);
  t = uj_tensor_reduce(UJ_RED_SUM, t, NULL, 0, false);
  t = uj_tensor_softmax(t, 0);
  t = uj_tensor_log_softmax(t, 0);
  t = uj_tensor_gather(t, 0, a);
  t = uj_tensor_gather(a, 0, t);
  t = uj_tensor_matmul(t, a);
  t = uj_tensor_matmul(a, t);
  t = uj_tensor_conv2d(t, a, NULL, NULL, NULL, NULL, 1);
  t = uj_tensor_conv2d(a, t, NULL, NULL, NULL, NULL, 1);
  t = uj_tensor_maxpool2d(t, (const int64_t[]){2, 2}, NULL, NULL);
  t = uj_tensor_avgpool2d(t, (const int64_t[]){2, 2}, NULL, NULL);
  CHECK(t == NULL, "a chain on NULL is NULL");
  float out[6];
  CHECK(uj_tensor_to_host(t, out, sizeof out) != UJ_OK, "to_host(NULL)");
  CHECK(uj_tensor_realize(&t, 1) != UJ_OK, "realize(NULL)");
  CHECK(uj_tensor_save_npy(t, "/nonexistent/x.npy") != UJ_OK, "save_npy(NULL)");
  CHECK(uj_tensor_schedule_text(t, "kernels") == NULL, "schedule_text(NULL)");
  CHECK(uj_tensor_session(t) == NULL && uj_tensor_ndim(t) == 0 && uj_tensor_numel(t) == 0 &&
            uj_tensor_shape(t) == NULL && uj_tensor_uop(t) == NULL && uj_tensor_dtype(t) == UJ_VOID,
        "the readers of NULL");
  uj_tensor_free(t);
  CHECK_STR(uj_session_error(s), first, "the first message is kept through the chain");
  /* the session still works */
  uj_tensor *ok = uj_tensor_binary(UJ_BIN_ADD, a, a);
  CHECK(ok && uj_tensor_to_host(ok, out, sizeof out) == UJ_OK, "after errors: %s",
        uj_session_error(s));
  uj_tensor *n = NULL;
  uj_tensor *with_null[3] = {a, NULL, a};
  uj_session_clear_error(s);
  CHECK(uj_tensor_cat(with_null, 3, 0) == NULL && uj_tensor_stack(with_null, 3, 0) == NULL,
        "cat/stack with a NULL input");
  CHECK(uj_tensor_realize(with_null, 3) != UJ_OK, "realize with a NULL input");
  CHECK(uj_tensor_binary(UJ_BIN_ADD, n, n) == NULL && !strcmp(uj_session_error(s), ""),
        "NULL inputs leave no new message");
}

/* ---- files, devices, host copies ---- */

static void write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL, "cannot write %s", path);
  if (!f) return;
  fwrite(bytes, 1, n, f);
  fclose(f);
}

static void test_file_errors(uj_session *s) {
  char dir[] = "/tmp/uj_tensor_errors_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "mkdtemp");
  char missing[128], garbage[128], truncated[128], cut_header[128], half[128], good[128];
  snprintf(missing, sizeof missing, "%s/missing.npy", dir);
  snprintf(garbage, sizeof garbage, "%s/garbage.npy", dir);
  snprintf(truncated, sizeof truncated, "%s/truncated.npy", dir);
  snprintf(half, sizeof half, "%s/f16.npy", dir);
  snprintf(cut_header, sizeof cut_header, "%s/cut_header.npy", dir);
  snprintf(good, sizeof good, "%s/good.npy", dir);
  EXPECT_NULL(s, uj_tensor_load_npy(s, missing), "load", missing, "cannot open");
  write_file(garbage, "this is not a numpy file at all\n", 32);
  EXPECT_NULL(s, uj_tensor_load_npy(s, garbage), "load", garbage, "magic");
  static const char hdr[] =
      "\x93NUMPY\x01\x00\x46\x00{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }";
  char file[10 + 70 + 8];
  memcpy(file, hdr, sizeof hdr - 1);
  memset(file + sizeof hdr - 1, ' ', 10 + 70 - (sizeof hdr - 1));
  file[10 + 70 - 1] = '\n';
  memset(file + 80, 0, 8); /* 2 of the 4 floats */
  write_file(truncated, file, sizeof file);
  EXPECT_NULL(s, uj_tensor_load_npy(s, truncated), "load", truncated, "truncated");
  write_file(cut_header, hdr, 30);
  EXPECT_NULL(s, uj_tensor_load_npy(s, cut_header), "load", cut_header, "truncated");
  /* float16 cannot be written; float32 can, and reads back */
  uj_tensor *h = uj_tensor_full(s, UJ_FLOAT16, SHAPE(3), 1.5);
  EXPECT_STATUS(s, uj_tensor_save_npy(h, half), "save", half, "float16");
  CHECK(access(half, F_OK) != 0, "a refused save writes no file");
  EXPECT_STATUS(s, uj_tensor_save_npy(uj_tensor_zeros(s, UJ_BFLOAT16, SHAPE(2)), half), "save",
                "bfloat16");
  EXPECT_STATUS(s, uj_tensor_save_npy(uj_tensor_zeros(s, UJ_INT8, SHAPE(2)), half), "save", "int8");
  EXPECT_STATUS(
      s, uj_tensor_save_npy(uj_tensor_zeros(s, UJ_FLOAT32, SHAPE(2)), "/nonexistent_dir_uj/x.npy"),
      "save", "/nonexistent_dir_uj/x.npy");
  CHECK(uj_tensor_save_npy(uj_tensor_cast(h, UJ_FLOAT32), good) == UJ_OK, "save float32: %s",
        uj_session_error(s));
  float back[3] = {0};
  uj_tensor *l = uj_tensor_load_npy(s, good);
  CHECK(l && uj_tensor_to_host(l, back, sizeof back) == UJ_OK && back[0] == 1.5f && back[2] == 1.5f,
        "load what was saved: %s", uj_session_error(s));
  unlink(truncated), unlink(garbage), unlink(cut_header), unlink(good), unlink(half);
  CHECK(rmdir(dir) == 0, "temp dir left behind: %s", dir);
}

static void test_host_copy_errors(uj_session *s) {
  uj_tensor *a = rnd(s, SHAPE(2, 3));
  float out[8];
  EXPECT_STATUS(s, uj_tensor_to_host(a, out, 5 * sizeof *out), "to_host", "20 bytes", "24");
  EXPECT_STATUS(s, uj_tensor_to_host(a, out, 8 * sizeof *out), "to_host", "32 bytes", "24");
  EXPECT_STATUS(s, uj_tensor_to_host(uj_tensor_cast(a, UJ_FLOAT64), out, 6 * sizeof *out),
                "to_host", "24 bytes", "48");
  EXPECT_NULL(s, uj_tensor_schedule_text(a, "nope"), "schedule_text", "'nope'");
  CHECK(uj_tensor_to_host(a, out, 6 * sizeof *out) == UJ_OK, "the right count: %s",
        uj_session_error(s));
}

static void test_sessions(void) {
  const char *why = NULL;
  CHECK(uj_session_new("NOPE", &why) == NULL && why && strstr(why, "unknown device"), "NOPE: %s",
        why ? why : "(no reason)");
  why = NULL;
  setenv("UJ_HSA_LIBRARY", "/nonexistent/libhsa-runtime64.so.1", 1);
  CHECK(uj_session_new("AMD", &why) == NULL && why && strncmp(why, "no AMD GPU: cannot open the HSA runtime", 39) == 0,
        "AMD: %s", why ? why : "(no reason)");
  unsetenv("UJ_HSA_LIBRARY");
  why = NULL; /* a missing driver is a reason, not a crash (test_cuda, test_amd: the rest) */
  setenv("UJ_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  CHECK(uj_session_new("CUDA", &why) == NULL && why && strncmp(why, "no CUDA device: ", 16) == 0, "CUDA: %s",
        why ? why : "(no reason)");
  unsetenv("UJ_CUDA_LIBRARY");
  CHECK(uj_session_new("NOPE", NULL) == NULL, "a NULL error pointer is allowed");
  /* no name: UJ_DEVICE, else the CPU */
  const char *env = getenv("UJ_DEVICE");
  char saved[64] = "";
  if (env) snprintf(saved, sizeof saved, "%s", env);
  setenv("UJ_DEVICE", "NOPE", 1);
  why = NULL;
  CHECK(uj_session_new(NULL, &why) == NULL && why && strstr(why, "UJ_DEVICE names an unknown device"), "UJ_DEVICE=NOPE: %s",
        why ? why : "(no reason)");
  setenv("UJ_DEVICE", "EVAL", 1);
  uj_session *ev = uj_session_new(NULL, &why);
  CHECK(ev != NULL, "UJ_DEVICE=EVAL: %s", why ? why : "");
  uj_session_free(ev);
  if (env) setenv("UJ_DEVICE", saved, 1);
  else unsetenv("UJ_DEVICE");
  uj_session *a = uj_session_new(NULL, &why), *b = uj_session_new("CPU", &why);
  CHECK(a && b, "CPU sessions");
  if (!a || !b) {
    uj_session_free(a), uj_session_free(b);
    return;
  }
  uj_tensor *x = uj_tensor_rand(a, SHAPE(2), 1), *y = uj_tensor_rand(b, SHAPE(2), 1);
  EXPECT_NULL(a, uj_tensor_binary(UJ_BIN_ADD, x, y), "add", "different sessions");
  EXPECT_NULL(a, uj_tensor_where(x, x, y), "where", "different sessions");
  uj_tensor *xy[2] = {x, y};
  EXPECT_NULL(a, uj_tensor_cat(xy, 2, 0), "cat", "different sessions");
  EXPECT_STATUS(a, uj_tensor_realize(xy, 2), "realize", "different sessions");
  uj_session_free(a);
  uj_session_free(b);
  uj_session_free(NULL);
}

int main(void) {
  const char *why = NULL;
  uj_session *s = uj_session_new("CPU", &why);
  CHECK(s != NULL, "session: %s", why ? why : "?");
  if (!s) return check_report("test_tensor_errors");
  test_broadcast_errors(s);
  test_view_errors(s);
  test_reduce_errors(s);
  test_nn_errors(s);
  test_creation_errors(s);
  test_null_chain(s);
  test_file_errors(s);
  test_host_copy_errors(s);
  uj_session_free(s);
  test_sessions();
  return check_report("test_tensor_errors");
}
