/* tensor_util.h — what the tensor-op tests (test_tensor_*.c) share: a
 * seeded generator, tolerances, tensors from C arrays, and the two
 * oracles: values computed here (expect, values) and the reference
 * evaluator (check_against_evaluator: the tensor's graph, before it is
 * realized, evaluated by lib/uop/eval_tensor.h with each BUFFER bound to
 * its memory; the JIT's values must match it bit for bit, Tol EXACT,
 * within the evaluator's error bounds, Tol BOUNDED (the realization may
 * regroup float reductions: docs/semantics.md "Reassociation"; a value
 * computed here must be within them too), or within the tolerance of the
 * case). One session per test program, so
 * each distinct kernel is compiled once. */
#ifndef UJ_TEST_TENSOR_UTIL_H
#define UJ_TEST_TENSOR_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "tensor/tensor_impl.h"
#include "uop/alu.h"
#include "uop/eval_bound.h"
#include "uop/eval_tensor.h"
#include "uop/movement.h"

/* ---- helpers ---- */

enum { TEST_SKIPPED = 77 }; /* CTest's SKIP_RETURN_CODE */

/* The session a suite runs on: UJ_DEVICE's device, else the CPU. A GPU
 * that is not here ("no CUDA device: ...", "no AMD GPU: ...") skips the
 * suite with its reason; any other failure fails it. */
static inline uj_session *suite_session(const char *suite) {
  const char *why = NULL;
  uj_session *s = uj_session_new(NULL, &why);
  if (s) return s;
  if (why && (strncmp(why, "no CUDA device: ", 16) == 0 || strncmp(why, "no AMD GPU: ", 12) == 0)) {
    printf("%s: skipped: %s\n", suite, why);
    exit(TEST_SKIPPED);
  }
  fprintf(stderr, "%s: no session: %s\n", suite, why ? why : "?");
  exit(1);
}

typedef struct Rng {
  uint64_t s;
} Rng;

static inline uint64_t rng_next(Rng *r) {
  r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
  return r->s;
}
static inline int rng_int(Rng *r, int n) { return (int)(rng_next(r) % (uint64_t)n); }
static inline double rng_uniform(Rng *r, double lo, double hi) {
  return lo + (hi - lo) * (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* |got - want| <= atol + rtol * |want|; NaN matches NaN, inf itself.
 * EXACT also compares the evaluator's words bit for bit; BOUNDED compares
 * within the evaluator's bound of each element, against the evaluator and
 * against the values computed here. */
typedef struct Tol {
  double rtol, atol;
  bool bounded;
} Tol;
static const Tol EXACT = {0, 0, false};
static const Tol BOUNDED = {0, 0, true};
static inline Tol ulps(double n, double atol) { return (Tol){n * 0x1p-23, atol, false}; } /* ~n float32 ulps */

static inline bool close_to(double got, double want, Tol tol) {
  if (isnan(want) || isnan(got)) return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= tol.atol + tol.rtol * fabs(want);
}

#define SHAPE(...)                                                                                 \
  (const int64_t[]){__VA_ARGS__},                                                                  \
      (unsigned)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t))

static inline uj_tensor *tf32(uj_session *s, const int64_t *shape, unsigned nd, const float *v) {
  return uj_tensor_from_data(s, UJ_FLOAT32, shape, nd, v);
}
static inline uj_tensor *ti32(uj_session *s, const int64_t *shape, unsigned nd, const int32_t *v) {
  return uj_tensor_from_data(s, UJ_INT32, shape, nd, v);
}
static inline uj_tensor *tbool(uj_session *s, const int64_t *shape, unsigned nd, const bool *v) {
  return uj_tensor_from_data(s, UJ_BOOL, shape, nd, v);
}

/* Whether t's kernels ("uops" text) contain s. */
static inline bool kernels_have(uj_tensor *t, const char *s) {
  char *text = t ? uj_tensor_schedule_text(t, "uops") : NULL;
  bool has = text && strstr(text, s);
  free(text);
  return has;
}

/* A float32 tensor of n values uniform in [lo, hi) (or small integers in
 * [lo, hi] when ints), the values also in *out (malloc'd). */
