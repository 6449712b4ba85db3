/* test_dropout.c — dropout and the session's generator (lib/tensor/random.c,
 * docs/autodiff.md "Dropout").
 *
 * The oracle is Philox-4x32-10 written again here from the paper (Salmon
 * et al., SC'11), itself checked against Random123's known-answer vectors:
 * every mask the library draws is compared, element by element, with the
 * one this file computes for (seed, generation, stream, index). Then: the
 * generator in the kernels against the same vectors; the kept fraction of
 * a million elements within 6 sigma of 1 - p; kept values exactly x times
 * the scale; the backward's mask the forward's; the mask fused, never
 * stored; two calls, two seeds, two generations give different masks,
 * one seed the same; a loop that changes the seed every step, and one
 * whose optimizer moves the generator, compile nothing after their first
 * step; p = 0, p = 1, and the errors. */
#include "tensor_util.h"

static uj_session *S;

/* ---- the oracle ---- */

static void philox_ref(uint32_t c[4], const uint32_t key[2]) {
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) k0 += 0x9E3779B9u, k1 += 0xBB67AE85u;
    uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    uint32_t next[4] = {(uint32_t)(p1 >> 32) ^ c[1] ^ k0, (uint32_t)p1, (uint32_t)(p0 >> 32) ^ c[3] ^ k1, (uint32_t)p0};
    memcpy(c, next, sizeof next);
  }
}

