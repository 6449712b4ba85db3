/* test_schedule.c — the scheduler through the tensor API: how many kernels
 * typical graphs make (fusion), that realized tensors are not computed
 * again, that index arithmetic of movement ops simplifies to what one
 * would write by hand, the memory plan (dead intermediates reused, with
 * the dependences that makes), independent kernels, and the values. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "schedule/schedule.h"
#include "tensor/tensor_impl.h"

static ScheduleTarget cpu = {"CPU", 64, {0}}; /* .opt.desc set in main: cpu-avx2 */

static uj_tensor *rnd(uj_session *s, int64_t a, int64_t b, uint64_t seed) { return uj_tensor_rand(s, (int64_t[]){a, b}, 2, seed); }
static uj_tensor *bin(uj_binop op, uj_tensor *a, uj_tensor *b) { return uj_tensor_binary(op, a, b); }
static uj_tensor *red(uj_reduceop op, uj_tensor *a, int axis) { return uj_tensor_reduce(op, a, &axis, 1, true); }

static void test_kernel_counts(uj_session *s) {
  uj_tensor *a = rnd(s, 16, 8, 1), *b = rnd(s, 16, 8, 2), *c = rnd(s, 16, 8, 3), *w = rnd(s, 8, 4, 4), *bias = rnd(s, 1, 4, 5);
  uj_tensor *fused = uj_tensor_unary(UJ_UN_RELU, bin(UJ_BIN_ADD, bin(UJ_BIN_MUL, a, b), c));
  CHECK(uj_tensor_kernel_count(fused) == 1, "(a*b+c).relu(): %zu kernels", uj_tensor_kernel_count(fused));
  /* softmax over a row: one kernel, its max and sum stored once a row before the loop of quotients (lib/opt/hoist.c);
   * over a column (axis 0) three: in one, the max and sum of column j would run again for every row */
  CHECK(uj_tensor_kernel_count(uj_tensor_softmax(a, -1)) == 1, "softmax: %zu kernels", uj_tensor_kernel_count(uj_tensor_softmax(a, -1)));
  char *one = uj_tensor_schedule_text(uj_tensor_softmax(a, -1), "uops");
  CHECK(one && strstr(one, "(ALLOC:float32*reg") && strstr(one, "REDUCE:float32 MAX"), "softmax: the max stored a row:\n%s", one ? one : "");
  free(one);
  CHECK(uj_tensor_kernel_count(uj_tensor_softmax(a, 0)) == 3, "softmax over axis 0");
  uj_tensor *mm = uj_tensor_unary(UJ_UN_RELU, bin(UJ_BIN_ADD, uj_tensor_matmul(a, w), bias));
  CHECK(uj_tensor_kernel_count(mm) == 1, "matmul+bias+relu: %zu kernels", uj_tensor_kernel_count(mm));
  uj_tensor *sum1 = uj_tensor_binary_scalar(UJ_BIN_ADD, uj_tensor_reduce(UJ_RED_SUM, a, NULL, 0, false), 1, false);
  CHECK(uj_tensor_kernel_count(sum1) == 1, "sum(a)+1: a reduce not broadcast fuses");
  uj_tensor *nested = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_reduce(UJ_RED_MAX, a, (int[]){1}, 1, false), NULL, 0, false);
  CHECK(uj_tensor_kernel_count(nested) == 1, "sum(max(a, 1)): nested loops in one kernel");
  /* layernorm: mean, then variance of the centred values, then the result, in one kernel (each stored once a row) */
  uj_tensor *cen = bin(UJ_BIN_SUB, a, red(UJ_RED_MEAN, a, 1));
  uj_tensor *var = red(UJ_RED_MEAN, bin(UJ_BIN_MUL, cen, cen), 1);
  uj_tensor *ln = bin(UJ_BIN_DIV, cen, uj_tensor_unary(UJ_UN_SQRT, uj_tensor_binary_scalar(UJ_BIN_ADD, var, 1e-5, false)));
  CHECK(uj_tensor_kernel_count(ln) == 1, "layernorm: %zu kernels", uj_tensor_kernel_count(ln));
  uj_tensor *img = uj_tensor_rand(s, (int64_t[]){2, 3, 9, 9}, 4, 6), *k = uj_tensor_rand(s, (int64_t[]){4, 3, 3, 3}, 4, 7);
  uj_tensor *cb = uj_tensor_rand(s, (int64_t[]){4}, 1, 8);
  uj_tensor *conv = uj_tensor_unary(UJ_UN_RELU, uj_tensor_conv2d(img, k, cb, NULL, (int64_t[]){1, 1}, NULL, 1));
  CHECK(uj_tensor_kernel_count(conv) == 2, "conv2d+bias+relu, padded: the padded input, then one kernel: %zu kernels",
        uj_tensor_kernel_count(conv));
  CHECK(uj_tensor_kernel_count(uj_tensor_maxpool2d(conv, (int64_t[]){2, 2}, NULL, NULL)) == 2, "conv then maxpool: one kernel more");
  uj_tensor *unpadded = uj_tensor_unary(UJ_UN_RELU, uj_tensor_conv2d(img, k, cb, NULL, NULL, NULL, 1));
  CHECK(uj_tensor_kernel_count(unpadded) == 1, "conv2d+bias+relu, no padding: %zu kernels", uj_tensor_kernel_count(unpadded));
  CHECK(uj_tensor_kernel_count(uj_tensor_transpose(a, 0, 1)) == 1, "a copy of a view");
  CHECK(uj_tensor_kernel_count(a) == 0, "a buffer needs no kernel");
  /* attention: one kernel (online softmax, docs/schedule.md "Online fusion"): no score matrix in memory */
  uj_tensor *q = uj_tensor_reshape(a, (int64_t[]){2, 4, 16}, 3), *kt = uj_tensor_transpose(q, -2, -1);
  uj_tensor *att = uj_tensor_matmul(uj_tensor_softmax(uj_tensor_binary_scalar(UJ_BIN_MUL, uj_tensor_matmul(q, kt), 0.25, false), -1), q);
  CHECK(uj_tensor_kernel_count(att) == 1, "attention: one kernel: %zu kernels", uj_tensor_kernel_count(att));
  uj_tensor *sm = uj_tensor_softmax(uj_tensor_rand(s, (int64_t[]){4, 256}, 2, 1), -1);
  CHECK(uj_tensor_kernel_count(sm) == 1, "softmax over 256: max, sum of exp, quotient in one: %zu kernels", uj_tensor_kernel_count(sm));
  uj_tensor *e2 = uj_tensor_binary(UJ_BIN_MUL, uj_tensor_reshape(uj_tensor_unary(UJ_UN_EXP, a), (int64_t[]){16, 8, 1}, 3),
                                   uj_tensor_full(s, UJ_FLOAT32, (int64_t[]){16, 8, 32}, 3, 2.0));
  CHECK(uj_tensor_kernel_count(e2) == 2, "exp broadcast 32 times: computed once, then read: %zu kernels", uj_tensor_kernel_count(e2));
  CHECK(uj_tensor_kernel_count(uj_tensor_reshape(a, (int64_t[]){8, 16}, 2)) == 0, "a reshape of a buffer needs none");
  /* a matmul's operand that weighs more than 8 is computed once, in a kernel of its own (a GEMM would compute it
   * again for every block of its columns); a relu of a bias add stays in the GEMM */
  uj_tensor *heavy = bin(UJ_BIN_MUL, bin(UJ_BIN_ADD, bin(UJ_BIN_MUL, a, b), c), bin(UJ_BIN_SUB, bin(UJ_BIN_MUL, b, c), a));
  heavy = bin(UJ_BIN_ADD, bin(UJ_BIN_MUL, heavy, heavy), bin(UJ_BIN_MUL, a, c));
  uj_tensor *wide = rnd(s, 8, 64, 9);
  CHECK(uj_tensor_kernel_count(uj_tensor_matmul(heavy, wide)) == 2, "a heavy operand broadcast 64 times: its own kernel: %zu",
        uj_tensor_kernel_count(uj_tensor_matmul(heavy, wide)));
  uj_tensor *light = uj_tensor_unary(UJ_UN_RELU, bin(UJ_BIN_ADD, a, c));
  CHECK(uj_tensor_kernel_count(uj_tensor_matmul(light, wide)) == 1, "relu(a + c) @ w: one kernel: %zu",
        uj_tensor_kernel_count(uj_tensor_matmul(light, wide)));
  CHECK(uj_tensor_kernel_count(uj_tensor_matmul(heavy, w)) == 1, "a heavy operand broadcast 4 times stays in: %zu",
        uj_tensor_kernel_count(uj_tensor_matmul(heavy, w)));
  /* a value two kernels read (here: a column sum's and the root's) that sums more than 4 arrays of its
   * size is written once (a transformer's residual stream); one of 3 arrays stays in both */
  uj_tensor *stream = rnd(s, 64, 64, 20), *few = NULL;
  for (int i = 0; i < 5; i++) {
    stream = bin(UJ_BIN_ADD, stream, rnd(s, 64, 64, 21 + (uint64_t)i));
    if (i == 1) few = stream;
  }
  uj_tensor *centered = bin(UJ_BIN_SUB, stream, uj_tensor_reduce(UJ_RED_SUM, stream, (int[]){0}, 1, true));
  CHECK(uj_tensor_kernel_count(centered) == 3, "a sum of 6 arrays read by two kernels: written once: %zu kernels", uj_tensor_kernel_count(centered));
  uj_tensor *centered_few = bin(UJ_BIN_SUB, few, uj_tensor_reduce(UJ_RED_SUM, few, (int[]){0}, 1, true));
  CHECK(uj_tensor_kernel_count(centered_few) == 2, "a sum of 3 arrays read by two kernels: in each: %zu kernels", uj_tensor_kernel_count(centered_few));
}

