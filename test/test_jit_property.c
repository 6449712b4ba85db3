/* test_jit_property.c — thousands of random kernels through the CPU JIT,
 * diffed with the evaluator (bit-exact: no transcendental functions).
 *
 * Each kernel: 0, 1 or 2 nested RANGE loops (constant or variable bounds),
 * or a triangular loop run by two sibling ENDs of one RANGE with a STORE
 * after them, reached twice (shape()); over buffers of float32, int32,
 * int8, uint16, float64; random expressions (ALU ops, casts, compares under
 * WHERE, gated loads with an alternative, shared subexpressions) stored to
 * outputs at the loops' flat index. UJ_PROPERTY_KERNELS sets how many (default 1500). A failure
 * prints the seed and the kernel. */
#include "jit_util.h"

enum { N = 6, M = 5, POOL = 16 };

typedef struct Gen {
  Ctx *ctx;
  uint64_t rng;
  const UOp *idx, *pool[POOL];
  int npool;
} Gen;

static const uj_scalar scalars[] = {UJ_FLOAT32, UJ_INT32, UJ_INT8, UJ_UINT16, UJ_FLOAT64};
enum { NSCALARS = 5 };

static uint64_t rnd(Gen *g) {
  g->rng ^= g->rng << 13, g->rng ^= g->rng >> 7, g->rng ^= g->rng << 17;
  return g->rng;
}
static int pick(Gen *g, int n) { return (int)(rnd(g) % (uint64_t)n); }

static const UOp *param(Gen *g, int slot, uj_scalar s) {
  int64_t v = slot;
  return uop_new(g->ctx, UJ_OP_PARAM, uj_dtype_ptr(s, 1, UJ_AS_GLOBAL), NULL, 0, (Arg){NULL, &v, 1});
}

static const UOp *cst(Gen *g, uj_scalar s) {
  static const double v[] = {0, 1, -1, 2, 3, 0.5, 7, -100, 1e9, 255};
  double x = v[pick(g, 10)];
  if (scalar_table[s].is_float) return uop_const_word(g->ctx, dt_scalar(s), word_from_double(s, x));
  return uop_const_int(g->ctx, dt_scalar(s), (int64_t)x);
}

/* A load of input slot 1 + s at the flat index, gated half the time. */
static const UOp *load(Gen *g, int s) {
  Ctx *ctx = g->ctx;
  const UOp *p = param(g, 1 + s, scalars[s]);
  DType d = dt_scalar(scalars[s]);
  if (pick(g, 2)) {
    const UOp *ix = uop_binary(ctx, UJ_OP_INDEX, p, g->idx);
    return uop_new(ctx, UJ_OP_LOAD, d, &ix, 1, arg_none());
  }
  const UOp *gate = uop_binary(ctx, UJ_OP_CMPLT, g->idx, uop_const_int(ctx, g->idx->dtype, pick(g, N * M)));
  const UOp *ix = uop_new(ctx, UJ_OP_INDEX, p->dtype, (const UOp *[]){p, g->idx, gate}, 3, arg_none());
  return uop_new(ctx, UJ_OP_LOAD, d, (const UOp *[]){ix, cst(g, scalars[s])}, 2, arg_none());
}

static const UOp *gen(Gen *g, int s, int depth);

static const UOp *leaf(Gen *g, int s) {
  int k = pick(g, 4);
  if (k == 0) return cst(g, scalars[s]);
  if (k == 1 && g->npool) {
    const UOp *u = g->pool[pick(g, g->npool)];
    if (u->dtype.scalar == scalars[s]) return u;
  }
  return load(g, s);
}

