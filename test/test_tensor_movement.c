/* test_tensor_movement.c — the movement ops of tensor.h (reshape with -1,
 * expand, permute, transpose, flip, pad, shrink) against a naive model of
 * views: for each output element, the flat index of the source element it
 * reads, or -1 for a padding zero, with shapes computed independently.
 * Each op by hand, then random chains of all of them (2000, or argv[1]);
 * every result also against the reference evaluator (tensor_util.h). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tensor_util.h"

/* ---- movement: a naive model ---- */

/* For each element of a view, the flat index of the source element it
 * reads, or -1 for a padding zero. */
typedef struct Model {
  unsigned nd;
  int64_t shape[UJ_MAX_DIMS];
  int64_t n;
  int64_t *src;
} Model;

typedef enum MoveKind {
  MV_RESHAPE,
  MV_EXPAND,
  MV_PERMUTE,
  MV_TRANSPOSE,
  MV_FLIP,
  MV_PAD,
  MV_SHRINK,
  MV_COUNT
} MoveKind;

typedef struct Move {
  MoveKind kind;
  unsigned nd;                   /* of the argument */
  int64_t ints[2 * UJ_MAX_DIMS]; /* shape, lohi, or axes */
  int axes[UJ_MAX_DIMS];         /* permute order, flip axes, transpose pair */
} Move;

static Model model_new(const int64_t *shape, unsigned nd) {
  Model m = {.nd = nd, .n = shape_numel(shape, nd)};
  memcpy(m.shape, shape, nd * sizeof *shape);
  m.src = malloc((size_t)(m.n ? m.n : 1) * sizeof *m.src);
  for (int64_t i = 0; i < m.n; i++) m.src[i] = i;
  return m;
}

/* The source index (in m's index space) of out index o under mv; false
 * for a padding element. */
static bool move_source(const Model *m, const Move *mv, const int64_t *o, unsigned ond,
                        int64_t *in) {
  switch (mv->kind) {
  case MV_EXPAND:
    for (unsigned k = 0; k < m->nd; k++) in[k] = m->shape[k] == 1 ? 0 : o[k + ond - m->nd];
    return true;
  case MV_PERMUTE:
  case MV_TRANSPOSE:
    for (unsigned k = 0; k < m->nd; k++) in[mv->axes[k]] = o[k];
    return true;
  case MV_FLIP:
    memcpy(in, o, m->nd * sizeof *in);
    for (unsigned i = 0; i < mv->nd; i++) {
      unsigned a = (unsigned)(mv->axes[i] < 0 ? mv->axes[i] + (int)m->nd : mv->axes[i]);
      in[a] = m->shape[a] - 1 - o[a];
    }
    return true;
  case MV_PAD:
    for (unsigned k = 0; k < m->nd; k++) {
      in[k] = o[k] - mv->ints[2 * k];
      if (in[k] < 0 || in[k] >= m->shape[k]) return false;
    }
    return true;
  case MV_SHRINK:
    for (unsigned k = 0; k < m->nd; k++) in[k] = o[k] + mv->ints[2 * k];
    return true;
  default: return false;
  }
}

/* The shape of m after mv (-1 in reshape and expand resolved). */
static unsigned move_shape(const Model *m, const Move *mv, int64_t *out) {
  unsigned nd = m->nd;
  switch (mv->kind) {
  case MV_RESHAPE: {
    int64_t known = 1;
    for (unsigned k = 0; k < mv->nd; k++) known *= mv->ints[k] == -1 ? 1 : mv->ints[k];
    for (unsigned k = 0; k < mv->nd; k++) out[k] = mv->ints[k] == -1 ? m->n / known : mv->ints[k];
    return mv->nd;
  }
  case MV_EXPAND:
    for (unsigned k = 0; k < mv->nd; k++)
      out[k] = mv->ints[k] == -1 ? m->shape[k + nd - mv->nd] : mv->ints[k];
    return mv->nd;
  case MV_PERMUTE:
  case MV_TRANSPOSE:
    for (unsigned k = 0; k < nd; k++) out[k] = m->shape[mv->axes[k]];
    return nd;
  case MV_PAD:
  case MV_SHRINK:
    for (unsigned k = 0; k < nd; k++)
      out[k] = mv->kind == MV_PAD ? m->shape[k] + mv->ints[2 * k] + mv->ints[2 * k + 1]
                                  : mv->ints[2 * k + 1] - mv->ints[2 * k];
    return nd;
  default: memcpy(out, m->shape, nd * sizeof *out); return nd;
  }
}

