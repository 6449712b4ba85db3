/* test_collect.c — freeing the nodes nothing needs (lib/uop/collect.c)
 * and a long session that stays flat (docs/schedule.md, "Cost").
 *
 * A collection keeps exactly what its roots reach, renumbers the
 * survivors 0 .. n - 1 in their old order (sources before users), leaves
 * interning working (an equal node is the same pointer, a freed one comes
 * back new), reuses the freed memory (the context's bytes stay flat over
 * many rounds), and a context part's roots hook keeps its nodes. A session
 * that runs a training-like step 20,000 times (new input data assigned,
 * a softmax layer realized and read, the weights assigned) holds a bounded
 * node count and bounded context memory, keeps its schedules and programs
 * across collections (no kernel compiled again) and computes what a fresh
 * session computes, bit for bit. */
#include "tensor_util.h"
#include "uop/nodemap.h"

/* A chain of n ADDs of distinct constants over a variable: 2n + 1 nodes,
 * the last returned. */
static const UOp *chain(Ctx *ctx, const char *var, int n, int64_t salt) {
  const UOp *x = uop_new(ctx, UJ_OP_DEFINE_VAR, dt_scalar(UJ_INT32), NULL, 0, (Arg){var, (int64_t[]){0, 100}, 2});
  for (int i = 0; x && i < n; i++) x = uop_binary(ctx, UJ_OP_ADD, x, uop_const_int(ctx, dt_scalar(UJ_INT32), salt + i));
  return x;
}

static void check_dense_ids(Ctx *ctx, const char *when) {
  bool ok = true;
  for (size_t i = 0; i < ctx->nnodes && ok; i++) {
    const UOp *u = ctx->nodes[i];
    ok = u->id == i;
    for (uint32_t k = 0; ok && k < u->nsrc; k++) ok = u->src[k]->id < u->id;
  }
  CHECK(ok, "%s: ids are not 0 .. n - 1 with sources first", when);
}

static void test_keeps_what_roots_reach(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *kept = chain(ctx, "a", 50, 0);
  const UOp *garbage = chain(ctx, "b", 200, 1000);
  (void)garbage;
  size_t reach = uop_graph_size(ctx, kept), before = ctx->nnodes;
  RootSet r = {0};
  rootset_add(&r, kept);
  CHECK(uop_collect(ctx, &r), "collect: %s", uj_error(ctx));
  rootset_free(&r);
  CHECK(ctx->nnodes == reach && before > reach, "%zu nodes after, the roots reach %zu (%zu before)", ctx->nnodes, reach, before);
  check_dense_ids(ctx, "after a collection");
  CHECK(chain(ctx, "a", 50, 0) == kept, "interning the kept graph again gave another node");
  size_t n = ctx->nnodes;
  const UOp *again = chain(ctx, "b", 200, 1000);
  CHECK(again && ctx->nnodes == n + 401 && again->id == ctx->nnodes - 1, "the freed graph built again: %zu new nodes", ctx->nnodes - n);
  check_dense_ids(ctx, "after building again");
  /* freed memory is reused: many rounds of garbage hold the bytes of one */
  size_t bytes = 0;
  for (int round = 0; round < 200; round++) {
    for (int j = 0; j < 20; j++) chain(ctx, "c", 300, round * 100000 + j * 1000);
    RootSet keep = {0};
    rootset_add(&keep, kept);
    bool ok = uop_collect(ctx, &keep);
    rootset_free(&keep);
    if (!ok) break;
    if (round == 10) bytes = ctx->arena_bytes;
  }
  CHECK(ctx->nnodes == reach, "%zu nodes after the rounds, %zu kept", ctx->nnodes, reach);
  CHECK(ctx->arena_bytes == bytes, "the context grew from %zu to %zu bytes over 190 rounds of collected garbage", bytes, ctx->arena_bytes);
  CHECK(uop_graph_size(ctx, kept) == reach && chain(ctx, "a", 50, 0) == kept, "the kept graph changed");
  uj_ctx_free(ctx);
}

/* A part's roots hook (as the CPU JIT's programs) keeps its nodes. */
static const UOp *part_node;
static void part_roots(void *state, RootSet *r) { (void)state, rootset_add(r, part_node); }

static void test_part_roots(void) {
  Ctx *ctx = uj_ctx_new();
  part_node = chain(ctx, "p", 10, 7);
  ctx->parts[CTX_PART_CPU_JIT].roots = part_roots;
  RootSet r = {0}, none = {0};
  CHECK(uop_collect(ctx, &r) && ctx->nnodes == 21, "a part's root: %zu nodes kept", ctx->nnodes);
  ctx->parts[CTX_PART_CPU_JIT].roots = NULL;
  CHECK(uop_collect(ctx, &none) && ctx->nnodes == 0, "no roots: %zu nodes kept", ctx->nnodes);
  rootset_free(&r);
  uj_ctx_free(ctx);
}

/* ---- a long session ---- */

enum { N = 16, STEPS = 20000 };

/* One step: x gets new data (a new BUFFER assigned into x's), and
 * y = softmax(x @ w * 0.5 + b) is read back. Returns false on failure. */
