/* workgroup.c — a GPU kernel's rows as workgroups (opt.h, docs/opt.md
 * "GPU kernels").
 *
 * In: a kernel for a target with workgroups: a nest of single-effect loops
 * around either one STORE (a row's value: a row sum, a row max, a GEMV
 * row) or one loop over a row's outputs (a softmax, a layernorm: the
 * values of a row's elements), whose value reads REDUCEs, each over one
 * RANGE of constant bound, none of them over the row's output loop (they
 * may read each other: a softmax's sum reads its max). Out, when there are
 * too few rows to give each its own thread (fewer than cores x
 * max_threads), the longest bound is at least a warp, and the threads of
 * a row would read adjacent elements (not a GEMV's column: reads_across)
 * each row is a
 * workgroup of T threads (a power of 2, at most 256 and the longest
 * bound). Per REDUCE, sources first: thread l reduces the elements l,
 * l + T, l + 2T, ... (adjacent threads, adjacent elements), stores its
 * partial in a `local` ALLOC of its own, a tree halves the partials behind
 * a BARRIER a level, and after one more BARRIER every thread reads the
 * total (the REDUCEs that read it, and the outputs, use that). A single
 * STORE is thread 0's; a row's outputs are shared out like the elements
 * (output l, l + T, ...). The loops around become `global` (block ids on
 * a GPU). A float ADD is regrouped, so the result is correct within the
 * evaluator's bound (docs/semantics.md, "Reassociation"); MAX and ints
 * give the same words. The evaluator runs the kernel as it will run on
 * the GPU, race checks included. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/alu.h"

enum { MAX_NEST = 8, MAX_GROUP_THREADS = 256, MAX_REDUCES = 8 };
enum { MAX_ROW_OUTPUTS = MAX_GROUP_THREADS * 64 }; /* a row's outputs a workgroup writes, at most */
/* a REDUCE's effects: its partial, 2 a tree level (8 levels at most), a BARRIER; the row's scalars; the outputs */
enum { MAX_PARTS = 16, MAX_EFFECTS = MAX_REDUCES * (2 * 8 + 2) + MAX_PARTS + 1 };

/* Nodes of the pass's own, NULL when a source is (out of memory). */
static const UOp *bin(Ctx *ctx, Op op, const UOp *a, const UOp *b) { return a && b ? uop_binary(ctx, op, a, b) : NULL; }
static const UOp *where3(Ctx *ctx, const UOp *c, const UOp *a, const UOp *b) {
  return c && a && b ? uop_ternary(ctx, UJ_OP_WHERE, c, a, b) : NULL;
}

typedef struct Rows {
  const UOp *ends[MAX_NEST]; /* the loops around the rows, outermost first */
  size_t nends;
  const UOp *outputs;        /* END(j, STORE) over a row's outputs, or NULL: one STORE a row */
  const UOp *store;
  const UOp *reduces[MAX_REDUCES]; /* every REDUCE the value reads, sources first */
  size_t nreduces;
} Rows;

static bool reduce_ok(const UOp *r) {
  Op op = opt_reduce_op(r);
  return r->nsrc == 2 && r->dtype.lanes == 1 && range_kind(r->src[1]) == AXIS_REDUCE && opt_const_bound(r->src[1]) > 0 &&
         (op == UJ_OP_ADD || op == UJ_OP_MAX || op == UJ_OP_MUL || op == UJ_OP_MULACC);
}

/* The REDUCEs v reads (at any depth) into w, sources first; false when
 * there are none, too many, or one is not a row's. */
static bool row_reduces(Ctx *ctx, const UOp *v, Rows *w) {
  const UOp **reads = NULL;
  size_t n = opt_reduces_read(ctx, v, true, &reads);
  bool ok = n > 0 && n <= MAX_REDUCES;
  if (ok) qsort(reads, n, sizeof *reads, uop_cmp_id);
  for (size_t i = 0; ok && i < n; i++) ok = reduce_ok(reads[i]), w->reduces[i] = reads[i];
  w->nreduces = ok ? n : 0;
  free(reads);
  return ok;
}

