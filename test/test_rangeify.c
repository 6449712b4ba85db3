/* test_rangeify.c — tensor graphs through rangeify, the CPU JIT, and
 * against the tensor reference evaluator (eval_tensor), bit for bit.
 *
 * In: random chains of RESHAPE, EXPAND, PERMUTE, FLIP, PAD, SHRINK and
 * REDUCE over one or two float32 BUFFERs, with ADDs and MULs between
 * views (UJ_RANGEIFY_CHAINS of them, default 400). Out: the one kernel each
 * becomes gives, run by the JIT, the evaluator's words. Also: the index of
 * a plain transpose is as simple as hand-written code, and axes of size 1
 * make no loops. */
#include <stdlib.h>

#include "check.h"
#include "schedule/rangeify.h"
#include "uop/alu.h"
#include "uop/eval_tensor.h"
#include "uop/text.h"

enum { NBUF = 48 };

typedef struct Gen {
  Ctx *ctx;
  uint64_t rng;
  const UOp *buf[2];
} Gen;

static uint64_t rnd(Gen *g) {
  g->rng ^= g->rng << 13, g->rng ^= g->rng >> 7, g->rng ^= g->rng << 17;
  return g->rng;
}
static int pick(Gen *g, int n) { return (int)(rnd(g) % (uint64_t)n); }

static const UOp *node(Gen *g, Op op, const UOp *x, const int64_t *ints, uint32_t n, const char *name) {
  DType d = dt_is_ptr(x->dtype) ? dt_base(x->dtype) : x->dtype;
  return uj_uop_new(g->ctx, op, d, &x, 1, (Arg){name, ints, n});
}

/* A view of buffer b as a random shape of its 48 elements. */
static const UOp *view(Gen *g, int b) {
  static const int64_t shapes[][3] = {{48, 0, 0}, {6, 8, 0}, {4, 12, 0}, {2, 3, 8}, {4, 3, 4}, {3, 16, 0}};
  const int64_t *s = shapes[pick(g, 6)];
  uint32_t n = s[2] ? 3 : s[1] ? 2 : 1;
  return node(g, UJ_OP_RESHAPE, g->buf[b], s, n, NULL);
}

/* One random op on x (NULL when the pick does not apply). */
static const UOp *step(Gen *g, const UOp *x) {
  int64_t a[512];
  unsigned n = x->ndim;
  switch (pick(g, 7)) {
  case 0: { /* reshape to (count) or split the first axis */
    int64_t count = 1;
    for (unsigned k = 0; k < n; k++) count *= x->shape[k];
    if (count > 4096) return NULL;
    a[0] = count;
    return node(g, UJ_OP_RESHAPE, x, a, 1, NULL);
  }
  case 1: /* expand a new axis of 1 */
    if (n >= 4) return NULL;
    for (unsigned k = 0; k < n; k++) a[k] = x->shape[k];
    a[n] = 1;
    x = node(g, UJ_OP_RESHAPE, x, a, n + 1, NULL);
    a[n] = 1 + pick(g, 3);
    return node(g, UJ_OP_EXPAND, x, a, n + 1, NULL);
  case 2:
    for (unsigned k = 0; k < n; k++) a[k] = k;
    for (unsigned k = n; k > 1; k--) {
      unsigned j = (unsigned)pick(g, (int)k);
      int64_t t = a[k - 1];
      a[k - 1] = a[j], a[j] = t;
    }
    return node(g, UJ_OP_PERMUTE, x, a, n, NULL);
  case 3:
    a[0] = pick(g, (int)n);
    return node(g, UJ_OP_FLIP, x, a, 1, NULL);
  case 4:
    for (unsigned k = 0; k < n; k++) a[2 * k] = pick(g, 3), a[2 * k + 1] = pick(g, 2);
    return node(g, UJ_OP_PAD, x, a, 2 * n, NULL);
  case 5:
    for (unsigned k = 0; k < n; k++) {
      a[2 * k] = pick(g, (int)x->shape[k] > 1 ? 2 : 1);
      a[2 * k + 1] = x->shape[k] - pick(g, (int)(x->shape[k] - a[2 * k]));
    }
    return node(g, UJ_OP_SHRINK, x, a, 2 * n, NULL);
  default: {
    static const char *const ops[] = {"ADD", "MAX", "MUL"};
    a[0] = pick(g, (int)n);
    return node(g, UJ_OP_REDUCE, x, a, 1, ops[pick(g, 2)]);
  }
  }
}

static const UOp *chain(Gen *g) {
  const UOp *x = view(g, 0);
  for (int s = 0, steps = 1 + pick(g, 6); s < steps; s++) {
    const UOp *y = step(g, x);
    if (y) x = y;
  }
  if (pick(g, 2)) { /* an elementwise op with a view of the other buffer, made to x's shape */
    int64_t count = 1;
    for (unsigned k = 0; k < x->ndim; k++) count *= x->shape[k];
    if (count <= NBUF && count > 0) {
      int64_t lo_hi[2] = {0, count};
      const UOp *o = node(g, UJ_OP_SHRINK, g->buf[1], lo_hi, 2, NULL);
      o = node(g, UJ_OP_RESHAPE, o, x->shape, x->ndim, NULL);
      if (o) x = uop_binary(g->ctx, pick(g, 2) ? UJ_OP_ADD : UJ_OP_MUL, x, o);
    }
  }
  return x;
}