/* m after mv. */
static Model model_apply(const Model *m, const Move *mv) {
  Model r = {0};
  r.nd = move_shape(m, mv, r.shape);
  r.n = shape_numel(r.shape, r.nd);
  const int64_t *shape = r.shape;
  unsigned nd = r.nd;
  r.src = malloc((size_t)(r.n ? r.n : 1) * sizeof *r.src);
  for (int64_t i = 0; i < r.n; i++) {
    int64_t o[UJ_MAX_DIMS], in[UJ_MAX_DIMS];
    if (mv->kind == MV_RESHAPE) {
      r.src[i] = m->src[i];
      continue;
    }
    unravel(i, shape, nd, o);
    r.src[i] = move_source(m, mv, o, nd, in) ? m->src[ravel(in, m->shape, m->nd)] : -1;
  }
  return r;
}

static uj_tensor *move_tensor(uj_tensor *t, const Move *mv) {
  switch (mv->kind) {
  case MV_RESHAPE: return uj_tensor_reshape(t, mv->ints, mv->nd);
  case MV_EXPAND: return uj_tensor_expand(t, mv->ints, mv->nd);
  case MV_PERMUTE: return uj_tensor_permute(t, mv->axes, mv->nd);
  case MV_TRANSPOSE: return uj_tensor_transpose(t, mv->axes[mv->nd], mv->axes[mv->nd + 1]);
  case MV_FLIP: return uj_tensor_flip(t, mv->axes, mv->nd);
  case MV_PAD: return uj_tensor_pad(t, mv->ints, mv->nd);
  case MV_SHRINK: return uj_tensor_shrink(t, mv->ints, mv->nd);
  default: return NULL;
  }
}

static void model_print(const Move *mv, char *buf, size_t size) {
  static const char *const names[MV_COUNT] = {"reshape", "expand", "permute", "transpose",
                                              "flip",    "pad",    "shrink"};
  size_t at = strlen(buf);
  at += (size_t)snprintf(buf + at, size > at ? size - at : 0, " %s(", names[mv->kind]);
  bool two = mv->kind == MV_PAD || mv->kind == MV_SHRINK,
       ints = two || mv->kind == MV_RESHAPE || mv->kind == MV_EXPAND;
  unsigned n = mv->kind == MV_TRANSPOSE ? 2 : two ? 2 * mv->nd : mv->nd;
  for (unsigned k = 0; k < n && at < size; k++) {
    long long v = ints                       ? (long long)mv->ints[k]
                  : mv->kind == MV_TRANSPOSE ? mv->axes[mv->nd + k]
                                             : mv->axes[k];
    at += (size_t)snprintf(buf + at, size - at, "%s%lld", k ? "," : "", v);
  }
  if (at < size) snprintf(buf + at, size - at, ")");
}

/* Applies mv to t and m (the model advancing too); false when mv failed. */
static bool move_both(uj_session *s, uj_tensor **t, Model *m, const Move *mv, const char *what) {
  uj_tensor *r = move_tensor(*t, mv);
  CHECK(r != NULL, "%s: %s", what, uj_session_error(s));
  if (!r) return false;
  Model next = model_apply(m, mv);
  free(m->src);
  *m = next, *t = r;
  return shape_is(r, m->shape, m->nd, what);
}

/* t's values are src + 1 read through the model (0 for padding). */
static void expect_model(uj_session *s, uj_tensor *t, const Model *m, const char *what) {
  double *want = malloc((size_t)(m->n ? m->n : 1) * sizeof *want);
  for (int64_t i = 0; i < m->n; i++) want[i] = m->src[i] < 0 ? 0 : (double)(m->src[i] + 1);
  expect(s, t, m->shape, m->nd, want, EXACT, what);
  free(want);
}

/* A tensor of 1..n (float32) of shape, and its model. */
static uj_tensor *counting(uj_session *s, const int64_t *shape, unsigned nd, Model *m) {
  *m = model_new(shape, nd);
  float *v = malloc((size_t)(m->n ? m->n : 1) * sizeof *v);
  for (int64_t i = 0; i < m->n; i++) v[i] = (float)(i + 1);
  uj_tensor *t = tf32(s, shape, nd, v);
  free(v);
  return t;
}

