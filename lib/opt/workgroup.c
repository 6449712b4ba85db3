/* workgroup.c — a GPU kernel's reduction as a workgroup (opt.h,
 * docs/opt.md "GPU kernels").
 *
 * In: a kernel for a target with workgroups: a nest of single-effect
 * loops around one STORE whose value reads one REDUCE over one RANGE of
 * constant bound B (a row sum, a row max, a GEMV row). Out, when there are
 * too few outputs to give each its own thread (fewer than cores x
 * max_threads) and B is at least a warp: each output is a workgroup of T
 * threads (a power of 2, at most 256 and B); thread l reduces the
 * elements l, l + T, l + 2T, ... (adjacent threads, adjacent elements),
 * stores its partial in a `local` ALLOC, and a tree halves the partials
 * behind a BARRIER a level; thread 0 stores the output. The loops around
 * become `global` (block ids on a GPU). A float ADD is regrouped, so the
 * result is correct within the evaluator's bound (docs/semantics.md,
 * "Reassociation"); MAX and ints give the same words. The evaluator runs
 * the kernel as it will run on the GPU, race checks included. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

enum { MAX_NEST = 8, MAX_GROUP_THREADS = 256 };

/* The nest: its ENDs outermost first, the STORE, the one REDUCE its value
 * reads; false when the kernel is not such a nest. */
static bool find_nest(Ctx *ctx, const UOp *kernel, const UOp **ends, size_t *nends, const UOp **store,
                      const UOp **reduce) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  *nends = 0;
  while (e && e->op == UJ_OP_END && e->nsrc == 2 && *nends < MAX_NEST) {
    AxisKind k = range_kind(e->src[0]);
    if (k != AXIS_LOOP && k != AXIS_GLOBAL) return false;
    ends[(*nends)++] = e;
    e = e->src[1];
  }
  if (!e || e->op != UJ_OP_STORE || e->src[1]->dtype.lanes != 1) return false;
  *store = e;
  const UOp **reads = NULL;
  size_t n = opt_reduces_read(ctx, e->src[1], true, &reads);
  const UOp *r = n == 1 ? reads[0] : NULL;
  free(reads);
  if (!r || r->nsrc != 2 || range_kind(r->src[1]) != AXIS_REDUCE || opt_const_bound(r->src[1]) <= 0) return false;
  Op op = opt_reduce_op(r);
  if (op != UJ_OP_ADD && op != UJ_OP_MAX && op != UJ_OP_MUL && op != UJ_OP_MULACC) return false;
  *reduce = r;
  return true;
}

/* Outputs of the nest: its loops' iterations (their bounds' maxima). */
static int64_t outputs_of(const UOp *const *ends, size_t n) {
  int64_t outputs = 1;
  for (size_t i = 0; i < n; i++) {
    const UOp *b = ends[i]->src[0]->src[0];
    int64_t hi = b->bounded ? b->vmax : INT64_MAX;
    if (hi < 1) hi = 1;
    if (__builtin_mul_overflow(outputs, hi, &outputs)) return INT64_MAX;
  }
  return outputs;
}

static const UOp *load(Ctx *ctx, const UOp *p) {
  return p ? uop_new(ctx, UJ_OP_LOAD, dt_base(p->dtype), &p, 1, arg_none()) : NULL;
}

static const UOp *local_at(Ctx *ctx, const UOp *mem, const UOp *at, const UOp *gate) {
  const UOp *src[3] = {mem, at, gate};
  return uop_new(ctx, UJ_OP_INDEX, mem->dtype, src, gate ? 3 : 2, arg_none());
}