/* Realized tensors are read, not computed again; equal graphs are one. */
static void test_realized_reused(uj_session *s) {
  uj_tensor *a = rnd(s, 32, 32, 11);
  uj_tensor *sm = uj_tensor_softmax(a, 1);
  CHECK(uj_tensor_realize(&sm, 1) == UJ_OK, "%s", uj_session_error(s));
  CHECK(uj_tensor_kernel_count(sm) == 0, "realized");
  CHECK(uj_tensor_kernel_count(uj_tensor_softmax(a, 1)) == 0, "the same graph built again is the realized one");
  uj_tensor *next = uj_tensor_binary_scalar(UJ_BIN_MUL, uj_tensor_softmax(a, 1), 2, false);
  CHECK(uj_tensor_kernel_count(next) == 1, "a graph over a realized tensor: only its own kernel");
  char *text = uj_tensor_schedule_text(next, "kernels");
  CHECK(text && strstr(text, "1 kernel\nkernel 0 E_32_32: writes buffer"), "%s", text ? text : uj_session_error(s));
  free(text);
}

static bool has_divmod(uj_session *s, uj_tensor *t) {
  char *text = uj_tensor_schedule_text(t, "uops");
  bool found = !text || strstr(text, "IDIV") || strstr(text, "MOD");
  free(text);
  return found;
}