/* Rangeify x, compile, run; compare with eval_tensor. */
static bool check_chain(Ctx *ctx, const UOp *x, float *b0, float *b1, int i) {
  const UOp **bufs = NULL;
  size_t nbufs = 0;
  const UOp *k = rangeify_kernel(ctx, x, 32, &bufs, &nbufs);
  CHECK(k != NULL, "chain %d: rangeify: %s", i, uj_error(ctx));
  TensorBinding tb[2];
  for (size_t b = 0; b < nbufs; b++)
    tb[b] = (TensorBinding){bufs[b], bufs[b]->ints[0] == 0 ? b0 : b1, NBUF * sizeof(float)};
  TensorValue want = {0};
  bool ok = k && eval_tensor(ctx, x, tb, nbufs, &want);
  CHECK(!k || ok, "chain %d: eval_tensor: %s", i, uj_error(ctx));
  uj_program *p = ok ? uj_compile(ctx, k, "chain") : NULL;
  CHECK(!ok || p, "chain %d: compile: %s", i, uj_error(ctx));
  float *out = calloc(want.count + 1, sizeof *out);
  void *args[3] = {out, NULL, NULL};
  for (size_t b = 0; b < nbufs; b++) args[b + 1] = bufs[b]->ints[0] == 0 ? b0 : b1;
  if (p) ok = uj_run(p, args, 1 + nbufs, NULL, 0) == UJ_OK;
  size_t bad = want.count;
  for (size_t e = 0; p && ok && e < want.count; e++) {
    uint32_t bits;
    memcpy(&bits, &out[e], sizeof bits);
    if (word_from_mem_bits(UJ_FLOAT32, bits) != want.words[e]) {
      bad = e;
      break;
    }
  }
  bool same = p && ok && bad == want.count;
  if (p && !same) {
    char *tx = text_print(ctx, x), *tk = text_print(ctx, k);
    CHECK(same, "chain %d: element %zu differs\ntensor:\n%skernel:\n%s", i, bad, tx, tk);
    free(tx), free(tk);
  } else if (p) {
    CHECK(same, "chain %d", i);
  }
  uj_program_free(p);
  tensor_value_free(&want);
  free(out);
  free(bufs);
  return same;
}

static void test_random_chains(void) {
  const char *env = getenv("UJ_RANGEIFY_CHAINS");
  int chains = env ? atoi(env) : 400, failed = 0;
  float b0[NBUF], b1[NBUF];
  for (int i = 0; i < NBUF; i++) b0[i] = (float)(i * 7 % 13) - 6.5f, b1[i] = (float)i / 3.0f;
  Ctx *ctx = uj_ctx_new();
  DType pf = uj_dtype_ptr(UJ_FLOAT32, 1, UJ_AS_GLOBAL);
  Gen g = {ctx, 0x2545f4914f6cdd1dull, {NULL, NULL}};
  for (int b = 0; b < 2; b++)
    g.buf[b] = uj_uop_new(ctx, UJ_OP_BUFFER, pf, NULL, 0, (Arg){"CPU", (int64_t[]){b, NBUF}, 2});
  for (int i = 0; i < chains && failed < 3; i++)
    if (!check_chain(ctx, chain(&g), b0, b1, i)) failed++;
  printf("test_rangeify: %d random chains\n", chains);
  uj_ctx_free(ctx);
}

/* The index of a transpose: no division or modulo left. */
static void test_transpose_index(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *t = uj_parse(ctx, "(PERMUTE 1 0 (RESHAPE 4 8 (BUFFER:float32* 0 32 CPU)))", "t");
  const UOp **bufs = NULL;
  size_t n = 0;
  const UOp *k = t ? rangeify_kernel(ctx, t, 32, &bufs, &n) : NULL;
  char *text = k ? text_print(ctx, k) : NULL;
  CHECK(text && !strstr(text, "IDIV") && !strstr(text, "MOD") && n == 1,
        "transpose: %s", text ? text : uj_error(ctx));
  free(text);
  free(bufs);
  /* axes of size 1 need no loop, and a reduction over them no REDUCE */
  t = uj_parse(ctx, "(REDUCE MAX 0 (RESHAPE 1 8 (BUFFER:float32* 0 8 CPU)))", "t");
  k = t ? rangeify_kernel(ctx, t, 32, &bufs, &n) : NULL;
  text = k ? text_print(ctx, k) : NULL;
  CHECK(text && !strstr(text, "REDUCE") && !strstr(text, "(CONST:int32 1))"), "size-1 axes: %s",
        text ? text : uj_error(ctx));
  free(text);
  free(bufs);
  uj_ctx_free(ctx);
}

int main(void) {
  test_transpose_index();
  test_random_chains();
  return check_report("test_rangeify");
}