/* Random123's kat_vectors, "philox4x32 10": counter, key, result. */
static const uint32_t kat[3][10] = {
  {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
  {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
  {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1},
};

/* Whether element i is dropped: the first word of Philox((i lo, i hi,
 * stream, generation), seed) below p 2^32. */
static bool dropped_ref(uint64_t seed, uint32_t generation, uint32_t stream, uint64_t i, double p) {
  uint32_t c[4] = {(uint32_t)i, (uint32_t)(i >> 32), stream, generation}, key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  philox_ref(c, key);
  double t = nearbyint(ldexp(p, 32));
  return c[0] < (t < 0x1p32 ? (uint32_t)t : 0xFFFFFFFFu);
}

static const Tol NO_EVALUATOR = {-1, 0, false}; /* values(): the JIT's alone (a million elements) */

/* y (float32, of n elements) is dropout(x, p) as drawn by (seed,
 * generation, stream): bit for bit, 0 or x * (float)(1 / (1 - p)); checked
 * against the evaluator too when small. Returns the number kept. */
static int64_t expect_mask(uj_tensor *y, const float *x, int64_t n, uint64_t seed, uint32_t generation, uint32_t stream, double p,
                           const char *what) {
  double *got = values(S, y, n <= 4096 ? EXACT : NO_EVALUATOR, what);
  if (!got) return -1;
  float scale = (float)(1 / (1 - p));
  int64_t kept = 0, bad = 0;
  for (int64_t i = 0; i < n; i++) {
    bool drop = dropped_ref(seed, generation, stream, (uint64_t)i, p);
    float want = drop ? 0.0f : x[i] * scale;
    kept += !drop;
    if (!(got[i] == want) && bad++ < 3) CHECK(false, "%s: element %lld is %.9g, want %.9g", what, (long long)i, got[i], want);
  }
  CHECK(bad == 0, "%s: %lld of %lld elements wrong", what, (long long)bad, (long long)n);
  free(got);
  return kept;
}

static float *uniform_floats(Rng *r, int64_t n, double lo, double hi) {
  float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  for (int64_t i = 0; i < n; i++) v[i] = (float)rng_uniform(r, lo, hi);
  return v;
}

static uj_tensor *sum(uj_tensor *t) { return uj_tensor_reduce(UJ_RED_SUM, t, NULL, 0, false); }

/* ---- the generator ---- */

static void test_known_answers(void) {
  const UOp *c[4], *k[2], *out[4];
  uj_tensor *words[6];
  for (int w = 0; w < 6; w++) {
    uint32_t col[3] = {kat[0][w], kat[1][w], kat[2][w]};
    words[w] = uj_tensor_from_data(S, UJ_UINT32, (int64_t[]){3}, 1, col);
    (w < 4 ? c : k)[w < 4 ? w : w - 4] = uj_tensor_uop(words[w]);
  }
  CHECK(node_philox(S, c, k, out), "philox: %s", uj_session_error(S));
  for (int w = 0; w < 4; w++) {
    char what[64];
    snprintf(what, sizeof what, "philox4x32-10, word %d", w);
    uj_tensor *t = tensor_wrap(S, "test", out[w]);
    expect(S, t, (int64_t[]){3}, 1, VALS(kat[0][6 + w], kat[1][6 + w], kat[2][6 + w]), EXACT, what);
    uj_tensor_free(t);
  }
  for (int i = 0; i < 3; i++) { /* and the oracle */
    uint32_t ctr[4] = {kat[i][0], kat[i][1], kat[i][2], kat[i][3]};
    philox_ref(ctr, &kat[i][4]);
    CHECK(!memcmp(ctr, &kat[i][6], sizeof ctr), "the oracle, vector %d", i);
  }
  for (int w = 0; w < 6; w++) uj_tensor_free(words[w]);
}

/* Masks of several shapes and dtypes against the oracle, in the kernels
 * and in the evaluator; the flat index runs in C order whatever the shape. */
static void test_matches_oracle(void) {
  Rng r = {11};
  static const int64_t shapes[][4] = {{37, 53}, {2, 1, 3, 5}, {7}, {1}};
  static const unsigned nds[] = {2, 4, 1, 0};
  CHECK(uj_session_rng_seed(S, 0x123456789abcdefull) == UJ_OK, "seed");
  for (int k = 0; k < 4; k++) {
    int64_t n = shape_numel(shapes[k], nds[k]);
    float *x = uniform_floats(&r, n, 0.5, 1.5); /* never 0: a zero is a dropped element */
    uj_tensor *xt = tf32(S, shapes[k], nds[k], x), *y = uj_tensor_dropout(xt, 0.375);
    char what[64];
    snprintf(what, sizeof what, "shape %d", k);
    expect_mask(y, x, n, 0x123456789abcdefull, 0, (uint32_t)k, 0.375, what);
    uj_tensor_free(xt), uj_tensor_free(y), free(x);
  }
  /* float64: the scale in float64 */
  double x64[6] = {1, -2, 3, -4, 5, -6}, want[6];
  uj_tensor *xt = uj_tensor_from_data(S, UJ_FLOAT64, (int64_t[]){6}, 1, x64), *y = uj_tensor_dropout(xt, 0.3);
  for (int i = 0; i < 6; i++) want[i] = dropped_ref(0x123456789abcdefull, 0, 4, (uint64_t)i, 0.3) ? 0 : x64[i] * (1 / (1 - 0.3));
  expect(S, y, (int64_t[]){6}, 1, want, EXACT, "float64");
  uj_tensor_free(xt), uj_tensor_free(y);
}

/* A million elements: the kept fraction within 6 sigma of 1 - p (the
 * binomial's sigma sqrt(n p (1 - p))), pairs of neighbours both dropped
 * within 6 sigma of p^2 (overlapping pairs: the variance with the
 * covariance of each pair with the next), and two calls' masks dropping
 * the same element within 6 sigma of p^2. */
static void test_fraction(void) {
  enum { ROWS = 1024, COLS = 1024, N = ROWS * COLS };
  const double ps[] = {0.1, 0.5, 0.9};
  float *ones = malloc(N * sizeof *ones);
  for (int i = 0; i < N; i++) ones[i] = 1;
  uj_tensor *x = tf32(S, (int64_t[]){ROWS, COLS}, 2, ones);
  CHECK(uj_session_rng_seed(S, 2024) == UJ_OK, "seed");
  for (int k = 0; k < 3; k++) {
    double p = ps[k], q = 1 - p;
    uj_tensor *a = uj_tensor_dropout(x, p), *b = uj_tensor_dropout(x, p);
    double *va = values(S, a, NO_EVALUATOR, "fraction"), *vb = values(S, b, NO_EVALUATOR, "fraction");
    if (!va || !vb) break;
    int64_t kept = 0, pairs = 0, both = 0, bad = 0;
    for (int i = 0; i < N; i++) {
      kept += va[i] != 0;
      bad += va[i] != 0 && va[i] != (float)(1 / q);
      if (i + 1 < N) pairs += va[i] == 0 && va[i + 1] == 0;
      both += va[i] == 0 && vb[i] == 0;
    }
    double sd_kept = sqrt(N * p * q), p2 = p * p;
    double sd_pairs = sqrt((N - 1) * p2 * (1 - p2) + 2.0 * (N - 2) * (p2 * p - p2 * p2)), sd_both = sqrt(N * p2 * (1 - p2));
    CHECK(fabs(kept - N * q) <= 6 * sd_kept, "p = %g: %lld of %d kept, want %.0f +- %.0f (6 sigma)", p, (long long)kept, N, N * q, 6 * sd_kept);
    CHECK(fabs(pairs - (N - 1) * p2) <= 6 * sd_pairs, "p = %g: %lld neighbours both dropped, want %.0f +- %.0f", p, (long long)pairs,
          (N - 1) * p2, 6 * sd_pairs);
    CHECK(fabs(both - N * p2) <= 6 * sd_both, "p = %g: %lld dropped by both calls, want %.0f +- %.0f", p, (long long)both, N * p2, 6 * sd_both);
    CHECK(bad == 0, "p = %g: %lld kept values are not 1 / (1 - p)", p, (long long)bad);
    free(va), free(vb);
    uj_tensor_free(a), uj_tensor_free(b);
  }
  /* the exact mask of the last (the oracle on a million elements: the counter's high word and every row) */
  uj_tensor *y = uj_tensor_dropout(x, 0.25);
  expect_mask(y, ones, N, 2024, 0, 6, 0.25, "a million elements");
  uj_tensor_free(y), uj_tensor_free(x), free(ones);
}

/* ---- gradients ---- */

/* d sum(dropout(x) * r) / dx is mask * r / (1 - p): exactly r * scale where
 * the forward kept x (its output nonzero), 0 where it dropped it. */
static void test_backward(void) {
  enum { R = 48, C = 40, N = R * C };
  Rng rng = {5};
  const double p = 0.4;
  float *x = uniform_floats(&rng, N, 0.5, 1.5), *r = uniform_floats(&rng, N, -1, 1);
  uj_tensor *xt = tf32(S, (int64_t[]){R, C}, 2, x), *rt = tf32(S, (int64_t[]){R, C}, 2, r);
  CHECK(uj_session_rng_seed(S, 77) == UJ_OK, "seed");
  uj_tensor *y = uj_tensor_dropout(xt, p), *loss = sum(uj_tensor_binary(UJ_BIN_MUL, y, rt)), *g = NULL;
  CHECK(uj_tensor_gradients(loss, NULL, &xt, 1, &g) == UJ_OK, "gradients: %s", uj_session_error(S));
  CHECK(uj_tensor_realize((uj_tensor *[]){y, g}, 2) == UJ_OK, "forward and backward in one schedule: %s", uj_session_error(S));
  double *fwd = values(S, y, EXACT, "forward"), *back = values(S, g, EXACT, "backward");
  expect_mask(y, x, N, 77, 0, 0, p, "forward");
  float scale = (float)(1 / (1 - p));
  int64_t bad = 0, kept = 0;
  for (int i = 0; fwd && back && i < N; i++) {
    float want = fwd[i] != 0 ? r[i] * scale : 0.0f;
    kept += fwd[i] != 0;
    if (!(back[i] == want) && bad++ < 3) CHECK(false, "element %d: gradient %.9g, want %.9g (forward %g)", i, back[i], want, fwd[i]);
  }
  CHECK(fwd && back && bad == 0 && kept > 0 && kept < N, "the backward's mask is the forward's: %lld wrong, %lld kept", (long long)bad,
        (long long)kept);
  free(fwd), free(back), free(x), free(r);
  uj_tensor_free(y), uj_tensor_free(loss), uj_tensor_free(g), uj_tensor_free(xt), uj_tensor_free(rt);
}

/* The mask is computed in the kernels that use it, never written out:
 * the loss and its gradient are the two kernels they are without dropout,
 * and a layer's dropout adds no kernel. */
static void test_fused(void) {
  Rng rng = {9};
  float *xv = uniform_floats(&rng, 64 * 32, -1, 1), *wv = uniform_floats(&rng, 32 * 16, -1, 1);
  uj_tensor *x = tf32(S, (int64_t[]){64, 32}, 2, xv), *w = tf32(S, (int64_t[]){32, 16}, 2, wv);
  uj_tensor *h = uj_tensor_matmul(x, w), *plain = uj_tensor_unary(UJ_UN_RELU, h);
  uj_tensor *dropped = uj_tensor_unary(UJ_UN_RELU, uj_tensor_dropout(h, 0.5));
  CHECK(uj_tensor_kernel_count(plain) == 1 && uj_tensor_kernel_count(dropped) == 1, "relu(dropout(x @ w)): %zu kernels, without dropout %zu",
        uj_tensor_kernel_count(dropped), uj_tensor_kernel_count(plain));
  uj_tensor *loss = sum(uj_tensor_binary(UJ_BIN_MUL, dropped, dropped)), *g = NULL;
  CHECK(uj_tensor_gradients(loss, NULL, &w, 1, &g) == UJ_OK, "gradients: %s", uj_session_error(S));
  const UOp *roots[2] = {uj_tensor_uop(loss), uj_tensor_uop(g)};
  int64_t next = S->next_buffer_id;
  Schedule *sch = schedule_make(S->ctx, roots, 2, NULL, NULL, NULL, &next, &S->target, NULL);
  CHECK(sch != NULL, "schedule: %s", uj_session_error(S));
  for (size_t j = 0; sch && j < sch->nitems; j++) {
    char b[32];
    CHECK(dt_is_float(dt_base(sch->items[j].output->dtype)), "kernel %s writes %s: a mask stored", sch->items[j].name,
          dtype_str(dt_base(sch->items[j].output->dtype), b, sizeof b));
  }
  size_t with = sch ? sch->nitems : 0;
  schedule_free(sch);
  /* the same graphs without dropout */
  uj_tensor *loss0 = sum(uj_tensor_binary(UJ_BIN_MUL, plain, plain)), *g0 = NULL;
  CHECK(uj_tensor_gradients(loss0, NULL, &w, 1, &g0) == UJ_OK, "gradients: %s", uj_session_error(S));
  const UOp *roots0[2] = {uj_tensor_uop(loss0), uj_tensor_uop(g0)};
  sch = schedule_make(S->ctx, roots0, 2, NULL, NULL, NULL, &next, &S->target, NULL);
  CHECK(sch && with == sch->nitems, "loss and grad: %zu kernels with dropout, %zu without", with, sch ? sch->nitems : 0);
  schedule_free(sch);
  /* eight axes (each an iota more in the mask's index): the mask still fits the budget of a value shared by kernels */
  int64_t shape8[8] = {2, 3, 2, 3, 2, 3, 2, 3};
  uj_tensor *x8 = uj_tensor_full(S, UJ_FLOAT32, shape8, 8, 1.5), *y8 = uj_tensor_dropout(x8, 0.5), *g8 = NULL;
  uj_tensor *loss8 = sum(uj_tensor_binary(UJ_BIN_MUL, y8, x8));
  CHECK(uj_tensor_gradients(loss8, NULL, &x8, 1, &g8) == UJ_OK, "gradients: %s", uj_session_error(S));
  const UOp *roots8[2] = {uj_tensor_uop(loss8), uj_tensor_uop(g8)};
  sch = schedule_make(S->ctx, roots8, 2, NULL, NULL, NULL, &next, &S->target, NULL);
  CHECK(sch != NULL, "schedule: %s", uj_session_error(S));
  for (size_t j = 0; sch && j < sch->nitems; j++)
    CHECK(dt_is_float(dt_base(sch->items[j].output->dtype)), "8 axes: kernel %s: a mask stored", sch->items[j].name);
  schedule_free(sch);
  for (uj_tensor **t = (uj_tensor *[]){x8, y8, g8, loss8, NULL}; *t; t++) uj_tensor_free(*t);
  free(xv), free(wv);
  for (uj_tensor **t = (uj_tensor *[]){x, w, h, plain, dropped, loss, g, loss0, g0, NULL}; *t; t++) uj_tensor_free(*t);
}

/* ---- seeds, streams, generations ---- */

static void test_streams(void) {
  enum { N = 512 };
  Rng rng = {3};
  float *x = uniform_floats(&rng, N, 0.5, 1.5);
  uj_tensor *xt = tf32(S, (int64_t[]){N}, 1, x);
  double *m[6] = {0};
  const char *names[6] = {"seed 1, call 0", "seed 1, call 1", "seed 1 again, call 0", "seed 2, call 0", "seed 2, generation 1", "seed 1, third time"};
  const uint64_t seeds[6] = {1, 1, 1, 2, 2, 1};
  const uint32_t gens[6] = {0, 0, 0, 0, 1, 0}, streams[6] = {0, 1, 0, 0, 0, 0};
  for (int k = 0; k < 6; k++) {
    if (k == 0 || k == 2 || k == 3 || k == 5) CHECK(uj_session_rng_seed(S, seeds[k]) == UJ_OK, "seed");
    if (k == 4) CHECK(uj_session_rng_next(S) == UJ_OK, "next");
    uj_tensor *y = uj_tensor_dropout(xt, 0.5);
    expect_mask(y, x, N, seeds[k], gens[k], streams[k], 0.5, names[k]);
    m[k] = values(S, y, EXACT, names[k]);
    uj_tensor_free(y);
  }
  /* the pairs that differ and those that agree, bit for bit */
  static const int differ[][2] = {{0, 1}, {0, 3}, {3, 4}}, same[][2] = {{0, 2}, {0, 5}};
  for (int k = 0; k < 3 && m[differ[k][0]] && m[differ[k][1]]; k++)
    CHECK(memcmp(m[differ[k][0]], m[differ[k][1]], N * sizeof(double)) != 0, "%s and %s differ", names[differ[k][0]], names[differ[k][1]]);
  for (int k = 0; k < 2 && m[same[k][0]] && m[same[k][1]]; k++)
    CHECK(memcmp(m[same[k][0]], m[same[k][1]], N * sizeof(double)) == 0, "%s and %s agree", names[same[k][0]], names[same[k][1]]);
  /* a tensor built before the seed moved is computed with the new state (its mask drawn when computed) */
  CHECK(uj_session_rng_seed(S, 1) == UJ_OK, "seed");
  uj_tensor *early = uj_tensor_dropout(xt, 0.5);
  CHECK(uj_session_rng_seed(S, 2) == UJ_OK, "seed");
  expect_mask(early, x, N, 2, 0, 0, 0.5, "drawn when computed");
  for (int k = 0; k < 6; k++) free(m[k]);
  uj_tensor_free(early), uj_tensor_free(xt), free(x);
}

/* A new seed every step, two dropouts a step: the same graph each step,
 * so nothing compiles after the first; each step's masks the oracle's. */
static void test_seed_compiles_nothing(void) {
  enum { N = 300, STEPS = 5 };
  Rng rng = {4};
  float *x = uniform_floats(&rng, N, 0.5, 1.5);
  uj_tensor *xt = tf32(S, (int64_t[]){N}, 1, x);
  size_t compiled = 0;
  for (int step = 1; step <= STEPS; step++) {
    uint64_t seed = 1000 + (uint64_t)step * 7919;
    CHECK(uj_session_rng_seed(S, seed) == UJ_OK, "seed");
    uj_tensor *a = uj_tensor_dropout(xt, 0.2), *b = uj_tensor_dropout(xt, 0.6);
    uj_tensor *y = uj_tensor_binary(UJ_BIN_ADD, uj_tensor_unary(UJ_UN_RELU, a), b);
    CHECK(uj_tensor_realize(&y, 1) == UJ_OK, "step %d: %s", step, uj_session_error(S));
    expect_mask(a, x, N, seed, 0, 0, 0.2, "first call"); /* each computed alone: after the count */
    double *got = values(S, y, EXACT, "sum");
    int64_t bad = 0;
    for (int i = 0; got && i < N; i++) {
      float va = dropped_ref(seed, 0, 0, (uint64_t)i, 0.2) ? 0.0f : x[i] * (float)(1 / 0.8);
      float vb = dropped_ref(seed, 0, 1, (uint64_t)i, 0.6) ? 0.0f : x[i] * (float)(1 / 0.4);
      bad += got[i] != va + vb;
    }
    CHECK(got && bad == 0, "step %d: %lld elements of relu(a) + b wrong", step, (long long)bad);
    if (step == 1) compiled = S->device->compiled.count;
    else CHECK(S->device->compiled.count == compiled, "step %d: %zu kernels compiled after step 1", step, S->device->compiled.count - compiled);
    free(got);
    uj_tensor_free(a), uj_tensor_free(b), uj_tensor_free(y);
  }
  uj_tensor_free(xt), free(x);
}

/* SGD on sum(dropout(w) * r): each step's grad is mask * r / (1 - p), so
 * a weight the step dropped stays as it was, bit for bit, and one it kept
 * moves by lr r / (1 - p). The optimizer moves the generator after each
 * step: step k draws generation k - 1, without a seed from the loop, and
 * nothing compiles after the first step. */
static void test_optimizer_moves_generator(void) {
  enum { N = 256, STEPS = 5 };
  const double p = 0.5, lr = 0.125;
  Rng rng = {8};
  float *w = uniform_floats(&rng, N, -1, 1), *r = uniform_floats(&rng, N, 0.5, 1.5);
  uj_tensor *wt = tf32(S, (int64_t[]){N}, 1, w), *rt = tf32(S, (int64_t[]){N}, 1, r);
  CHECK(uj_tensor_set_requires_grad(wt, true) == UJ_OK, "parameter");
  uj_optimizer *o = uj_optim_new(S, &(uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = lr}, &wt, 1);
  CHECK(uj_session_rng_seed(S, 99) == UJ_OK, "seed");
  size_t compiled = 0;
  for (int step = 1; o && step <= STEPS; step++) {
    uj_optim_zero_grad(o);
    uj_tensor *y = uj_tensor_dropout(wt, p), *loss = sum(uj_tensor_binary(UJ_BIN_MUL, y, rt));
    bool ok = uj_tensor_backward(loss) == UJ_OK && uj_optim_step(o, &loss, 1) == UJ_OK;
    CHECK(ok, "step %d: %s", step, uj_session_error(S));
    CHECK(S->rng_generation == (uint32_t)step && S->rng_calls == 0, "step %d: generation %u, %u calls", step, S->rng_generation, S->rng_calls);
    double *now = values(S, wt, EXACT, "w");
    int64_t bad = 0, moved = 0;
    for (int i = 0; now && i < N; i++) {
      bool drop = dropped_ref(99, (uint32_t)step - 1, 0, (uint64_t)i, p);
      double want = drop ? w[i] : w[i] - lr * r[i] / (1 - p);
      bad += drop ? now[i] != w[i] : !close_to(now[i], want, ulps(4, 1e-7));
      moved += !drop;
      w[i] = (float)now[i];
    }
    CHECK(now && bad == 0 && moved > 0 && moved < N, "step %d: %lld weights wrong", step, (long long)bad);
    if (step == 1) compiled = S->device->compiled.count;
    else CHECK(S->device->compiled.count == compiled, "step %d: %zu kernels compiled after step 1", step, S->device->compiled.count - compiled);
    free(now);
    uj_tensor_free(y), uj_tensor_free(loss);
  }
  uj_optim_free(o);
  uj_tensor_free(wt), uj_tensor_free(rt), free(w), free(r);
}

/* ---- edges and errors ---- */

static void test_edges(void) {
  uj_tensor *x = tf32(S, (int64_t[]){2, 3}, 2, (float[]){1, -2, 3, -4, 5, -6});
  uint32_t calls = S->rng_calls;
  uj_tensor *same = uj_tensor_dropout(x, 0);
  CHECK(same && uj_tensor_uop(same) == uj_tensor_uop(x), "p = 0: x itself");
  uj_tensor *zero = uj_tensor_dropout(x, 1), *g = NULL;
  expect(S, zero, (int64_t[]){2, 3}, 2, VALS(0, 0, 0, 0, 0, 0), EXACT, "p = 1: zeros");
  CHECK(uj_tensor_gradients(sum(uj_tensor_dropout(x, 1)), NULL, &x, 1, &g) == UJ_OK, "grad, p = 1");
  expect(S, g, (int64_t[]){2, 3}, 2, VALS(0, 0, 0, 0, 0, 0), EXACT, "p = 1: no gradient");
  CHECK(S->rng_calls == calls, "p = 0 and p = 1 draw nothing: %u calls, %u before", S->rng_calls, calls);
  uj_tensor *empty = uj_tensor_zeros(S, UJ_FLOAT32, (int64_t[]){0, 3}, 2), *e = uj_tensor_dropout(empty, 0.5);
  CHECK(e && uj_tensor_numel(e) == 0, "empty: %s", uj_session_error(S));
  const double bad[] = {-0.1, 1.5, NAN};
  const char *msgs[] = {"dropout: p must be in [0, 1], not -0.1", "dropout: p must be in [0, 1], not 1.5", "dropout: p must be in [0, 1], not nan"};
  for (int k = 0; k < 3; k++) {
    CHECK(uj_tensor_dropout(x, bad[k]) == NULL, "bad p %g", bad[k]);
    CHECK_STR(uj_session_error(S), msgs[k], "bad p");
    uj_session_clear_error(S);
  }
  uj_tensor *ints = ti32(S, (int64_t[]){2}, 1, (int32_t[]){1, 2});
  CHECK(uj_tensor_dropout(ints, 0.5) == NULL, "an integer tensor");
  CHECK_STR(uj_session_error(S), "dropout: takes a float tensor", "integer tensor");
  uj_session_clear_error(S);
  CHECK(uj_tensor_dropout(NULL, 0.5) == NULL && uj_session_rng_seed(NULL, 1) == UJ_ERR_ARG && uj_session_rng_next(NULL) == UJ_ERR_ARG, "NULL");
  for (uj_tensor **t = (uj_tensor *[]){x, same, zero, g, empty, e, ints, NULL}; *t; t++) uj_tensor_free(*t);
}

int main(void) {
  S = suite_session("test_dropout");
  test_known_answers();
  test_matches_oracle();
  test_fraction();
  test_backward();
  test_fused();
  test_streams();
  test_seed_compiles_nothing();
  test_optimizer_moves_generator();
  test_edges();
  uj_session_free(S);
  return check_report("test_dropout");
}