/* The workgroup's END: partials, the tree, thread 0's STORE. */
static const UOp *group_end(Ctx *ctx, const UOp *kernel, const UOp *store, const UOp *reduce, int64_t threads) {
  const UOp *r = reduce->src[1];
  DType d = reduce->dtype, i = r->dtype;
  int64_t b = opt_const_bound(r), steps = (b + threads - 1) / threads, axis = opt_next_axis(ctx, kernel);
  Op op = opt_reduce_op(reduce);
  const UOp *l = uop_new(ctx, UJ_OP_RANGE, i, (const UOp *[]){uop_const_int(ctx, i, threads)}, 1,
                         (Arg){"local", (int64_t[]){axis}, 1});
  const UOp *k = uop_new(ctx, UJ_OP_RANGE, i, (const UOp *[]){uop_const_int(ctx, i, steps)}, 1,
                         (Arg){"reduce", (int64_t[]){axis + 1}, 1});
  const UOp *at = uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, k, uop_const_int(ctx, i, threads)), l);
  const UOp *in = b % threads ? uop_binary(ctx, UJ_OP_CMPLT, at, uop_const_int(ctx, i, b)) : NULL;
  /* the last step's threads past the end read element 0 and add the identity */
  const UOp *safe = in ? uop_ternary(ctx, UJ_OP_WHERE, in, at, uop_const_int(ctx, i, 0)) : at;
  const UOp *v = opt_substitute(ctx, reduce->src[0], &r, &safe, 1);
  if (v && in)
    v = uop_ternary(ctx, UJ_OP_WHERE, in, v,
                    uop_const_word(ctx, d, alu_identity(op == UJ_OP_MULACC ? UJ_OP_ADD : op, (uj_scalar)d.scalar)));
  const UOp *partial = v ? uop_new(ctx, UJ_OP_REDUCE, d, (const UOp *[]){v, k}, 2, (Arg){reduce->name, NULL, 0}) : NULL;
  const UOp *s = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)d.scalar, 1, UJ_AS_LOCAL), NULL, 0, (Arg){NULL, (int64_t[]){opt_next_alloc_id(ctx, kernel), threads}, 2});
  if (!partial || !s) return NULL;
  const UOp *effects[2 * 8 + 2];
  size_t n = 0;
  const UOp *barrier = uop_new(ctx, UJ_OP_BARRIER, dt_scalar(UJ_VOID), NULL, 0, arg_none());
  effects[n++] = uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){local_at(ctx, s, l, NULL), partial}, 2, arg_none());
  for (int64_t stride = threads / 2; stride >= 1 && effects[n - 1]; stride /= 2) {
    const UOp *gate = uop_binary(ctx, UJ_OP_CMPLT, l, uop_const_int(ctx, i, stride));
    const UOp *mine = local_at(ctx, s, l, gate);
    const UOp *other = local_at(ctx, s, uop_binary(ctx, UJ_OP_ADD, l, uop_const_int(ctx, i, stride)), gate);
    const UOp *sum = opt_reduce_step(ctx, op, load(ctx, mine), load(ctx, other));
    effects[n++] = barrier;
    effects[n++] = sum ? uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){mine, sum}, 2, arg_none()) : NULL;
  }
  /* thread 0 reads the total (its own store: no BARRIER) and stores the output */
  const UOp *first = uop_binary(ctx, UJ_OP_CMPEQ, l, uop_const_int(ctx, i, 0));
  const UOp *total = load(ctx, local_at(ctx, s, uop_const_int(ctx, i, 0), first));
  const UOp *value = opt_substitute(ctx, store->src[1], &reduce, &total, 1);
  const UOp *p = store->src[0];
  const UOp *gated = p->op == UJ_OP_INDEX && p->nsrc == 3
                         ? local_at(ctx, p->src[0], p->src[1], uop_binary(ctx, UJ_OP_AND, p->src[2], first))
                     : p->op == UJ_OP_INDEX ? local_at(ctx, p->src[0], p->src[1], first)
                                            : local_at(ctx, p, uop_const_int(ctx, i, 0), first);
  effects[n++] = value && gated ? uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){gated, value}, 2, arg_none()) : NULL;
  for (size_t e = 0; e < n; e++)
    if (!effects[e]) return NULL;
  const UOp *src[2 * 8 + 3] = {l};
  for (size_t e = 0; e < n; e++) src[e + 1] = effects[e];
  return uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), src, (uint32_t)n + 1, arg_none());
}

const UOp *opt_workgroup(Ctx *ctx, const UOp *kernel, const TargetDesc *t) {
  const UOp *ends[MAX_NEST], *store = NULL, *reduce = NULL;
  size_t nends = 0;
  if (t->kind != TARGET_DESC_GPU || !find_nest(ctx, kernel, ends, &nends, &store, &reduce)) return kernel;
  int64_t b = opt_const_bound(reduce->src[1]), threads = 1;
  while (threads * 2 <= b && threads * 2 <= MAX_GROUP_THREADS && threads * 2 <= (int64_t)t->max_threads) threads *= 2;
  if (threads < (int64_t)t->warp || outputs_of(ends, nends) >= (int64_t)t->cores * t->max_threads) return kernel;
  const UOp *inner = group_end(ctx, kernel, store, reduce, threads);
  for (size_t e = nends; inner && e-- > 0;) { /* the loops around: block ids */
    const UOp *r = ends[e]->src[0];
    const UOp *g = e < 3 ? uop_new(ctx, UJ_OP_RANGE, r->dtype, r->src, 1, (Arg){"global", r->ints, r->nints}) : r;
    const UOp *body = g == r ? inner : opt_substitute(ctx, inner, &r, &g, 1);
    inner = body ? uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){g, body}, 2, arg_none()) : NULL;
  }
  return inner ? uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &inner, 1, arg_none()) : NULL;
}
