/* jit_util.h — differential testing of the CPU JIT against the reference
 * evaluator, shared by the JIT tests.
 *
 * In: a kernel and its buffers (one per PARAM slot, with initial bytes).
 * Out: both run on their own copy of the buffers; every element of every
 * buffer must then be equal: bit for bit (after the evaluator's reading of
 * memory, which maps any NaN to the canonical one), or within `ulps` for
 * floats when a kernel has transcendental functions, or within the
 * evaluator's error bounds (jit_within_bounds_of: the kernel may regroup
 * float reductions, docs/semantics.md "Reassociation"); and the 64 bytes
 * after each JIT buffer (a canary) must be untouched. A mismatch prints the
 * slot, the element, both values and the kernel.
 *
 * Each diff also runs the list the JIT rendered (codegen/linear.h) through
 * eval_linear, in 3 parts where the CPU splits the kernel among threads:
 * it must give the JIT's words bit for bit (within `ulps` for float64
 * transcendentals, which the JIT leaves to libm), so the renderer emits
 * exactly the list. */
#ifndef UJ_TEST_JIT_UTIL_H
#define UJ_TEST_JIT_UTIL_H

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "llvm/listing.h"
#include "uop/alu.h"
#include "uop/eval.h"
#include "uop/eval_bound.h"
#include "uop/text.h"

enum { JIT_MAX_SLOTS = 8, JIT_CANARY = 64 };

typedef struct JitBuffers {
  int n;                         /* slots 0 .. n-1 */
  DType dtype[JIT_MAX_SLOTS];    /* element dtype (the pointee) */
  size_t count[JIT_MAX_SLOTS];   /* elements */
  unsigned char *init[JIT_MAX_SLOTS]; /* initial bytes, count * element size */
} JitBuffers;


/* Distance in ulps between two float words of scalar s (NaN == NaN). */
static inline uint64_t jit_ulps(uj_scalar s, uint64_t a, uint64_t b) {
  uint64_t x = word_to_mem_bits(s, a), y = word_to_mem_bits(s, b);
  unsigned bits = scalar_table[s].bits;
  uint64_t sign = 1ull << (bits - 1);
  bool nan_a = a == word_normalize(s, 0x7ff8000000000000ull), nan_b = b == word_normalize(s, 0x7ff8000000000000ull);
  if (nan_a || nan_b) return nan_a == nan_b ? 0 : UINT64_MAX;
  /* to a monotonic unsigned order */
  x = x & sign ? ~x & (sign | (sign - 1)) : x | sign;
  y = y & sign ? ~y & (sign | (sign - 1)) : y | sign;
  return x > y ? x - y : y - x;
}

static inline uint64_t jit_read_word(const unsigned char *p, uj_scalar s) {
  size_t n = s == UJ_BOOL ? 1 : scalar_table[s].bits / 8;
  uint64_t bits = 0;
  for (size_t i = n; i-- > 0;) bits = bits << 8 | p[i];
  return word_from_mem_bits(s, bits);
}

/* Compares the buffers element by element, lane by lane. */
static inline bool jit_compare(const JitBuffers *b, unsigned char **got, unsigned char **want, uint64_t ulps,
                               double *const *errs, const char *what) {
  for (int slot = 0; slot < b->n; slot++) {
    uj_scalar s = (uj_scalar)b->dtype[slot].scalar;
    size_t lane_bytes = s == UJ_BOOL ? 1 : scalar_table[s].bits / 8;
    size_t lanes = b->count[slot] * b->dtype[slot].lanes;
    for (size_t i = 0; i < lanes; i++) {
      uint64_t g = jit_read_word(got[slot] + i * lane_bytes, s), w = jit_read_word(want[slot] + i * lane_bytes, s);
      bool same = errs ? bound_holds(s, g, w, errs[slot][i])
                       : g == w || (scalar_table[s].is_float && ulps && jit_ulps(s, g, w) <= ulps);
      if (!same) {
        char gs[48], ws[48];
        if (scalar_table[s].is_float) word_format_float(s, g, gs, sizeof gs), word_format_float(s, w, ws, sizeof ws);
        else snprintf(gs, sizeof gs, "%lld", (long long)g), snprintf(ws, sizeof ws, "%lld", (long long)w);
        CHECK(same, "%s: slot %d lane %zu: jit %s, evaluator %s (bound %g)", what, slot, i, gs, ws,
              errs ? errs[slot][i] : 0.0);
        return false;
      }
    }
  }
  check_count++;
  return true;
}

/* Runs reference through the evaluator and kernel (reference, or an
 * optimized copy of it) through the JIT on copies of b's memory. vars:
 * values of the kernel's variables, sorted by name (as uj_run). bounded:
 * compare within the evaluator's bounds (the inputs exact), not ulps. */
/* The kernel's list run by eval_linear on copies of b's memory, against
 * the JIT's buffers `jit`. */