/* Index arithmetic as one would write it by hand. */
static void test_simple_indices(uj_session *s) {
  uj_tensor *a = uj_tensor_rand(s, (int64_t[]){4, 6, 8}, 3, 21);
  uj_tensor *p = uj_tensor_permute(a, (int[]){2, 0, 1}, 3);
  CHECK(!has_divmod(s, p), "permute: no division");
  char *text = uj_tensor_schedule_text(uj_tensor_transpose(rnd(s, 64, 32, 22), 0, 1), "uops");
  CHECK(text && strstr(text, "(LOAD:float32 (INDEX:float32* (PARAM:float32* 1) (ADD:int64 %0 (MUL:int64 %1 (CONST:int64 32)))))"),
        "transpose reads a[j*32 + i]: %s", text ? text : "");
  free(text);
  uj_tensor *fl = uj_tensor_flip(uj_tensor_shrink(uj_tensor_pad(a, (int64_t[]){1, 1, 0, 2, 3, 0}, 3), (int64_t[]){1, 5, 0, 8, 2, 11}, 3),
                                (int[]){0, 2}, 2);
  CHECK(!has_divmod(s, fl), "pad, shrink, flip: no division");
  uj_tensor *img = uj_tensor_rand(s, (int64_t[]){1, 2, 8, 8}, 4, 23), *w = uj_tensor_rand(s, (int64_t[]){4, 2, 3, 3}, 4, 24);
  CHECK(!has_divmod(s, uj_tensor_conv2d(img, w, NULL, NULL, (int64_t[]){1, 1}, NULL, 1)), "conv2d: no division");
  CHECK(!has_divmod(s, uj_tensor_matmul(rnd(s, 8, 16, 25), rnd(s, 16, 4, 26))), "matmul: no division");
  /* attention's heads put side by side, then a matmul: copied once into rows, the GEMM's loads plain */
  uj_tensor *heads = uj_tensor_permute(uj_tensor_rand(s, (int64_t[]){2, 4, 8, 16}, 4, 27), (int[]){0, 2, 1, 3}, 4);
  uj_tensor *mm = uj_tensor_matmul(uj_tensor_reshape(heads, (int64_t[]){2, 8, 64}, 3), rnd(s, 64, 32, 28));
  text = uj_tensor_schedule_text(mm, "uops");
  const char *gemm = text ? strstr(text, "kernel 1 R_") : NULL;
  CHECK(text && strstr(text, "kernel 0 E_") && gemm && !strstr(gemm, "IDIV") && !strstr(gemm, "MOD"),
        "merged heads: a copy, then a GEMM without division: %s", text ? text : "");
  free(text);
}

static float *host(uj_tensor *t) {
  size_t n = (size_t)uj_tensor_numel(t);
  float *out = malloc(n * sizeof *out + 1);
  if (out && uj_tensor_to_host(t, out, n * sizeof *out) != UJ_OK) free(out), out = NULL;
  return out;
}

/* s1 = sum(x), s2 = sum(x - s1), s3 = sum(x * s2) (each broadcast), out =
 * x + s3: s1 is dead once s2 is computed, so s3 takes its memory. */