/* The nest: its ENDs outermost first, then a STORE or a row's output loop
 * (an innermost END whose RANGE no REDUCE of the value reads), and the
 * REDUCEs; false when the kernel is not such a nest. */
static bool find_rows(Ctx *ctx, const UOp *kernel, Rows *w) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  *w = (Rows){0};
  while (e && e->op == UJ_OP_END && e->nsrc == 2 && w->nends < MAX_NEST) {
    AxisKind k = range_kind(e->src[0]);
    if (k != AXIS_LOOP && k != AXIS_GLOBAL) return false;
    w->ends[w->nends++] = e;
    e = e->src[1];
  }
  if (!e || e->op != UJ_OP_STORE || e->src[1]->dtype.lanes != 1 || !row_reduces(ctx, e->src[1], w)) return false;
  w->store = e;
  const UOp *last = w->nends ? w->ends[w->nends - 1] : NULL, *j = last ? last->src[0] : NULL;
  bool free_of_j = j && opt_const_bound(j) > 0;
  for (size_t i = 0; free_of_j && i < w->nreduces; i++) free_of_j = !opt_contains(ctx, w->reduces[i], j);
  if (free_of_j) w->outputs = last, w->nends--;
  for (size_t a = 0; a < w->nreduces; a++) /* one REDUCE inside another's loop (reading its RANGE): not a row's */
    for (size_t b = 0; b < w->nreduces; b++)
      if (a != b && opt_depends(ctx, w->reduces[a], w->reduces[b]->src[1])) return false;
  DType i = w->reduces[0]->src[1]->dtype; /* one index type for the threads' arithmetic */
  bool same = !w->outputs || w->outputs->src[0]->dtype.scalar == i.scalar;
  for (size_t r = 1; same && r < w->nreduces; r++) same = w->reduces[r]->src[1]->dtype.scalar == i.scalar;
  return same;
}

/* Whether threads stepping along a REDUCE's range would read memory
 * apart while the rows' innermost loop reads it contiguously: a GEMV, a
 * column sum (x[k * N + j] reduced over k). A thread a row is coalesced
 * there (adjacent threads, adjacent elements), a workgroup a row is not:
 * each of its threads would read its own cache line. */
static bool reads_across(Ctx *ctx, const Rows *w) {
  const UOp *j = w->nends ? w->ends[w->nends - 1]->src[0] : NULL;
  for (size_t r = 0; j && r < w->nreduces; r++) {
    const UOp *k = w->reduces[r]->src[1], **nodes = NULL;
    size_t n = uop_toposort(ctx, w->reduces[r]->src[0], &nodes);
    bool across = false;
    for (size_t i = 0; i < n && !across; i++) {
      const UOp *u = nodes[i];
      if (u->op != UJ_OP_INDEX || !dt_is_ptr(u->src[0]->dtype) || !opt_contains(ctx, u->src[1], k)) continue;
      across = opt_stride_along(ctx, u->src[1], k) != 1 && opt_stride_along(ctx, u->src[1], j) == 1;
    }
    free(nodes);
    if (across) return true;
  }
  return false;
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
  return mem && at ? uop_new(ctx, UJ_OP_INDEX, mem->dtype, src, gate ? 3 : 2, arg_none()) : NULL;
}

/* local_at with a gate that must be there: NULL when it is not (out of
 * memory), never an ungated INDEX. */
static const UOp *gated_at(Ctx *ctx, const UOp *mem, const UOp *at, const UOp *gate) {
  return gate ? local_at(ctx, mem, at, gate) : NULL;
}

static const UOp *store_of(Ctx *ctx, const UOp *p, const UOp *v) {
  return p && v ? uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){p, v}, 2, arg_none()) : NULL;
}