static inline bool jit_linear_check(Ctx *ctx, const UOp *kernel, const JitBuffers *b, unsigned char **jit,
                                    const char *const *var_names, const int64_t *vars, size_t nvars, uint64_t ulps,
                                    const char *what) {
  Linear l;
  if (!pipeline_listing(ctx, kernel, "cpu", NULL, &l)) {
    CHECK(false, "%s: linearize fails: %s", what, uj_error(ctx));
    return false;
  }
  unsigned char *mine[JIT_MAX_SLOTS] = {0};
  void *params[JIT_MAX_SLOTS] = {0};
  size_t bytes[JIT_MAX_SLOTS] = {0};
  for (int i = 0; i < b->n; i++) {
    bytes[i] = b->count[i] * elem_bytes(b->dtype[i]);
    params[i] = mine[i] = malloc(bytes[i] + 1);
    memcpy(mine[i], b->init[i], bytes[i]);
  }
  LinearArgs a = {params, bytes, (size_t)b->n, var_names, vars, nvars, 0, 1};
  bool ok = true;
  int parts = l.part ? 3 : 1;
  for (int k = 0; k < parts && ok; k++) {
    a.part = k, a.nparts = parts;
    ok = eval_linear(ctx, &l, &a);
    CHECK(ok, "%s: eval_linear (part %d of %d) fails: %s", what, k, parts, uj_error(ctx));
  }
  if (ok) ok = jit_compare(b, mine, jit, ulps, NULL, what);
  CHECK(ok, "%s: eval_linear differs from the JIT (above: eval_linear got, the JIT wanted)", what);
  for (int i = 0; i < b->n; i++) free(mine[i]);
  linear_free(&l);
  return ok;
}

static inline bool jit_diff(Ctx *ctx, const UOp *reference, const UOp *kernel, const JitBuffers *b,
                            const char *const *var_names, const int64_t *vars, size_t nvars, uint64_t ulps,
                            bool bounded, const char *what) {
  unsigned char *got[JIT_MAX_SLOTS] = {0}, *want[JIT_MAX_SLOTS] = {0};
  double *errs[JIT_MAX_SLOTS] = {0};
  void *args[JIT_MAX_SLOTS] = {0};
  bool ok = true;
  for (int i = 0; i < b->n; i++) {
    size_t bytes = b->count[i] * elem_bytes(b->dtype[i]);
    got[i] = aligned_alloc(64, (bytes + JIT_CANARY + 63) / 64 * 64), want[i] = malloc(bytes + 1);
    memcpy(got[i], b->init[i], bytes), memcpy(want[i], b->init[i], bytes);
    memset(got[i] + bytes, 0xa5, JIT_CANARY);
    args[i] = got[i];
  }
  Eval *ev = eval_new(ctx);
  eval_track_bounds(ev, bounded);
  for (int i = 0; i < b->n; i++) {
    eval_bind_param(ev, i, want[i], b->count[i] * elem_bytes(b->dtype[i]));
    if (bounded) errs[i] = calloc(b->count[i] * b->dtype[i].lanes + 1, sizeof(double)), eval_bind_bounds(ev, i, errs[i]);
  }
  for (size_t i = 0; i < nvars; i++) eval_bind_var(ev, var_names[i], vars[i]);
  if (!eval_run(ev, reference)) {
    CHECK(false, "%s: the evaluator fails: %s", what, uj_error(ctx));
    ok = false;
  }
  eval_free(ev);
  uj_program *p = ok ? uj_compile(ctx, kernel, "diff") : NULL;
  if (ok && !p) {
    CHECK(false, "%s: compile fails: %s", what, uj_error(ctx));
    ok = false;
  }
  if (p && uj_run(p, args, (size_t)b->n, vars, nvars) != UJ_OK) {
    CHECK(false, "%s: run fails: %s", what, uj_error(ctx));
    ok = false;
  }
  if (ok) ok = jit_compare(b, got, want, ulps, bounded ? errs : NULL, what);
  if (ok) ok = jit_linear_check(ctx, kernel, b, got, var_names, vars, nvars, ulps, what);
  for (int i = 0; ok && i < b->n; i++) {
    const unsigned char *canary = got[i] + b->count[i] * elem_bytes(b->dtype[i]);
    for (int k = 0; k < JIT_CANARY && ok; k++) ok = canary[k] == 0xa5;
    CHECK(ok, "%s: slot %d: the JIT wrote past the end of the buffer", what, i);
  }
  if (!ok) {
    char *text = text_print(ctx, kernel);
    fprintf(stderr, "  kernel:\n%s", text ? text : "?\n");
    free(text);
  }
  uj_program_free(p);
  for (int i = 0; i < b->n; i++) free(got[i]), free(want[i]), free(errs[i]);
  return ok;
}

static inline bool jit_vs_eval_of(Ctx *ctx, const UOp *reference, const UOp *kernel, const JitBuffers *b,
                                  const char *const *var_names, const int64_t *vars, size_t nvars, uint64_t ulps,
                                  const char *what) {
  return jit_diff(ctx, reference, kernel, b, var_names, vars, nvars, ulps, false, what);
}

/* jit_vs_eval_of within the evaluator's bounds: kernel may regroup
 * reference's float reductions. */
static inline bool jit_within_bounds_of(Ctx *ctx, const UOp *reference, const UOp *kernel, const JitBuffers *b,
                                        const char *what) {
  return jit_diff(ctx, reference, kernel, b, NULL, NULL, 0, 0, true, what);
}

/* Runs kernel through the evaluator and the JIT on copies of b's memory. */
static inline bool jit_vs_eval(Ctx *ctx, const UOp *kernel, const JitBuffers *b, const char *const *var_names,
                               const int64_t *vars, size_t nvars, uint64_t ulps, const char *what) {
  return jit_vs_eval_of(ctx, kernel, kernel, b, var_names, vars, nvars, ulps, what);
}

#endif