static void test_memory_plan(uj_session *s) {
  enum { R = 5, C = 7 };
  uj_tensor *x = rnd(s, R, C, 31);
  uj_tensor *s1 = red(UJ_RED_SUM, x, 1), *s2 = red(UJ_RED_SUM, bin(UJ_BIN_SUB, x, s1), 1);
  uj_tensor *s3 = red(UJ_RED_SUM, bin(UJ_BIN_MUL, x, s2), 1), *out = bin(UJ_BIN_ADD, x, s3);
  int64_t next = 1000;
  const UOp *root = out->node;
  Schedule *sch = schedule_make(s->ctx, &root, 1, NULL, NULL, NULL, &next, &cpu, NULL);
  CHECK(sch && sch->nitems == 4, "four kernels: %s", sch ? "" : uj_session_error(s));
  if (sch && sch->nitems == 4) {
    CHECK(sch->nslabs == 2, "three temps in two slabs: %zu", sch->nslabs);
    CHECK(sch->slab_of_item[2] == sch->slab_of_item[0] && sch->slab_of_item[1] != sch->slab_of_item[0], "s3 reuses s1's slab");
    CHECK(sch->slab_of_item[3] == -1, "the root has memory of its own");
    const ScheduleItem *it = &sch->items[2];
    bool after_reader = false;
    for (size_t k = 0; k < it->ndeps; k++) after_reader |= it->deps[k] == 1;
    CHECK(after_reader, "s3 runs after the last reader of the memory it reuses");
    CHECK(sch->items[0].level == 0 && sch->items[1].level == 1 && sch->items[2].level == 2 && sch->items[3].level == 3, "levels");
    CHECK(sch->slab_bytes[0] == R * sizeof(float), "a slab holds one column: %zu", sch->slab_bytes[0]);
  }
  schedule_free(sch);
  float *xs = host(x), *got = host(out);
  CHECK(xs && got, "%s", uj_session_error(s));
  for (int r = 0; xs && got && r < R; r++) {
    double v1 = 0, v2 = 0, v3 = 0;
    for (int c = 0; c < C; c++) v1 += xs[r * C + c];
    for (int c = 0; c < C; c++) v2 += xs[r * C + c] - (float)v1;
    for (int c = 0; c < C; c++) v3 += xs[r * C + c] * (float)v2;
    for (int c = 0; c < C; c++)
      CHECK(fabs(got[r * C + c] - (xs[r * C + c] + v3)) <= 1e-4 * (1 + fabs(v3)), "out[%d][%d] = %g, want %g", r, c, got[r * C + c],
            xs[r * C + c] + v3);
  }
  free(xs), free(got);
}

/* Two roots in one schedule: their kernels are independent (level 0 and
 * 1 each), and both come out right. */
static void test_independent(uj_session *s) {
  uj_tensor *x = rnd(s, 4, 9, 41), *y = rnd(s, 6, 3, 42);
  uj_tensor *rx = bin(UJ_BIN_SUB, x, red(UJ_RED_MAX, x, 0)), *ry = bin(UJ_BIN_SUB, y, red(UJ_RED_MAX, y, 0)); /* column maxima: their own kernels */
  const UOp *roots[2] = {rx->node, ry->node};
  int64_t next = 2000;
  Schedule *sch = schedule_make(s->ctx, roots, 2, NULL, NULL, NULL, &next, &cpu, NULL);
  CHECK(sch && sch->nitems == 4, "two kernels per root");
  unsigned at_level[2] = {0, 0};
  for (size_t j = 0; sch && j < sch->nitems; j++)
    if (sch->items[j].level < 2) at_level[sch->items[j].level]++;
  CHECK(at_level[0] == 2 && at_level[1] == 2, "two independent kernels at each level: %u %u", at_level[0], at_level[1]);
  schedule_free(sch);
  uj_tensor *both[2] = {rx, ry};
  CHECK(uj_tensor_realize(both, 2) == UJ_OK, "%s", uj_session_error(s));
  float *xs = host(x), *gx = host(rx), *ys = host(y), *gy = host(ry);
  for (int c = 0; xs && gx && c < 9; c++) {
    float m = -INFINITY;
    for (int r = 0; r < 4; r++) m = fmaxf(m, xs[r * 9 + c]);
    for (int r = 0; r < 4; r++) CHECK(gx[r * 9 + c] == xs[r * 9 + c] - m, "rx[%d][%d]", r, c);
  }
  for (int c = 0; ys && gy && c < 3; c++) {
    float m = -INFINITY;
    for (int r = 0; r < 6; r++) m = fmaxf(m, ys[r * 3 + c]);
    for (int r = 0; r < 6; r++) CHECK(gy[r * 3 + c] == ys[r * 3 + c] - m, "ry[%d][%d]", r, c);
  }
  free(xs), free(gx), free(ys), free(gy);
}

