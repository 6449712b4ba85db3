/* schedule.c — cutting a tensor graph into kernels (schedule.h).
 *
 *   roots ──known──> graph with computed nodes replaced by BUFFER views
 *         ──cache──> a schedule made before for this graph (cache.c), or:
 *         ──cuts───> STAGE(x) around each root and each broadcast REDUCE;
 *                    STAGE(x, B) for a root written into BUFFER B
 *         ──kernels> (STAGE x) -> RESHAPE(BUFFER): x's kernel (rangeify),
 *                    made bottom-up, so producers come before consumers
 *         ──plan───> deps, levels, temps sharing slabs of memory
 * Cuts depend on a node's users, which rules do not see, so they are a
 * substitution (graph_substitute); the kernels are one rewrite rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opt/opt.h"
#include "schedule/rangeify.h"
#include "schedule/schedule.h"
#include "uop/alu.h"
#include "uop/movement.h"

typedef struct Scheduler {
  Ctx *ctx;
  int64_t *next_id;
  const ScheduleTarget *target;
  const unsigned char *cut; /* by node id: wrap in a STAGE */
  const UOp **into;         /* by node id: the BUFFER a root is written into */
  ScheduleItem *items;
  size_t nitems, cap;
} Scheduler;

const UOp *schedule_view_buffer(const UOp *view) {
  return view && view->op == UJ_OP_RESHAPE && view->src[0]->op == UJ_OP_BUFFER ? view->src[0] : NULL;
}

/* ---- cuts ---- */

static bool is_tensor_reduce(const UOp *u) { return u->op == UJ_OP_REDUCE && u->nsrc == 1; }

bool schedule_is_costly(const UOp *u) {
  switch (u->op) {
  case UJ_OP_EXP2: case UJ_OP_LOG2: case UJ_OP_SIN: case UJ_OP_SQRT: case UJ_OP_RECIP: case UJ_OP_FDIV: return true;
  default: return false;
  }
}

/* Users before sources: a node is broadcast when an EXPAND reads it, or
 * a node that is broadcast and not cut does. A broadcast REDUCE is cut,
 * and so is a broadcast costly op (schedule_is_costly). Then sources first: a node
 * holding a REDUCE that is not cut, read by two nodes, is cut (attention's
 * scaled scores: their max and their exp would each compute them). bcast
 * bit 1: broadcast; bit 2: holds a REDUCE not cut. */
static unsigned char *find_cuts(Ctx *ctx, const UOp *sink, const UOp *const *into) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, sink, &nodes);
  unsigned char *cut = n ? calloc(ctx->nnodes, 1) : NULL, *bcast = n ? calloc(ctx->nnodes, 1) : NULL;
  unsigned char *users = n ? calloc(ctx->nnodes, 1) : NULL; /* distinct users, up to 2 */
  if (!cut || !bcast || !users) {
    free(nodes), free(cut), free(bcast), free(users);
    return ctx_set_error(ctx, "schedule: out of memory"), NULL;
  }
  for (size_t k = 0; k < n; k++)
    for (uint32_t i = 0; nodes[k] != sink && i < nodes[k]->nsrc; i++) {
      bool again = false; /* a source read twice by one user counts once */
      for (uint32_t j = 0; j < i && !again; j++) again = nodes[k]->src[j] == nodes[k]->src[i];
      if (!again && users[nodes[k]->src[i]->id] < 2) users[nodes[k]->src[i]->id]++;
    }
  for (uint32_t i = 0; i < sink->nsrc; i++) { /* a root that is a buffer needs no kernel (unless it goes elsewhere) */
    const UOp *r = sink->src[i], *b = schedule_view_buffer(r);
    cut[r->id] = !b || (into[r->id] && into[r->id] != b);
  }
  for (size_t k = n; k-- > 0;) {
    const UOp *u = nodes[k];
    if ((is_tensor_reduce(u) || schedule_is_costly(u)) && bcast[u->id]) cut[u->id] = 1;
    for (uint32_t i = 0; u != sink && i < u->nsrc; i++)
      bcast[u->src[i]->id] |= u->op == UJ_OP_EXPAND || (bcast[u->id] && !cut[u->id]); /* bit 1 only so far */
  }
  /* sources first: a node that holds a fused REDUCE and has two users is cut, or each computes the reduction */
  for (size_t k = 0; k < n; k++) {
    const UOp *u = nodes[k];
    bool holds = is_tensor_reduce(u);
    for (uint32_t i = 0; u != sink && i < u->nsrc && !holds; i++) holds = bcast[u->src[i]->id] & 2 && !cut[u->src[i]->id];
    if (holds && users[u->id] > 1 && u != sink) cut[u->id] = 1;
    bcast[u->id] |= holds ? 2 : 0;
  }
  free(nodes), free(bcast), free(users);
  return cut;
}