static inline uj_tensor *random_f32(uj_session *s, Rng *r, const int64_t *shape, unsigned nd, double lo,
                             double hi, bool ints, double **out) {
  int64_t n = shape_numel(shape, nd);
  float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
  *out = malloc((size_t)(n ? n : 1) * sizeof **out);
  for (int64_t i = 0; i < n; i++) {
    v[i] = ints ? (float)(lo + rng_int(r, (int)(hi - lo) + 1)) : (float)rng_uniform(r, lo, hi);
    (*out)[i] = v[i];
  }
  uj_tensor *t = tf32(s, shape, nd, v);
  free(v);
  return t;
}

/* The value of a word (alu.h) of scalar d. */
static inline double word_value(uj_scalar d, uint64_t w) {
  DType t = dt_scalar(d);
  if (dt_is_float(t)) {
    double v;
    memcpy(&v, &w, sizeof v);
    return v;
  }
  return dt_is_bool(t) || !dt_is_signed(t) ? (double)w : (double)(int64_t)w;
}

/* Evaluates t's graph with eval_tensor, each BUFFER under it bound to its
 * memory in the session's buffer table. */
static inline bool evaluate_with(uj_session *s, uj_tensor *t, TensorValue *out, bool bounded, const char *what) {
  const UOp *root = uj_tensor_uop(t), **nodes = NULL;
  size_t n = uop_toposort(s->ctx, root, &nodes), nb = 0;
  TensorBinding *tb = malloc((n ? n : 1) * sizeof *tb);
  bool ok = tb && n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    if (nodes[i]->op != UJ_OP_BUFFER) continue;
    RtBuffer *m = buffer_table_get(&s->buffers, nodes[i]->ints[0]);
    void *host = m ? malloc(m->bytes ? m->bytes : 1) : NULL; /* a GPU's memory is not the host's */
    ok = host && s->device->ops->copy_out(s->device, host, m->mem, m->bytes);
    CHECK(ok, "%s: BUFFER %lld has no memory (%s)", what, (long long)nodes[i]->ints[0], uj_error(s->ctx));
    if (ok) tb[nb++] = (TensorBinding){nodes[i], host, m->bytes};
    else free(host);
  }
  if (ok) {
    ok = bounded ? eval_tensor_bounds(s->ctx, root, tb, nb, out) : eval_tensor(s->ctx, root, tb, nb, out);
    CHECK(ok, "%s: eval_tensor: %s", what, uj_error(s->ctx));
  }
  for (size_t i = 0; i < nb; i++) free((void *)tb[i].data);
  free(tb), free(nodes);
  return ok;
}
static inline bool evaluate(uj_session *s, uj_tensor *t, TensorValue *out, const char *what) {
  return evaluate_with(s, t, out, false, what);
}

/* t realized by the JIT, as words (malloc'd); NULL after a failed CHECK. */
static inline uint64_t *jit_words(uj_session *s, uj_tensor *t, const char *what) {
  DType d = dt_scalar(uj_tensor_dtype(t));
  size_t n = (size_t)uj_tensor_numel(t), size = elem_bytes(d);
  unsigned char *raw = malloc(n * size + 1);
  uint64_t *w = malloc((n ? n : 1) * sizeof *w);
  uj_status st = uj_tensor_to_host(t, raw, n * size);
  CHECK(st == UJ_OK, "%s: to_host: %s", what, uj_session_error(s));
  for (size_t i = 0; st == UJ_OK && i < n; i++) mem_read(raw + i * size, d, &w[i]);
  free(raw);
  if (st != UJ_OK) free(w), w = NULL;
  return w;
}

/* The evaluator's words for t's graph (read before realizing) against the
 * JIT's: equal words under EXACT, else values within tol. */
static inline void check_against_evaluator(uj_session *s, uj_tensor *t, const TensorValue *want,
                                    const uint64_t *got, Tol tol, const char *what) {
  uj_scalar d = uj_tensor_dtype(t);
  bool exact = (tol.rtol == 0 && tol.atol == 0 && !tol.bounded) || !dt_is_float(dt_scalar(d));
  size_t n = (size_t)uj_tensor_numel(t), bad = 0;
  CHECK(want->count == n, "%s: evaluator gives %zu elements, the JIT %zu", what, want->count, n);
  for (size_t i = 0; i < n && i < want->count; i++) {
    bool same = exact         ? want->words[i] == got[i]
                : want->errs ? bound_holds(d, got[i], want->words[i], want->errs[i])
                              : close_to(word_value(d, got[i]), word_value(d, want->words[i]), tol);
    if (!same && bad++ < 3)
      CHECK(same, "%s: element %zu: JIT %.9g, evaluator %.9g", what, i, word_value(d, got[i]),
            word_value(d, want->words[i]));
  }
  CHECK(bad == 0, "%s: %zu of %zu elements differ from the evaluator (%s)", what, bad, n,
        uj_session_error(s));
}