/* The kernels of roots[0..n): whether each kernel of roots[0..m) (m < n)
 * is among them. A root added to a schedule (the global gradient norm an
 * optimizer clips by, read from the gradients) must not change the
 * kernels of the others: an online-fusion try of the norm's kernel once
 * cleared the cuts between the logits' max and the gradients (dh of each
 * layer), which then fell into the gradients' kernels, unchecked: the
 * first layer's weight gradient computed the whole backward pass again
 * for each of its elements (a clipped MLP's step 500 ms, not 0.01). */
static bool kernels_kept(uj_session *s, const UOp *const *roots, size_t m, size_t n) {
  int64_t next = 3000;
  Schedule *few = schedule_make(s->ctx, roots, m, NULL, NULL, NULL, &next, &cpu, NULL);
  Schedule *all = few ? schedule_make(s->ctx, roots, n, NULL, NULL, NULL, &next, &cpu, NULL) : NULL;
  bool kept = all != NULL;
  for (size_t i = 0; kept && i < few->nitems; i++) {
    bool found = false;
    for (size_t j = 0; j < all->nitems && !found; j++) found = all->items[j].kernel == few->items[i].kernel;
    kept = found;
    CHECK(found, "kernel %s of the gradients alone is not in their schedule with the norm", few->items[i].name);
  }
  schedule_free(few), schedule_free(all);
  return kept;
}

static void test_norm_keeps_gradients(uj_session *s) {
  int32_t tg[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 6};
  uj_tensor *x = rnd(s, 16, 64, 51), *w[3] = {rnd(s, 64, 32, 52), rnd(s, 32, 32, 53), rnd(s, 32, 10, 54)};
  uj_tensor *t = uj_tensor_from_data(s, UJ_INT32, (int64_t[]){16}, 1, tg), *tmp[16], *g[4] = {NULL};
  size_t nt = 0;
  uj_tensor *h = x;
  for (int l = 0; l < 3; l++) {
    h = tmp[nt++] = uj_tensor_matmul(h, w[l]);
    if (l < 2) h = tmp[nt++] = uj_tensor_unary(UJ_UN_RELU, h);
  }
  uj_tensor *loss = tmp[nt++] = uj_tensor_cross_entropy(h, t, -100);
  bool ok = uj_tensor_gradients(loss, NULL, w, 3, g) == UJ_OK;
  CHECK(ok, "gradients: %s", uj_session_error(s));
  uj_tensor *sum = NULL;
  for (int l = 0; ok && l < 3; l++) {
    uj_tensor *sq = tmp[nt++] = uj_tensor_binary(UJ_BIN_MUL, g[l], g[l]);
    uj_tensor *part = tmp[nt++] = uj_tensor_reduce(UJ_RED_SUM, sq, NULL, 0, false);
    sum = sum ? (tmp[nt++] = uj_tensor_binary(UJ_BIN_ADD, sum, part)) : part;
  }
  g[3] = sum ? uj_tensor_unary(UJ_UN_SQRT, sum) : NULL;
  const UOp *roots[4];
  for (int i = 0; ok && i < 4; i++) roots[i] = g[i]->node;
  CHECK(!ok || kernels_kept(s, roots, 3, 4), "a clipped MLP's gradients: the norm changed their kernels");
  for (int i = 0; i < 4; i++) uj_tensor_free(g[i]);
  for (size_t i = 0; i < nt; i++) uj_tensor_free(tmp[i]);
  for (int l = 0; l < 3; l++) uj_tensor_free(w[l]);
  uj_tensor_free(x), uj_tensor_free(t);
}

/* Graphs equal but for their buffers make one kernel (PARAM slots and
 * RANGE numbers follow the graph's shape): a chain of matmuls by the
 * same b is one GEMM, compiled once. */
static void test_equal_kernels(uj_session *s) {
  static const int64_t sizes[] = {64, 256, 2048};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    int64_t n = sizes[k];
    uj_tensor *a = rnd(s, n, n, 61), *b = rnd(s, n, n, 62);
    uj_tensor *ab = uj_tensor_matmul(a, b), *abb = uj_tensor_matmul(ab, b), *abbb = uj_tensor_matmul(abb, b);
    const UOp *root = abbb->node;
    int64_t next = 4000;
    Schedule *sch = schedule_make(s->ctx, &root, 1, NULL, NULL, NULL, &next, &cpu, NULL);
    CHECK(sch && sch->nitems == 3, "three matmuls: three kernels");
    /* a @ b reads (a, b), (a @ b) @ b reads (a @ b, b): slot 1 the left operand in both (by id, b came first in the second) */
    CHECK(sch && sch->items[1].kernel == sch->items[0].kernel, "%lld: (a @ b) @ b is a @ b's kernel", (long long)n);
    /* the root's tensor is (n, n), the others' cut at the (n, n, 1) sum: equal loops, numbered alike; at
     * 2048 the tiles stage a panel, and the MUL's operands came in the other order from the (n, n, 1)
     * view until the optimizer put commutative operands in canonical order (symbolic_canonical_order) */
    CHECK(n < 256 || (sch && sch->items[2].kernel == sch->items[0].kernel), "%lld: the root's kernel is a @ b's", (long long)n);
    schedule_free(sch);
    uj_tensor_free(abbb), uj_tensor_free(abb), uj_tensor_free(ab), uj_tensor_free(a), uj_tensor_free(b);
  }
}