static const UOp *wrap_cut(void *user, const UOp *u, const UOp *rebuilt) {
  Scheduler *s = user;
  const UOp *src[2] = {rebuilt, s->into[u->id]};
  return s->cut[u->id] ? uop_new(s->ctx, UJ_OP_STAGE, rebuilt->dtype, src, src[1] ? 2 : 1, arg_none()) : rebuilt;
}

/* ---- kernels ---- */

/* "R_..." when the kernel as rangeify made it reduces (the optimizer may
 * turn a REDUCE into loops over memory: stream.c), else "E_...". */
static void item_name(Ctx *ctx, ScheduleItem *it, const UOp *kernel, const UOp *t) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  bool reduce = false;
  for (size_t i = 0; i < n; i++) reduce |= nodes[i]->op == UJ_OP_REDUCE;
  free(nodes);
  size_t at = (size_t)snprintf(it->name, sizeof it->name, "%c", reduce ? 'R' : 'E');
  for (unsigned k = 0; k < t->ndim && at < sizeof it->name; k++)
    at += (size_t)snprintf(it->name + at, sizeof it->name - at, "_%lld", (long long)t->shape[k]);
}

static const UOp *view_of(Ctx *ctx, const UOp *buffer, const UOp *like) {
  return uop_new(ctx, UJ_OP_RESHAPE, like->dtype, &buffer, 1, (Arg){NULL, like->shape, like->ndim});
}

/* A new item: x's kernel, writing `output` (NULL: a new BUFFER). */
static ScheduleItem *add_item(Scheduler *s, const UOp *x, const UOp *output) {
  Ctx *ctx = s->ctx;
  if (s->nitems == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 8;
    ScheduleItem *items = realloc(s->items, cap * sizeof *items);
    if (!items) return ctx_set_error(ctx, "schedule: out of memory"), NULL;
    s->items = items, s->cap = cap;
  }
  ScheduleItem *it = &s->items[s->nitems];
  memset(it, 0, sizeof *it);
  it->kernel = rangeify_kernel(ctx, x, s->target->index_bits, &it->inputs, &it->ninputs);
  const UOp *raw = it->kernel;
  if (raw) it->kernel = opt_kernel(ctx, raw, &s->target->opt); /* shaped for the target (lib/opt) */
  if (!it->kernel) return free(it->inputs), NULL;
  s->nitems++;
  if (!output) {
    int64_t arg[2] = {(*s->next_id)++, shape_numel(x->shape, x->ndim)};
    DType p = uj_dtype_ptr((uj_scalar)x->dtype.scalar, x->dtype.lanes, UJ_AS_GLOBAL);
    output = uop_new(ctx, UJ_OP_BUFFER, p, NULL, 0, (Arg){ctx_intern_string(ctx, s->target->device, strlen(s->target->device)), arg, 2});
  }
  it->output = output;
  item_name(ctx, it, raw, x);
  return it;
}

static const UOp *rw_stage(Rewriter *rw, const UOp *root, const Binds *m) {
  if (schedule_view_buffer(m->x)) return m->x; /* already a buffer */
  ScheduleItem *it = add_item(rw->user, m->x, NULL);
  return it ? view_of(rw->ctx, it->output, m->x) : NULL;
}