/* t's values as doubles (malloc'd; NULL after a failed CHECK): realized by
 * the JIT and checked against the evaluator (unless tol.rtol < 0); under
 * BOUNDED, *errs (when asked) the evaluator's bounds (malloc'd). */
static inline double *values_bounds(uj_session *s, uj_tensor *t, Tol tol, const char *what, double **errs) {
  if (!t) {
    CHECK(t != NULL, "%s: %s", what, uj_session_error(s));
    return NULL;
  }
  TensorValue want = {0};
  bool evaluated = tol.rtol >= 0 && evaluate_with(s, t, &want, tol.bounded, what);
  uint64_t *w = jit_words(s, t, what);
  double *v = NULL;
  if (w) {
    size_t n = (size_t)uj_tensor_numel(t);
    if (evaluated) check_against_evaluator(s, t, &want, w, tol, what);
    v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = word_value(uj_tensor_dtype(t), w[i]);
  }
  if (errs) *errs = want.errs, want.errs = NULL;
  tensor_value_free(&want), free(w);
  return v;
}
static inline double *values(uj_session *s, uj_tensor *t, Tol tol, const char *what) {
  return values_bounds(s, t, tol, what, NULL);
}

static inline bool shape_is(uj_tensor *t, const int64_t *shape, unsigned nd, const char *what) {
  char a[128], b[128];
  bool ok = t && uj_tensor_ndim(t) == nd &&
            (nd == 0 || !memcmp(uj_tensor_shape(t), shape, nd * sizeof *shape));
  CHECK(ok, "%s: shape %s, want %s", what,
        t ? shape_str(uj_tensor_shape(t), uj_tensor_ndim(t), a, sizeof a) : "(null)",
        shape_str(shape, nd, b, sizeof b));
  return ok;
}

/* t has the shape and, within tol, the values want (C order). */
static inline void expect(uj_session *s, uj_tensor *t, const int64_t *shape, unsigned nd,
                   const double *want, Tol tol, const char *what) {
  if (!t) {
    CHECK(t != NULL, "%s: %s", what, uj_session_error(s));
    return;
  }
  if (!shape_is(t, shape, nd, what)) return;
  double *errs = NULL;
  double *got = values_bounds(s, t, tol, what, &errs);
  int64_t n = shape_numel(shape, nd), bad = 0;
  CHECK(!tol.bounded || !got || errs, "%s: the evaluator's bounds", what);
  for (int64_t i = 0; got && (errs || !tol.bounded) && i < n; i++) {
    Tol within = errs ? (Tol){0, errs[i], false} : tol; /* here: |got - want| <= the bound */
    if (!close_to(got[i], want[i], within) && bad++ < 4)
      CHECK(false, "%s: element %lld is %.9g, want %.9g (within %g)", what, (long long)i, got[i], want[i],
            within.atol + within.rtol * fabs(want[i]));
  }
  CHECK(bad == 0, "%s: %lld of %lld elements wrong", what, (long long)bad, (long long)n);
  free(got), free(errs);
}

static inline void expect_dtype(uj_tensor *t, uj_scalar d, const char *what) {
  CHECK(t && uj_tensor_dtype(t) == d, "%s: dtype %d, want %d", what,
        t ? (int)uj_tensor_dtype(t) : -1, (int)d);
}

#define VALS(...)                                                                                  \
  (const double[]) { __VA_ARGS__ }

/* Index arithmetic on C-order shapes. */
static inline void unravel(int64_t flat, const int64_t *shape, unsigned nd, int64_t *idx) {
  for (unsigned k = nd; k-- > 0;) idx[k] = flat % shape[k], flat /= shape[k];
}
static inline int64_t ravel(const int64_t *idx, const int64_t *shape, unsigned nd) {
  int64_t f = 0;
  for (unsigned k = 0; k < nd; k++) f = f * shape[k] + idx[k];
  return f;
}

#endif