static void test_movement_by_hand(uj_session *s) {
  float v[6] = {1, 2, 3, 4, 5, 6};
  uj_tensor *a = tf32(s, SHAPE(2, 3), v);
  expect(s, uj_tensor_reshape(a, SHAPE(3, -1)), SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6), EXACT,
         "reshape (3, -1)");
  expect(s, uj_tensor_reshape(a, SHAPE(-1)), SHAPE(6), VALS(1, 2, 3, 4, 5, 6), EXACT,
         "reshape (-1)");
  expect(s, uj_tensor_transpose(a, 0, 1), SHAPE(3, 2), VALS(1, 4, 2, 5, 3, 6), EXACT, "transpose");
  expect(s, uj_tensor_transpose(a, -1, -2), SHAPE(3, 2), VALS(1, 4, 2, 5, 3, 6), EXACT,
         "transpose, negative axes");
  expect(s, uj_tensor_permute(a, (const int[]){1, 0}, 2), SHAPE(3, 2), VALS(1, 4, 2, 5, 3, 6),
         EXACT, "permute");
  expect(s, uj_tensor_flip(a, (const int[]){1}, 1), SHAPE(2, 3), VALS(3, 2, 1, 6, 5, 4), EXACT,
         "flip axis 1");
  expect(s, uj_tensor_flip(a, (const int[]){0, -1}, 2), SHAPE(2, 3), VALS(6, 5, 4, 3, 2, 1), EXACT,
         "flip both");
  expect(s, uj_tensor_pad(a, (const int64_t[]){1, 0, 0, 2}, 2), SHAPE(3, 5),
         VALS(0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0), EXACT, "pad");
  expect(s, uj_tensor_shrink(a, (const int64_t[]){1, 2, 0, 2}, 2), SHAPE(1, 2), VALS(4, 5), EXACT,
         "shrink");
  expect(s, uj_tensor_expand(tf32(s, SHAPE(3, 1), v), SHAPE(2, 3, 4)), SHAPE(2, 3, 4),
         VALS(1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3), EXACT,
         "expand (3,1) to (2,3,4)");
  expect(s, uj_tensor_expand(tf32(s, SHAPE(1, 2), v), SHAPE(2, -1)), SHAPE(2, 2), VALS(1, 2, 1, 2),
         EXACT, "expand with -1");
  /* each op on a (2, 3, 4), through the model */
  Model m;
  uj_tensor *c = counting(s, SHAPE(2, 3, 4), &m);
  const Move moves[] = {
      {.kind = MV_PERMUTE, .nd = 3, .axes = {2, 0, 1}},
      {.kind = MV_FLIP, .nd = 2, .axes = {0, -1}},
      {.kind = MV_PAD, .nd = 3, .ints = {1, 0, 0, 2, 2, 1}},
      {.kind = MV_SHRINK, .nd = 3, .ints = {1, 4, 0, 2, 1, 4}},
      {.kind = MV_RESHAPE, .nd = 2, .ints = {2, -1}},
      {.kind = MV_TRANSPOSE, .nd = 2, .axes = {1, 0, 0, 1}},
      {.kind = MV_RESHAPE, .nd = 4, .ints = {3, 1, 6, 1}},
      {.kind = MV_EXPAND, .nd = 5, .ints = {2, -1, 3, -1, 4}},
  };
  char what[512] = "chain:";
  for (size_t i = 0; i < sizeof moves / sizeof *moves; i++) {
    model_print(&moves[i], what, sizeof what);
    if (!move_both(s, &c, &m, &moves[i], what)) break;
    expect_model(s, c, &m, what);
  }
  free(m.src);
}

/* A random shape of n elements (n's factors spread over 1..4 axes). */
static unsigned random_factor_shape(Rng *r, int64_t n, int64_t *shape) {
  unsigned nd = 1 + (unsigned)rng_int(r, 4);
  for (unsigned k = 0; k < nd; k++) shape[k] = 1;
  for (int64_t p = 2, left = n; left > 1;) {
    if (left % p) {
      p++;
      continue;
    }
    shape[rng_int(r, (int)nd)] *= p, left /= p;
  }
  if (n == 0) shape[rng_int(r, (int)nd)] = 0;
  return nd;
}