/* Whether every load through PARAM slot reads the element the kernel's
 * STORE writes (then the kernel may write where it reads). */
static bool reads_only_where_written(Ctx *ctx, const UOp *kernel, int64_t slot, bool *ok) {
  const UOp **nodes = NULL, *at = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  *ok = n > 0;
  for (size_t i = 0; i < n; i++)
    if (nodes[i]->op == UJ_OP_STORE) at = nodes[i]->src[0]->src[1];
  bool same = at != NULL;
  for (size_t i = 0; same && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op == UJ_OP_INDEX && u->src[0]->op == UJ_OP_PARAM && u->src[0]->ints[0] == slot) same = u->src[1] == at;
  }
  free(nodes);
  return same;
}

typedef struct Renumber {
  Ctx *ctx;
  int64_t slot; /* becomes 0; the slots above it move down one */
} Renumber;

static const UOp *renumber_param(void *user, const UOp *u, const UOp *rebuilt) {
  const Renumber *r = user;
  if (u->op != UJ_OP_PARAM || u->ints[0] < r->slot) return rebuilt;
  int64_t slot = u->ints[0] == r->slot ? 0 : u->ints[0] - 1;
  return uop_new(r->ctx, UJ_OP_PARAM, u->dtype, NULL, 0, (Arg){NULL, &slot, 1});
}

/* STAGE(x, target): x written into an existing BUFFER. A kernel that reads
 * the target only at the element it writes runs in place (its loads go
 * through the output's PARAM); one that reads it elsewhere (a transpose,
 * a reduction) would see its own writes, so x goes to a new buffer first
 * and a second kernel copies it into the target. */
static const UOp *rw_stage_into(Rewriter *rw, const UOp *root, const Binds *m) {
  Scheduler *s = rw->user;
  const UOp *x = m->x, *target = m->y;
  if (schedule_view_buffer(x) == target) return x; /* there already */
  ScheduleItem *it = add_item(s, x, target);
  if (!it) return NULL;
  size_t alias = 0;
  while (alias < it->ninputs && it->inputs[alias] != target) alias++;
  if (alias == it->ninputs) return view_of(rw->ctx, target, x);
  bool ok;
  if (reads_only_where_written(rw->ctx, it->kernel, (int64_t)alias + 1, &ok)) {
    Renumber r = {rw->ctx, (int64_t)alias + 1};
    it->kernel = graph_substitute(rw->ctx, it->kernel, renumber_param, &r);
    memmove(it->inputs + alias, it->inputs + alias + 1, (it->ninputs - alias - 1) * sizeof *it->inputs);
    it->ninputs--;
    return it->kernel ? view_of(rw->ctx, target, x) : NULL;
  }
  if (!ok) return NULL;
  int64_t arg[2] = {(*s->next_id)++, shape_numel(x->shape, x->ndim)}; /* x into a new buffer, then copied */
  it->output = uop_new(rw->ctx, UJ_OP_BUFFER, target->dtype, NULL, 0, (Arg){target->name, arg, 2});
  ScheduleItem *copy = add_item(s, view_of(rw->ctx, it->output, x), target);
  return copy ? view_of(rw->ctx, target, x) : NULL;
}

static const Rule stage_rules[] = {
  {"(STAGE x)", rw_stage},        // STAGE(x) -> RESHAPE(BUFFER): a kernel writes x there
  {"(STAGE x y)", rw_stage_into}, // STAGE(x, B) -> RESHAPE(B): a kernel writes x into B
};

/* ---- the plan ---- */

static long producer(const Schedule *s, const UOp *buffer) {
  for (size_t i = 0; i < s->nitems; i++)
    if (s->items[i].output == buffer) return (long)i;
  return -1;
}

static bool reads(const ScheduleItem *it, const UOp *buffer) {
  for (size_t k = 0; k < it->ninputs; k++)
    if (it->inputs[k] == buffer) return true;
  return false;
}

static bool add_dep(ScheduleItem *it, size_t dep) {
  for (size_t k = 0; k < it->ndeps; k++)
    if (it->deps[k] == dep) return true;
  size_t *d = realloc(it->deps, (it->ndeps + 1) * sizeof *d);
  if (!d) return false;
  it->deps = d, it->deps[it->ndeps++] = dep;
  return true;
}