static const UOp *gen(Gen *g, int s, int depth) {
  Ctx *ctx = g->ctx;
  uj_scalar sc = scalars[s];
  if (depth == 0) return leaf(g, s);
  bool is_float = scalar_table[sc].is_float;
  static const Op fops[] = {UJ_OP_ADD, UJ_OP_SUB, UJ_OP_MUL, UJ_OP_FDIV, UJ_OP_MAX};
  static const Op iops[] = {UJ_OP_ADD, UJ_OP_SUB, UJ_OP_MUL, UJ_OP_IDIV, UJ_OP_MOD, UJ_OP_MAX,
                            UJ_OP_AND, UJ_OP_OR,  UJ_OP_XOR, UJ_OP_SHL,  UJ_OP_SHR};
  const UOp *u;
  switch (pick(g, 6)) {
  case 0: { /* cast from another dtype */
    int from = pick(g, NSCALARS);
    u = uop_new(ctx, UJ_OP_CAST, dt_scalar(sc), (const UOp *[]){gen(g, from, depth - 1)}, 1, arg_none());
    break;
  }
  case 1: { /* WHERE on a compare */
    int cs = pick(g, NSCALARS);
    static const Op cmps[] = {UJ_OP_CMPLT, UJ_OP_CMPNE, UJ_OP_CMPEQ};
    const UOp *c = uop_binary(ctx, cmps[pick(g, 3)], gen(g, cs, depth - 1), gen(g, cs, depth - 1));
    c = uop_new(ctx, c->op, dt_scalar(UJ_BOOL), c->src, 2, arg_none());
    u = uop_ternary(ctx, UJ_OP_WHERE, c, gen(g, s, depth - 1), gen(g, s, depth - 1));
    u = uop_new(ctx, UJ_OP_WHERE, dt_scalar(sc), u->src, 3, arg_none());
    break;
  }
  case 2:
    u = uop_ternary(ctx, UJ_OP_MULACC, gen(g, s, depth - 1), gen(g, s, depth - 1), gen(g, s, depth - 1));
    break;
  case 3:
    u = is_float && pick(g, 2) ? uop_unary(ctx, pick(g, 2) ? UJ_OP_SQRT : UJ_OP_RECIP, gen(g, s, depth - 1))
                               : uop_unary(ctx, UJ_OP_NEG, gen(g, s, depth - 1));
    break;
  default: {
    Op op = is_float ? fops[pick(g, 5)] : iops[pick(g, 11)];
    u = uop_binary(ctx, op, gen(g, s, depth - 1), gen(g, s, depth - 1));
  }
  }
  if (g->npool < POOL) g->pool[g->npool++] = u;
  return u;
}

static const UOp *range(Gen *g, int axis, int64_t n, bool variable) {
  DType i32 = dt_scalar(UJ_INT32);
  const UOp *bound = variable ? uop_new(g->ctx, UJ_OP_DEFINE_VAR, i32, NULL, 0, (Arg){"n", (int64_t[]){0, N}, 2})
                              : uop_const_int(g->ctx, i32, n);
  int64_t a = axis;
  return uop_new(g->ctx, UJ_OP_RANGE, i32, &bound, 1, (Arg){pick(g, 2) ? "loop" : "global", &a, 1});
}

static const UOp *void2(Ctx *ctx, Op op, const UOp *a, const UOp *b) {
  return uop_new(ctx, op, dt_scalar(UJ_VOID), (const UOp *[]){a, b}, 2, arg_none());
}

/* The loop structure around the stores, one of four shapes:
 *  0-2: 0, 1 or 2 nested loops, one STORE to slot 0 at the flat index;
 *  3:   a triangular inner loop (bound r0) run twice, by two sibling
 *       ENDs of one RANGE, the second storing another value to slot 6, the
 *       outer END reached twice from the SINK, and a STORE after the inner
 *       loops. Values shared between the loops are re-emitted as needed. */