/* p (an INDEX, or a pointer: its element 0) gated by g as well. */
static const UOp *gated(Ctx *ctx, const UOp *p, const UOp *g, DType i) {
  if (p->op != UJ_OP_INDEX) return gated_at(ctx, p, uop_const_int(ctx, i, 0), g);
  return gated_at(ctx, p->src[0], p->src[1], p->nsrc == 3 ? bin(ctx, UJ_OP_AND, p->src[2], g) : g);
}

typedef struct Group {
  Ctx *ctx;
  const UOp *l;                   /* the thread's RANGE */
  int64_t threads, axis, alloc;   /* T; the next axis number and ALLOC id */
  const UOp *from[MAX_REDUCES + 1], *to[MAX_REDUCES + 1]; /* REDUCEs done: their totals */
  size_t ndone;
  const UOp **effects;
  size_t n;
} Group;

/* Element k * T + l of a RANGE of bound b as the thread's k-th: its index
 * (0 past the end) and whether it is in (NULL: always). */
static const UOp *strided(Group *g, const UOp *k, int64_t b, const UOp **in) {
  DType i = g->l->dtype;
  const UOp *at = bin(g->ctx, UJ_OP_ADD, bin(g->ctx, UJ_OP_MUL, k, uop_const_int(g->ctx, i, g->threads)), g->l);
  bool past = b % g->threads != 0; /* the last step's threads past the end */
  *in = past ? bin(g->ctx, UJ_OP_CMPLT, at, uop_const_int(g->ctx, i, b)) : NULL;
  return past ? where3(g->ctx, *in, at, uop_const_int(g->ctx, i, 0)) : at;
}

static const UOp *new_range(Group *g, DType i, const char *kind, int64_t bound) {
  return uop_new(g->ctx, UJ_OP_RANGE, i, (const UOp *[]){uop_const_int(g->ctx, i, bound)}, 1, (Arg){kind, (int64_t[]){g->axis++}, 1});
}

/* REDUCE r by the workgroup: partials, the tree, a BARRIER; the total,
 * read by every thread, replaces r from here on. alone: only thread 0
 * reads it (the row's one STORE): no BARRIER, its own store. */
static bool group_reduce(Group *g, const UOp *reduce, bool alone) {
  Ctx *ctx = g->ctx;
  const UOp *r = reduce->src[1];
  DType d = reduce->dtype, i = g->l->dtype;
  int64_t b = opt_const_bound(r);
  Op op = opt_reduce_op(reduce);
  const UOp *k = new_range(g, i, "reduce", (b + g->threads - 1) / g->threads), *in = NULL;
  const UOp *at = k ? strided(g, k, b, &in) : NULL;
  g->from[g->ndone] = r, g->to[g->ndone] = at; /* the REDUCEs done, then r */
  const UOp *v = at ? opt_substitute(ctx, reduce->src[0], g->from, g->to, g->ndone + 1) : NULL;
  if (v && in) /* the last step's threads past the end read element 0 and add the identity */
    v = where3(ctx, in, v,
                    uop_const_word(ctx, d, alu_identity(op == UJ_OP_MULACC ? UJ_OP_ADD : op, (uj_scalar)d.scalar)));
  const UOp *partial = v ? uop_new(ctx, UJ_OP_REDUCE, d, (const UOp *[]){v, k}, 2, (Arg){reduce->name, NULL, 0}) : NULL;
  const UOp *s = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)d.scalar, 1, UJ_AS_LOCAL), NULL, 0,
                         (Arg){NULL, (int64_t[]){g->alloc++, g->threads}, 2});
  const UOp *barrier = uop_new(ctx, UJ_OP_BARRIER, dt_scalar(UJ_VOID), NULL, 0, arg_none());
  if (!partial || !s || !barrier) return false;
  g->effects[g->n++] = store_of(ctx, local_at(ctx, s, g->l, NULL), partial);
  for (int64_t stride = g->threads / 2; stride >= 1; stride /= 2) {
    const UOp *gate = bin(ctx, UJ_OP_CMPLT, g->l, uop_const_int(ctx, i, stride));
    const UOp *mine = gated_at(ctx, s, g->l, gate);
    const UOp *other = gated_at(ctx, s, bin(ctx, UJ_OP_ADD, g->l, uop_const_int(ctx, i, stride)), gate);
    g->effects[g->n++] = barrier;
    g->effects[g->n++] = store_of(ctx, mine, opt_reduce_step(ctx, op, load(ctx, mine), load(ctx, other)));
  }
  const UOp *first = alone ? bin(ctx, UJ_OP_CMPEQ, g->l, uop_const_int(ctx, i, 0)) : NULL;
  if (!alone) g->effects[g->n++] = barrier; /* the total, s[0], is then every thread's to read */
  g->from[g->ndone] = reduce;
  g->to[g->ndone] = load(ctx, alone ? gated_at(ctx, s, uop_const_int(ctx, i, 0), first) : local_at(ctx, s, uop_const_int(ctx, i, 0), NULL));
  g->ndone++;
  return g->effects[g->n - (alone ? 1 : 2)] && g->to[g->ndone - 1];
}