/* Whether item j waits for item i, directly or through others (deps
 * point to earlier items; a walk down from j, each item once). */
static bool waits_for(const Schedule *s, size_t j, size_t i) {
  if (j == i) return true;
  unsigned char *seen = calloc(j + 1, 1);
  size_t *stack = malloc((j + 1) * sizeof *stack), top = 0;
  bool found = false;
  if (seen && stack) stack[top++] = j, seen[j] = 1;
  while (top && !found) {
    const ScheduleItem *it = &s->items[stack[--top]];
    for (size_t k = 0; k < it->ndeps && !found; k++) {
      size_t d = it->deps[k];
      found = d == i;
      if (d > i && !seen[d]) seen[d] = 1, stack[top++] = d;
    }
  }
  free(seen), free(stack);
  return found;
}

/* Whether j already waits for every item that wrote or read item o's
 * output: then j may reuse that memory without ordering anything new, so
 * independent kernels stay independent. */
static bool after_users_of(const Schedule *s, size_t j, size_t o) {
  if (!waits_for(s, j, o)) return false;
  for (size_t i = o + 1; i < j; i++)
    if (reads(&s->items[i], s->items[o].output) && !waits_for(s, j, i)) return false;
  return true;
}

static bool is_root_output(const Schedule *s, const UOp *buffer) {
  for (size_t r = 0; r < s->noutputs; r++)
    if (schedule_view_buffer(s->outputs[r]) == buffer) return true;
  return false;
}

/* Temps take the smallest slab whose occupant is dead (its last reader is
 * an item this one waits for anyway), growing one if none is big enough,
 * else a new one. */
static bool plan_memory(Schedule *s) {
  size_t n = s->nitems;
  size_t *last = calloc(n ? n : 1, sizeof *last), *occupant = calloc(n ? n : 1, sizeof *occupant);
  s->slab_of_item = malloc((n ? n : 1) * sizeof *s->slab_of_item);
  s->slab_bytes = calloc(n ? n : 1, sizeof *s->slab_bytes);
  bool ok = last && occupant && s->slab_of_item && s->slab_bytes;
  for (size_t i = 0; ok && i < n; i++) {
    last[i] = i;
    for (size_t j = i + 1; j < n; j++)
      if (reads(&s->items[j], s->items[i].output)) last[i] = j;
  }
  for (size_t j = 0; ok && j < n; j++) {
    const UOp *out = s->items[j].output;
    s->slab_of_item[j] = -1;
    if (is_root_output(s, out)) continue;
    size_t bytes = (size_t)out->ints[1] * elem_bytes(dt_base(out->dtype));
    long best = -1;
    for (size_t k = 0; k < s->nslabs; k++) {
      if (last[occupant[k]] >= j || !after_users_of(s, j, occupant[k])) continue;
      bool fits = s->slab_bytes[k] >= bytes, best_fits = best >= 0 && s->slab_bytes[best] >= bytes;
      if (best < 0 || (fits && (!best_fits || s->slab_bytes[k] < s->slab_bytes[best])) ||
          (!fits && !best_fits && s->slab_bytes[k] > s->slab_bytes[best]))
        best = (long)k;
    }
    if (best < 0) best = (long)s->nslabs++;
    if (s->slab_bytes[best] < bytes) s->slab_bytes[best] = bytes;
    occupant[best] = j, s->slab_of_item[j] = best;
  }
  free(last), free(occupant);
  return ok;
}

static bool plan_deps(Schedule *s) {
  for (size_t j = 0; j < s->nitems; j++) {
    ScheduleItem *it = &s->items[j];
    for (size_t k = 0; k < it->ninputs; k++) {
      long p = producer(s, it->inputs[k]);
      if (p >= 0 && !add_dep(it, (size_t)p)) return false;
    }
  }
  if (!plan_memory(s)) return false;
  for (size_t j = 0; j < s->nitems; j++) {
    ScheduleItem *it = &s->items[j];
    for (size_t k = 0; k < it->ndeps; k++)
      if (s->items[it->deps[k]].level + 1 > it->level) it->level = s->items[it->deps[k]].level + 1;
  }
  return true;
}