/* Freed tensors give their memory back at the next realize, unless a
 * live graph still reads it. */
static void test_memory_released(void) {
  uj_session *s = uj_session_new(NULL, NULL);
  uj_tensor *a = rnd(s, 100, 100, 51), *b = uj_tensor_binary_scalar(UJ_BIN_ADD, a, 1, false);
  uj_tensor *c = uj_tensor_binary_scalar(UJ_BIN_MUL, a, 3, false);
  CHECK(uj_tensor_realize(&b, 1) == UJ_OK, "%s", uj_session_error(s));
  size_t live = 0;
  for (size_t i = 0; i < s->buffers.cap; i++) live += s->buffers.by_id[i] != NULL;
  CHECK(live == 2, "a and b: %zu buffers", live);
  uj_tensor_free(a); /* c still reads a's buffer */
  uj_tensor_free(b);
  CHECK(uj_tensor_realize(&c, 1) == UJ_OK, "%s", uj_session_error(s));
  live = 0;
  for (size_t i = 0; i < s->buffers.cap; i++) live += s->buffers.by_id[i] != NULL;
  CHECK(live == 2, "a's buffer (read by c's graph when it was realized) and c's: %zu", live);
  uj_tensor *d = uj_tensor_binary_scalar(UJ_BIN_ADD, c, 1, false);
  uj_tensor_free(c);
  CHECK(uj_tensor_realize(&d, 1) == UJ_OK, "%s", uj_session_error(s));
  live = 0;
  for (size_t i = 0; i < s->buffers.cap; i++) live += s->buffers.by_id[i] != NULL;
  CHECK(live == 2, "c's (d reads it) and d's: %zu", live);
  uj_session_free(s);
}

/* The number of kernels an assignment of value into x's buffer runs. */
static size_t assign_kernels(uj_session *s, uj_tensor *x, uj_tensor *value) {
  const UOp *b = schedule_view_buffer(x->node), *root = value->node;
  int64_t next = 3000;
  Schedule *sch = schedule_make(s->ctx, &root, 1, &b, NULL, NULL, &next, &cpu, NULL);
  size_t n = sch ? sch->nitems : 99;
  bool into = sch && sch->nitems && sch->items[sch->nitems - 1].output == b;
  for (size_t j = 0; sch && j < sch->nitems; j++) /* in place: no kernel reads the buffer it writes through a second PARAM */
    for (size_t k = 0; k < sch->items[j].ninputs; k++) into &= sch->items[j].inputs[k] != sch->items[j].output;
  schedule_free(sch);
  return into ? n : 98;
}

/* A buffer read and written: in place when each element is read where it
 * is written, else through a new buffer and a copy. */