/* A random move that applies to m (numel kept at most 600). */
static Move random_move(Rng *r, const Model *m) {
  Move mv = {.kind = (MoveKind)rng_int(r, MV_COUNT)};
  unsigned nd = m->nd;
  switch (mv.kind) {
  case MV_RESHAPE:
    mv.nd = random_factor_shape(r, m->n, mv.ints);
    if (m->n > 0 && rng_int(r, 3) == 0) mv.ints[rng_int(r, (int)mv.nd)] = -1;
    break;
  case MV_EXPAND: {
    unsigned lead = nd < UJ_MAX_DIMS - 1 && nd < 5 ? (unsigned)rng_int(r, 2) : 0;
    mv.nd = nd + lead;
    int64_t n = 1;
    for (unsigned k = 0; k < mv.nd; k++) {
      int64_t was = k < lead ? 1 : m->shape[k - lead];
      mv.ints[k] = was == 1 ? 1 + rng_int(r, 3) : rng_int(r, 4) == 0 ? -1 : was;
      n *= mv.ints[k] < 0 ? was : mv.ints[k];
    }
    if (n > 600) mv.kind = MV_FLIP, mv.nd = 0;
    break;
  }
  case MV_PERMUTE:
  case MV_TRANSPOSE:
    mv.nd = nd;
    for (unsigned k = 0; k < nd; k++) mv.axes[k] = (int)k;
    if (mv.kind == MV_PERMUTE)
      for (unsigned k = nd; k > 1; k--) {
        unsigned j = (unsigned)rng_int(r, (int)k);
        int t = mv.axes[k - 1];
        mv.axes[k - 1] = mv.axes[j], mv.axes[j] = t;
      }
    else if (nd > 0) {
      int x = rng_int(r, (int)nd), y = rng_int(r, (int)nd);
      mv.axes[x] = y, mv.axes[y] = x;
      mv.axes[nd] = x - (rng_int(r, 2) ? (int)nd : 0),
      mv.axes[nd + 1] = y; /* the pair, maybe negative */
    } else mv.kind = MV_PERMUTE;
    break;
  case MV_FLIP: {
    for (unsigned k = 0; k < nd; k++)
      if (rng_int(r, 2)) mv.axes[mv.nd++] = (int)k - (rng_int(r, 2) ? (int)nd : 0);
    break;
  }
  case MV_PAD: {
    mv.nd = nd;
    int64_t n = 1;
    for (unsigned k = 0; k < nd; k++) {
      mv.ints[2 * k] = rng_int(r, 3) ? 0 : rng_int(r, 3),
                  mv.ints[2 * k + 1] = rng_int(r, 3) ? 0 : rng_int(r, 3);
      n *= m->shape[k] + mv.ints[2 * k] + mv.ints[2 * k + 1];
    }
    if (n > 600)
      for (unsigned k = 0; k < 2 * nd; k++) mv.ints[k] = 0;
    break;
  }
  case MV_SHRINK:
    mv.nd = nd;
    for (unsigned k = 0; k < nd; k++) {
      int64_t len = m->shape[k], lo = len ? rng_int(r, (int)(len / 2 + 1)) : 0;
      int64_t hi = lo + (len - lo ? rng_int(r, (int)(len - lo)) + 1 : 0);
      if (rng_int(r, 40) == 0) hi = lo; /* now and then an empty axis */
      mv.ints[2 * k] = lo, mv.ints[2 * k + 1] = hi;
    }
    break;
  default: break;
  }
  return mv;
}

enum { GROUP = 5 };

typedef struct Chain {
  int index;
  uj_tensor *t;
  Model m;
  char what[1024];
} Chain;

/* A random chain of 2 to 6 moves on a counting tensor of a random shape;
 * false (with a failed CHECK) when a move failed. */
static bool random_chain(uj_session *s, Rng *r, int c, Chain *ch) {
  int64_t shape[UJ_MAX_DIMS];
  unsigned nd = 1 + (unsigned)rng_int(r, 3);
  for (unsigned k = 0; k < nd; k++) shape[k] = 1 + rng_int(r, 4);
  ch->index = c;
  ch->t = counting(s, shape, nd, &ch->m);
  snprintf(ch->what, sizeof ch->what, "chain %d: %s", c, shape_str(shape, nd, (char[64]){0}, 64));
  bool ok = ch->t != NULL;
  for (int k = 0, steps = 2 + rng_int(r, 5); ok && k < steps; k++) {
    Move mv = random_move(r, &ch->m);
    model_print(&mv, ch->what, sizeof ch->what);
    ok = move_both(s, &ch->t, &ch->m, &mv, ch->what);
  }
  return ok;
}

/* The chains of g flattened and concatenated: one kernel for n chains.
 * When it fails, each chain is checked alone to name the culprit. */
static void check_group(uj_session *s, Chain *g, int n) {
  uj_tensor *flat[GROUP];
  if (n == 1) {
    expect_model(s, g[0].t, &g[0].m, g[0].what);
    return;
  }
  int64_t total = 0, at = 0;
  for (int i = 0; i < n; i++) flat[i] = uj_tensor_reshape(g[i].t, SHAPE(-1)), total += g[i].m.n;
  double *want = malloc((size_t)(total ? total : 1) * sizeof *want);
  for (int i = 0; i < n; i++)
    for (int64_t e = 0; e < g[i].m.n; e++)
      want[at++] = g[i].m.src[e] < 0 ? 0 : (double)(g[i].m.src[e] + 1);
  long failed = check_failed;
  char what[64];
  snprintf(what, sizeof what, "chains %d..%d flattened and concatenated", g[0].index,
           g[n - 1].index);
  expect(s, uj_tensor_cat(flat, (unsigned)n, 0), SHAPE(total), want, EXACT, what);
  for (int i = 0; failed != check_failed && i < n; i++) expect_model(s, g[i].t, &g[i].m, g[i].what);
  free(want);
}