/* The row's scalars: each largest part of the output value that does not
 * read the output loop's RANGE and holds a REDUCE, other than a REDUCE
 * itself (a layernorm's 1 / sqrt(var + eps)): each thread stores it once
 * in a `reg` ALLOC of one element before the output loop, which reads it
 * back (opt_hoist does the same on the CPU); *v the value reading them.
 * Bit for bit the same operations on the same values. */
static bool hoist_row_scalars(Group *g, const Rows *w, const UOp **v) {
  Ctx *ctx = g->ctx;
  const UOp *parts[MAX_PARTS], *from[MAX_PARTS], *to[MAX_PARTS];
  int m = opt_loop_free_parts(ctx, *v, w->outputs->src[0], parts, MAX_PARTS);
  if (m == -2) return false;
  size_t nparts = 0;
  bool ok = true;
  for (int p = 0; ok && p < m; p++) {
    const UOp *u = parts[p];
    if (u->op == UJ_OP_REDUCE) continue; /* its total is read as it is */
    const UOp *t = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)u->dtype.scalar, u->dtype.lanes, UJ_AS_REG), NULL, 0,
                           (Arg){NULL, (int64_t[]){g->alloc++, 1}, 2});
    const UOp *slot = t ? local_at(ctx, t, uop_const_int(ctx, g->l->dtype, 0), NULL) : NULL;
    const UOp *value = slot ? opt_substitute(ctx, u, g->from, g->to, g->ndone) : NULL;
    g->effects[g->n++] = store_of(ctx, slot, value);
    from[nparts] = u, to[nparts++] = load(ctx, slot);
    ok = g->effects[g->n - 1] && to[nparts - 1];
  }
  const UOp *hoisted = ok && nparts ? opt_substitute(ctx, *v, from, to, nparts) : *v;
  /* then the REDUCEs the value still reads directly: their totals */
  *v = ok && hoisted ? opt_substitute(ctx, hoisted, g->from, g->to, g->ndone) : NULL;
  return *v != NULL;
}

/* The workgroup's END: each REDUCE, then thread 0's STORE or the row's
 * outputs shared out. */