static void test_assign(void) {
  uj_session *s = uj_session_new(NULL, NULL);
  float a[6] = {1, 2, 3, 4, 5, 6}, got[6];
  uj_tensor *x = uj_tensor_from_data(s, UJ_FLOAT32, (int64_t[]){2, 3}, 2, a);
  uj_tensor *g = uj_tensor_full(s, UJ_FLOAT32, (int64_t[]){2, 3}, 2, 0.5);
  uj_tensor *sgd = bin(UJ_BIN_SUB, x, uj_tensor_binary_scalar(UJ_BIN_MUL, g, 2, false));
  CHECK(assign_kernels(s, x, sgd) == 1, "x - 2g: one kernel, in place");
  uj_tensor *view = uj_tensor_reshape(x, (int64_t[]){3, 2}, 2);
  uj_tensor *twice = uj_tensor_binary_scalar(UJ_BIN_MUL, x, 2, false);
  CHECK(uj_tensor_realize(&twice, 1) == UJ_OK, "%s", uj_session_error(s)); /* x*2 of the old x, remembered */
  CHECK(uj_tensor_assign(x, sgd) == UJ_OK, "%s", uj_session_error(s));
  CHECK(uj_tensor_to_host(uj_tensor_binary_scalar(UJ_BIN_MUL, x, 2, false), got, sizeof got) == UJ_OK && got[0] == 0 && got[5] == 10,
        "x*2 built again after the assignment reads the new x: %g %g", got[0], got[5]);
  CHECK(uj_tensor_to_host(twice, got, sizeof got) == UJ_OK && got[0] == 2, "a tensor realized before keeps its values");
  CHECK(uj_tensor_to_host(x, got, sizeof got) == UJ_OK, "%s", uj_session_error(s));
  for (int i = 0; i < 6; i++) CHECK(got[i] == a[i] - 1, "x[%d] = %g", i, got[i]);
  CHECK(uj_tensor_to_host(view, got, sizeof got) == UJ_OK && got[5] == 5, "a view of x sees the new values");
  uj_tensor *sq = uj_tensor_from_data(s, UJ_FLOAT32, (int64_t[]){2, 2}, 2, a);
  uj_tensor *t = uj_tensor_transpose(sq, 0, 1);
  CHECK(assign_kernels(s, sq, t) == 2, "x = x.T: computed aside, then copied");
  CHECK(uj_tensor_assign(sq, t) == UJ_OK, "%s", uj_session_error(s));
  CHECK(uj_tensor_to_host(sq, got, 4 * sizeof *got) == UJ_OK && got[0] == 1 && got[1] == 3 && got[2] == 2 && got[3] == 4,
        "transposed in place: %g %g %g %g", got[0], got[1], got[2], got[3]);
  uj_tensor *rows = red(UJ_RED_SUM, sq, 1); /* (2, 1) broadcast to (2, 2) */
  CHECK(uj_tensor_assign(sq, rows) == UJ_OK, "%s", uj_session_error(s));
  CHECK(uj_tensor_to_host(sq, got, 4 * sizeof *got) == UJ_OK && got[0] == 4 && got[1] == 4 && got[2] == 6 && got[3] == 6,
        "row sums broadcast: %g %g %g %g", got[0], got[1], got[2], got[3]);
  uj_tensor *ints = uj_tensor_arange(s, UJ_INT32, 0, 4, 1);
  CHECK(uj_tensor_assign(sq, uj_tensor_reshape(ints, (int64_t[]){2, 2}, 2)) == UJ_OK, "cast on assignment");
  CHECK(uj_tensor_to_host(sq, got, 4 * sizeof *got) == UJ_OK && got[3] == 3, "int to float: %g", got[3]);
  CHECK(uj_tensor_assign(sq, x) != UJ_OK && strstr(uj_session_error(s), "assign: shapes (2, 3) and (2, 2)"), "%s",
        uj_session_error(s));
  /* equal values realize into one buffer; assigning to one tensor must not change the other */
  uj_tensor *z[2] = {uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){4}, 1), uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){4}, 1)};
  CHECK(uj_tensor_realize(z, 2) == UJ_OK && z[0]->node == z[1]->node, "two zeros: one view");
  CHECK(uj_tensor_assign(z[0], uj_tensor_full(s, UJ_FLOAT32, (int64_t[]){4}, 1, 1.5)) == UJ_OK, "%s", uj_session_error(s));
  float one[4], other[4];
  CHECK(uj_tensor_to_host(z[0], one, sizeof one) == UJ_OK && one[0] == 1.5f && one[3] == 1.5f, "the assigned one: %g", one[0]);
  CHECK(uj_tensor_to_host(z[1], other, sizeof other) == UJ_OK && other[0] == 0 && other[3] == 0, "the other keeps its zeros: %g",
        other[0]);
  CHECK(uj_tensor_to_host(uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){4}, 1), other, sizeof other) == UJ_OK && other[2] == 0,
        "zeros made again: %g", other[2]);
  CHECK(uj_tensor_assign(z[0], uj_tensor_full(s, UJ_FLOAT32, (int64_t[]){4}, 1, 2.5)) == UJ_OK &&
            assign_kernels(s, z[0], uj_tensor_binary_scalar(UJ_BIN_ADD, z[0], 1, false)) == 1,
        "then in place in its own buffer: %s", uj_session_error(s));
  uj_session_free(s);
}

/* Kernels scheduling root makes for a target (its description d). */
static size_t kernels_for(uj_session *s, const uj_tensor *t, const TargetDesc *d, bool *fused_product) {
  ScheduleTarget target = {"CPU", 64, {0}};
  target.opt.desc = d;
  int64_t next = 5000;
  const UOp *root = t->node;
  Schedule *sch = schedule_make(s->ctx, &root, 1, NULL, NULL, NULL, &next, &target, NULL);
  CHECK(sch != NULL, "schedule for %s: %s", d->name, uj_session_error(s));
  size_t n = sch ? sch->nitems : 0;
  schedule_free(sch);
  if (fused_product) { /* the session's own schedule (the host's CPU row) */
    char *text = uj_tensor_schedule_text((uj_tensor *)t, "uops");
    *fused_product = text && strstr(text, "MULACC");
    free(text);
  }
  return n;
}