/* ---- the whole ---- */

static const UOp *cut_and_kernel(Scheduler *st, const UOp *sink, const UOp *const *into) {
  Ctx *ctx = st->ctx;
  const UOp **into_by_id = calloc(ctx->nnodes, sizeof *into_by_id);
  if (!into_by_id) return ctx_set_error(ctx, "schedule: out of memory"), NULL;
  for (uint32_t i = 0; into && i < sink->nsrc; i++) into_by_id[sink->src[i]->id] = into[i];
  unsigned char *cut = find_cuts(ctx, sink, into_by_id);
  if (cut && !schedule_fuse_online(ctx, &sink, &cut, &into_by_id, st->target)) free(cut), cut = NULL;
  if (!cut) return free(into_by_id), NULL;
  st->cut = cut, st->into = into_by_id;
  sink = graph_substitute(ctx, sink, wrap_cut, st);
  free(cut), free(into_by_id);
  RuleSet *rs = sink ? ruleset_new(ctx, stage_rules, sizeof stage_rules / sizeof *stage_rules) : NULL;
  sink = rs ? graph_rewrite(ctx, sink, rs, st) : NULL;
  ruleset_free(rs);
  return sink;
}

/* The schedule of sink (the roots, computed nodes replaced). */
static Schedule *schedule_build(Ctx *ctx, const UOp *sink, const UOp *const *into, int64_t *next_buffer_id,
                                const ScheduleTarget *target) {
  Schedule *s = calloc(1, sizeof *s);
  if (s) s->outputs = calloc(sink->nsrc ? sink->nsrc : 1, sizeof *s->outputs);
  if (!s || !s->outputs) return schedule_free(s), ctx_set_error(ctx, "schedule: out of memory"), NULL;
  Scheduler st = {ctx, next_buffer_id, target, NULL, NULL, NULL, 0, 0};
  sink = cut_and_kernel(&st, sink, into);
  s->items = st.items, s->nitems = st.nitems;
  if (!sink) return schedule_free(s), NULL;
  memcpy(s->outputs, sink->src, sink->nsrc * sizeof *s->outputs);
  s->noutputs = sink->nsrc;
  if (!plan_deps(s)) return ctx_set_error(ctx, "schedule: out of memory"), schedule_free(s), NULL;
  return s;
}

Schedule *schedule_make(Ctx *ctx, const UOp *const *roots, size_t nroots, const UOp *const *into, ReplaceFn known,
                        void *user, int64_t *next_buffer_id, const ScheduleTarget *target, ScheduleCache *cache) {
  for (size_t i = 0; i < nroots; i++)
    if (dt_is_ptr(roots[i]->dtype) || dt_is_void(roots[i]->dtype))
      return ctx_set_error(ctx, "schedule: root %zu is not a tensor", i), NULL;
  const UOp *sink = uop_new(ctx, UJ_OP_SINK, dt_scalar(UJ_VOID), roots, nroots, arg_none());
  if (!sink) return ctx_set_error(ctx, "schedule: out of memory"), NULL;
  if (known) sink = graph_substitute(ctx, sink, known, user);
  if (!sink) return NULL;
  Schedule *s = cache ? schedule_cache_find(cache, ctx, sink, into, next_buffer_id) : NULL;
  if (s) return s;
  int64_t first_id = *next_buffer_id;
  s = schedule_build(ctx, sink, into, next_buffer_id, target);
  if (s && cache) schedule_cache_put(cache, sink, into, s, first_id, *next_buffer_id);
  return s;
}

void schedule_free(Schedule *s) {
  if (!s) return;
  for (size_t i = 0; i < s->nitems; i++) free(s->items[i].inputs), free(s->items[i].deps);
  free(s->items), free(s->outputs), free(s->slab_of_item), free(s->slab_bytes);
  free(s);
}