static const UOp *shape(Gen *g, int loops, bool variable, int out, int *nstore_slots) {
  Ctx *ctx = g->ctx;
  DType i32 = dt_scalar(UJ_INT32);
  const UOp *m = uop_const_int(ctx, i32, M);
  const UOp *r0 = loops ? range(g, 0, N, variable) : NULL;
  const UOp *r1 = NULL;
  if (loops == 2) r1 = range(g, 1, M, false);
  if (loops == 3) { /* r1 < r0 < N: r1 <= N - 2 < M; zero steps when r0 = 0 */
    int64_t axis = 1;
    r1 = uop_new(ctx, UJ_OP_RANGE, i32, &r0, 1, (Arg){"loop", &axis, 1});
  }
  g->idx = !loops ? uop_const_int(ctx, i32, pick(g, N)) : !r1 ? r0 : uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, r0, m), r1);
  g->npool = 0;
  const UOp *st = void2(ctx, UJ_OP_STORE, uop_binary(ctx, UJ_OP_INDEX, param(g, 0, scalars[out]), g->idx),
                        gen(g, out, 1 + pick(g, 4)));
  *nstore_slots = 1;
  if (loops < 3) {
    if (r1) st = void2(ctx, UJ_OP_END, r1, st);
    return r0 ? void2(ctx, UJ_OP_END, r0, st) : st;
  }
  *nstore_slots = 2;
  const UOp *st6 = void2(ctx, UJ_OP_STORE, uop_binary(ctx, UJ_OP_INDEX, param(g, 1 + NSCALARS, scalars[out]), g->idx),
                         gen(g, out, 1 + pick(g, 3)));
  g->idx = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, r0, m), uop_const_int(ctx, i32, M - 1));
  g->npool = 0; /* the pool's values may depend on r1, closed here */
  const UOp *after = void2(ctx, UJ_OP_STORE, uop_binary(ctx, UJ_OP_INDEX, param(g, 0, scalars[out]), g->idx),
                           gen(g, out, 1 + pick(g, 3)));
  const UOp *body[3] = {void2(ctx, UJ_OP_END, r1, st), void2(ctx, UJ_OP_END, r1, st6), after};
  const UOp *outer = uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){r0, body[0], body[1], body[2]}, 4, arg_none());
  return uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), (const UOp *[]){outer, outer}, 2, arg_none());
}

/* One random kernel and its buffers; returns the kernel. */
static const UOp *kernel(Gen *g, JitBuffers *b, bool *uses_var) {
  Ctx *ctx = g->ctx;
  int loops = pick(g, 4), out = pick(g, NSCALARS), nstores;
  bool variable = (loops == 1 || loops == 2) && pick(g, 3) == 0;
  const UOp *st = shape(g, loops, variable, out, &nstores);
  b->n = 1 + NSCALARS + (nstores > 1);
  for (int i = 0; i < b->n; i++) {
    uj_scalar s = scalars[i == 0 || i > NSCALARS ? out : i - 1];
    b->dtype[i] = dt_scalar(s), b->count[i] = N * M;
    size_t bytes = N * M * elem_bytes(b->dtype[i]);
    b->init[i] = malloc(bytes);
    for (size_t k = 0; k < N * M; k++) {
      double x = (double)(int64_t)(rnd(g) % 2001) / 8.0 - 125.0;
      uint64_t w = scalar_table[s].is_float ? word_from_double(s, x) : word_from_int(s, (int64_t)x * 3);
      uint64_t bits = word_to_mem_bits(s, w);
      memcpy(b->init[i] + k * elem_bytes(b->dtype[i]), &bits, elem_bytes(b->dtype[i]));
    }
  }
  *uses_var = variable;
  return st->op == UJ_OP_SINK ? st : uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &st, 1, arg_none());
}

int main(void) {
  const char *env = getenv("UJ_PROPERTY_KERNELS");
  int count = env ? atoi(env) : 1500;
  Ctx *ctx = uj_ctx_new();
  int failed = 0;
  for (int i = 0; i < count && failed < 5; i++) {
    Gen g = {ctx, 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1), NULL, {0}, 0};
    JitBuffers b;
    bool uses_var;
    const UOp *k = kernel(&g, &b, &uses_var);
    const char *names[1] = {"n"};
    int64_t n = (int64_t)(rnd(&g) % (N + 1));
    char what[64];
    snprintf(what, sizeof what, "random kernel %d", i);
    if (!jit_vs_eval(ctx, k, &b, names, &n, uses_var ? 1 : 0, 0, what)) failed++;
    for (int s = 0; s < b.n; s++) free(b.init[s]);
  }
  printf("test_jit_property: %d kernels\n", count);
  uj_ctx_free(ctx);
  return check_report("test_jit_property");
}