static const UOp *group_end(Ctx *ctx, const UOp *kernel, const Rows *w, int64_t threads) {
  const UOp *effects[MAX_EFFECTS];
  Group g = {ctx, NULL, threads, opt_next_axis(ctx, kernel), opt_next_alloc_id(ctx, kernel), {0}, {0}, 0, effects, 0};
  g.l = new_range(&g, w->reduces[0]->src[1]->dtype, "local", threads); /* the index type of the REDUCEs' RANGEs */
  for (size_t r = 0; g.l && r < w->nreduces; r++)
    if (!group_reduce(&g, w->reduces[r], !w->outputs && r + 1 == w->nreduces)) return NULL;
  const UOp *p = w->store->src[0], *v = w->store->src[1];
  DType i = g.l ? g.l->dtype : dt_scalar(UJ_INT32);
  if (!w->outputs) { /* thread 0 stores the row's value */
    const UOp *first = g.l ? bin(ctx, UJ_OP_CMPEQ, g.l, uop_const_int(ctx, i, 0)) : NULL;
    v = first ? opt_substitute(ctx, v, g.from, g.to, g.ndone) : NULL;
    effects[g.n++] = v ? store_of(ctx, gated(ctx, p, first, i), v) : NULL;
  } else { /* output j = j' T + l, after the row's scalars (hoisted) */
    const UOp *j = w->outputs->src[0], *in = NULL;
    if (!hoist_row_scalars(&g, w, &v)) return NULL;
    const UOp *jj = new_range(&g, i, "loop", (opt_const_bound(j) + threads - 1) / threads);
    const UOp *at = jj ? strided(&g, jj, opt_const_bound(j), &in) : NULL;
    g.from[g.ndone] = j, g.to[g.ndone] = at;
    const UOp *store = at ? store_of(ctx, p, v) : NULL;
    store = store ? opt_substitute(ctx, store, g.from, g.to, g.ndone + 1) : NULL;
    if (store && in) store = store_of(ctx, gated(ctx, store->src[0], in, i), store->src[1]);
    effects[g.n++] = store ? uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){jj, store}, 2, arg_none()) : NULL;
  }
  for (size_t e = 0; e < g.n; e++)
    if (!effects[e]) return NULL;
  const UOp *src[MAX_EFFECTS + 1] = {g.l};
  for (size_t e = 0; e < g.n; e++) src[e + 1] = effects[e];
  return g.l ? uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), src, (uint32_t)g.n + 1, arg_none()) : NULL;
}

const UOp *opt_workgroup(Ctx *ctx, const UOp *kernel, const TargetDesc *t) {
  Rows w;
  if (t->kind != TARGET_DESC_GPU || !find_rows(ctx, kernel, &w)) return kernel;
  /* a loop around the workgroups (past the grid's three dimensions) would run them one after another in one
   * block, reusing the local memory with no barrier between steps: not on a GPU */
  if (w.nends > 3) return kernel;
  int64_t b = w.outputs ? opt_const_bound(w.outputs->src[0]) : 0, threads = 1;
  for (size_t r = 0; r < w.nreduces; r++)
    if (opt_const_bound(w.reduces[r]->src[1]) > b) b = opt_const_bound(w.reduces[r]->src[1]);
  while (threads * 2 <= b && threads * 2 <= MAX_GROUP_THREADS && threads * 2 <= (int64_t)t->max_threads) threads *= 2;
  if (threads < (int64_t)t->warp || outputs_of(w.ends, w.nends) >= (int64_t)t->cores * t->max_threads) return kernel;
  if (w.outputs && opt_const_bound(w.outputs->src[0]) > MAX_ROW_OUTPUTS) return kernel; /* the REDUCEs' own kernels do better */
  if (!w.outputs && reads_across(ctx, &w)) return kernel; /* a thread a row reads coalesced */
  const UOp *inner = group_end(ctx, kernel, &w, threads);
  for (size_t e = w.nends; inner && e-- > 0;) { /* the loops around: block ids */
    const UOp *r = w.ends[e]->src[0];
    const UOp *g = uop_new(ctx, UJ_OP_RANGE, r->dtype, r->src, 1, (Arg){"global", r->ints, r->nints});
    const UOp *body = g ? opt_substitute(ctx, inner, &r, &g, 1) : NULL;
    inner = body ? uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), (const UOp *[]){g, body}, 2, arg_none()) : NULL;
  }
  return inner ? uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), &inner, 1, arg_none()) : NULL;
}