/* Random chains of every movement op on small random shapes, each element
 * checked against the model: the first `alone` chains each as its own
 * kernel, the rest GROUP to a kernel (the compiles are what cost). */
static void test_movement_random(uj_session *s, int chains, int alone) {
  Rng r = {0x9e3779b97f4a7c15ull};
  Chain g[GROUP];
  int n = 0;
  for (int c = 0; c < chains; c++) {
    if (!random_chain(s, &r, c, &g[n])) {
      free(g[n].m.src);
      continue;
    }
    if (++n < (c < alone ? 1 : GROUP) && c + 1 < chains) continue;
    check_group(s, g, n);
    for (int i = 0; i < n; i++) free(g[i].m.src);
    n = 0;
  }
}

/* cat keeps each element's bits (-0.0, NaN, infinities: the parts add
 * -0.0 where they are not, never +0.0), and joins many inputs in a tree
 * of staged groups of 32 (kernels: 35 + 2 + 1 for 1100 inputs, and
 * the cuts of the kernel budget), each
 * checked against the evaluator bit for bit. */
static void test_cat_exact_and_wide(uj_session *s) {
  enum { N = 1100 };
  static uj_tensor *parts[N];
  static float want[N], got[N];
  for (int i = 0; i < N; i++) {
    want[i] = i % 5 == 0 ? -0.0f : i % 7 == 0 ? -INFINITY : i % 11 == 0 ? NAN : (float)i * 0.5f - 100.0f;
    parts[i] = tf32(s, SHAPE(1), &want[i]);
  }
  uj_tensor *all = uj_tensor_cat(parts, N, 0);
  size_t kernels = all ? uj_tensor_kernel_count(all) : 0; /* a level-2 group may be cut by the kernel budget */
  CHECK(kernels >= 38 && kernels <= 48, "cat of %d: %zu kernels, want 38 to 48 (%s)", N, kernels, uj_session_error(s));
  TensorValue tv = {0};
  bool ok = all && evaluate(s, all, &tv, "cat of 1100"); /* the graph, before it is realized */
  uint64_t *words = ok ? jit_words(s, all, "cat of 1100") : NULL;
  if (words) check_against_evaluator(s, all, &tv, words, EXACT, "cat of 1100");
  CHECK(all && uj_tensor_to_host(all, got, sizeof got) == UJ_OK, "cat of 1100: %s", uj_session_error(s));
  for (int i = 0; all && i < N; i++) {
    uint32_t a, b;
    memcpy(&a, &got[i], 4), memcpy(&b, &want[i], 4);
    CHECK(a == b, "cat of 1100: element %d: bits %08x, want %08x", i, a, b);
  }
  free(words);
  if (ok) tensor_value_free(&tv);
  uj_tensor *two = uj_tensor_cat((uj_tensor *[]){parts[0], parts[7], parts[11]}, 3, 0);
  float three[3];
  CHECK(two && uj_tensor_to_host(two, three, sizeof three) == UJ_OK && signbit(three[0]) && three[0] == 0 && isinf(three[1]) &&
            isnan(three[2]),
        "cat of -0.0, -inf, nan: %g %g %g", three[0], three[1], three[2]);
  int32_t ints[40][2];
  uj_tensor *rows[40];
  for (int i = 0; i < 40; i++) ints[i][0] = i, ints[i][1] = -i, rows[i] = ti32(s, SHAPE(2), ints[i]);
  uj_tensor *st = uj_tensor_stack(rows, 40, 1); /* (2, 40): a tree of two levels along axis 1 */
  int32_t back[2][40];
  CHECK(st && uj_tensor_to_host(st, back, sizeof back) == UJ_OK, "stack of 40: %s", uj_session_error(s));
  for (int i = 0; st && i < 40; i++) CHECK(back[0][i] == i && back[1][i] == -i, "stack of 40: column %d: %d %d", i, back[0][i], back[1][i]);
}

int main(int argc, char **argv) {
  uj_session *s = suite_session("test_tensor_movement");

  int chains = argc > 1 ? atoi(argv[1]) : 2000;
  test_movement_by_hand(s);
  test_cat_exact_and_wide(s);
  test_movement_random(s, chains, chains / 4);
  uj_session_free(s);
  return check_report("test_tensor_movement");
}