/* Long float sums in two stages, as each target's description says
 * (TargetDesc.sum_chunks; schedule_split_sums): the CPU's chunks are a
 * multiple of 16 (its lanes), a GPU's any length; a target that splits
 * none keeps one kernel; integer sums and short ones stay whole; a sum of
 * products keeps its fused multiply-adds. */
static void test_split_sums(uj_session *s) {
  const TargetDesc *avx2 = target_desc_cpu(32), *gpu = target_desc_find("sm_90");
  TargetDesc whole = *avx2;
  whole.sum_chunks = 0;
  uj_tensor *x = uj_tensor_rand(s, (int64_t[]){2, 1 << 16}, 2, 9), *odd = uj_tensor_rand(s, (int64_t[]){1024 * 65}, 1, 10);
  uj_tensor *rows = uj_tensor_reduce(UJ_RED_SUM, x, (int[]){1}, 1, false);
  uj_tensor *all = uj_tensor_reduce(UJ_RED_SUM, odd, NULL, 0, false);
  uj_tensor *cols = uj_tensor_reduce(UJ_RED_SUM, x, (int[]){0}, 1, false);
  uj_tensor *ints = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_cast(x, UJ_INT32), (int[]){1}, 1, false);
  uj_tensor *dot = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_binary(UJ_BIN_MUL, x, x), (int[]){1}, 1, false);
  CHECK(kernels_for(s, rows, avx2, NULL) == 2, "rows of 2^16 on the CPU: chunks, then partials");
  CHECK(kernels_for(s, rows, &whole, NULL) == 1, "rows of 2^16, a target that splits none: one kernel");
  CHECK(kernels_for(s, rows, gpu, NULL) == 2, "rows of 2^16 on sm_90: two stages");
  CHECK(kernels_for(s, all, avx2, NULL) == 1, "1024 * 65 on the CPU: not a multiple of 1024 * 16, whole");
  CHECK(kernels_for(s, all, gpu, NULL) == 2, "1024 * 65 on sm_90: chunks of 65");
  CHECK(kernels_for(s, cols, avx2, NULL) == 1, "a sum over a leading axis: whole");
  CHECK(kernels_for(s, cols, gpu, NULL) == 1, "2 rows summed on sm_90: too short to cut");
  uj_tensor *v = uj_tensor_rand(s, (int64_t[]){1, 4096}, 2, 11), *w = uj_tensor_rand(s, (int64_t[]){4096, 4096}, 2, 12);
  uj_tensor *gemv = uj_tensor_matmul(v, w), *tall = uj_tensor_rand(s, (int64_t[]){4096, 64}, 2, 13);
  uj_tensor *tall_cols = uj_tensor_reduce(UJ_RED_SUM, tall, (int[]){0}, 1, false);
  CHECK(kernels_for(s, gemv, gpu, NULL) == 2, "a GEMV on sm_90: k in chunks, then the partials");
  CHECK(kernels_for(s, gemv, avx2, NULL) == 1, "a GEMV on the CPU: whole");
  CHECK(kernels_for(s, tall_cols, gpu, NULL) == 2, "column sums of 4096 x 64 on sm_90: rows in chunks");
  CHECK(kernels_for(s, ints, avx2, NULL) == 1, "an int32 sum of 2^16: whole");
  bool fused = false;
  CHECK(kernels_for(s, dot, avx2, &fused) == 2 && fused, "sum(x * x) of 2^16: two stages, still a MULACC");
  double want = 0, got;
  float *xs = malloc(sizeof(float) << 17);
  CHECK(xs && uj_tensor_to_host(x, xs, sizeof(float) << 17) == UJ_OK, "read x");
  for (int i = 0; xs && i < 1 << 16; i++) want += xs[i];
  float r[2];
  CHECK(uj_tensor_to_host(rows, r, sizeof r) == UJ_OK, "rows: %s", uj_session_error(s));
  got = r[0];
  CHECK(fabs(got - want) <= 1e-6 * (1 << 16), "the first row's sum: %g, want %g", got, want);
  free(xs);
}

int main(void) {
  cpu.opt.desc = target_desc_cpu(32);
  uj_session *s = uj_session_new(NULL, NULL);
  CHECK(s != NULL, "session");
  if (!s) return check_report("test_schedule");
  test_kernel_counts(s);
  test_realized_reused(s);
  test_simple_indices(s);
  test_memory_plan(s);
  test_independent(s);
  test_split_sums(s);
  test_norm_keeps_gradients(s);
  test_equal_kernels(s);
  uj_session_free(s);
  test_memory_released();
  test_assign();
  return check_report("test_schedule");
}