static bool step(uj_session *s, uj_tensor *x, uj_tensor *w, uj_tensor *b, int k, float *out) {
  float data[N * N];
  for (int i = 0; i < N * N; i++) data[i] = (float)((i * 7 + k * 13) % 23) / 23.0f - 0.5f;
  uj_tensor *in = uj_tensor_from_data(s, UJ_FLOAT32, SHAPE(N, N), data);
  bool ok = in && uj_tensor_assign(x, in) == UJ_OK;
  uj_tensor *xw = ok ? uj_tensor_matmul(x, w) : NULL, *scaled = uj_tensor_binary_scalar(UJ_BIN_MUL, xw, 0.5, false);
  uj_tensor *z = uj_tensor_binary(UJ_BIN_ADD, scaled, b), *y = uj_tensor_softmax(z, 1);
  ok = y && uj_tensor_to_host(y, out, sizeof(float) * N * N) == UJ_OK;
  uj_tensor *ts[] = {in, xw, scaled, z, y};
  for (size_t i = 0; i < sizeof ts / sizeof *ts; i++) uj_tensor_free(ts[i]);
  return ok;
}

static uj_session *session(uj_tensor **x, uj_tensor **w, uj_tensor **b) {
  uj_session *s = uj_session_new("CPU", NULL);
  *x = uj_tensor_zeros(s, UJ_FLOAT32, SHAPE(N, N));
  *w = uj_tensor_randn(s, SHAPE(N, N), 1);
  *b = uj_tensor_randn(s, SHAPE(1, N), 2);
  CHECK(*x && *w && *b && uj_tensor_realize((uj_tensor *[]){*x, *w, *b}, 3) == UJ_OK, "setup: %s", uj_session_error(s));
  return s;
}

/* to.assign(from's values), across sessions through the host. */
static bool copy_weights(uj_tensor *from, uj_tensor *to) {
  float v[N * N];
  size_t bytes = (size_t)uj_tensor_numel(from) * sizeof *v;
  uj_tensor *t = uj_tensor_to_host(from, v, bytes) == UJ_OK ? uj_tensor_from_data(uj_tensor_session(to), UJ_FLOAT32, uj_tensor_shape(from), uj_tensor_ndim(from), v) : NULL;
  bool ok = t && uj_tensor_assign(to, t) == UJ_OK;
  uj_tensor_free(t);
  return ok;
}

static void test_long_session(void) {
  uj_tensor *x, *w, *b, *x2, *w2, *b2;
  uj_session *s = session(&x, &w, &b), *fresh = session(&x2, &w2, &b2);
  float y[N * N], y2[N * N];
  size_t max_nodes = 0, bytes_early = 0, collections = 0, programs = 0, last_nodes = s->ctx->nnodes;
  bool same = true;
  for (int k = 0; k < STEPS; k++) {
    bool compare = k < 3 || k == STEPS - 1; /* a fresh session computes the same: caches and collections change nothing */
    if (k == STEPS - 1) uj_session_free(fresh), fresh = session(&x2, &w2, &b2);
    if (compare) same &= copy_weights(w, w2) && copy_weights(b, b2);
    if (!step(s, x, w, b, k, y)) {
      CHECK(false, "step %d: %s", k, uj_session_error(s));
      break;
    }
    if (compare) same &= step(fresh, x2, w2, b2, k, y2) && memcmp(y, y2, sizeof y) == 0;
    collections += s->ctx->nnodes < last_nodes;
    last_nodes = s->ctx->nnodes;
    if (last_nodes > max_nodes) max_nodes = last_nodes;
    if (k == STEPS / 2) bytes_early = s->ctx->arena_bytes, programs = s->device->ncache;
  }
  CHECK(same, "the long session's y differs from a fresh session's");
  CHECK(collections >= 2, "%zu collections in %d steps", collections, STEPS); /* ~5 new nodes a step: the new BUFFER and its assignment */
  CHECK(max_nodes <= 2 * SESSION_COLLECT_MIN + 4096, "the context held %zu nodes", max_nodes);
  CHECK(s->ctx->arena_bytes <= bytes_early + (1u << 20), "the context grew from %zu bytes at step %d to %zu", bytes_early, STEPS / 2, s->ctx->arena_bytes);
  CHECK(s->device->ncache == programs, "%zu programs at step %d, %zu at the end: kernels compiled again", programs, STEPS / 2, s->device->ncache);
  /* each step's assignment and softmax find their schedules: the assignment reads a new BUFFER each
   * step, which the cache's key holds as a placeholder (schedule/cache.c) */
  CHECK(schedule_cache_hits(s->schedules) >= 2 * (size_t)STEPS - 4, "%zu schedule cache hits in %d steps", schedule_cache_hits(s->schedules), STEPS);
  CHECK(schedule_cache_size(s->schedules) <= 4, "%zu schedules kept", schedule_cache_size(s->schedules));
  CHECK(s->buffers.nids < 64, "%zu buffers held", s->buffers.nids);
  uj_session_free(s), uj_session_free(fresh);
}

int main(void) {
  test_keeps_what_roots_reach();
  test_part_roots();
  test_long_session();
  return check_report("test_collect");
}
