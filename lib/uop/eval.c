/* eval.c — the reference evaluator (eval.h): the oracle of the project.
 *
 * In: a graph root, variable values, memory for PARAMs and BUFFERs. Out:
 * the words of every value node under root; STOREs written to memory.
 *
 * How, none of it recursive (a graph a million nodes deep is fine): a
 * depth-first walk from the root sizes the results; then the effects (SINK,
 * END, STORE) are run from the root, left to right, each END running its
 * body once per value of its RANGE. Outside loops an effect reached twice
 * runs once; inside a loop it runs each time it is reached. A value is computed on demand, after its
 * sources, and kept: for good when it depends on no RANGE, until the next
 * loop step (or the loop's end) when it does. LOADs read memory as it was before the run;
 * STOREs are checked and queued with a copy of their value, and written in
 * the order they ran once everything succeeded. An error leaves memory as
 * it was (memory and its checks: eval_mem.c). Pointer nodes evaluate to a
 * Pointer (memory, element, gate). An END of a `local` RANGE runs a
 * workgroup (eval_group.c): its threads resume the effect machine below
 * (eval_run_steps) on stacks of their own, phase by phase. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/eval_bound.h"
#include "uop/eval_impl.h"
#include "uop/spec.h"
#include "uop/text.h"

/* ---- errors, growth ---- */

bool eval_fail(Eval *ev, const UOp *u, const char *fmt, ...) {
  char msg[256], who[48];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(who, sizeof who, "eval: %s", op_table[u->op].name);
  text_node_error(ev->ctx, u, who, "%s", msg);
  return false;
}

bool eval_fail_nomem(Eval *ev) {
  ctx_set_error(ev->ctx, "eval: out of memory");
  return false;
}

/* ---- the evaluator's life ---- */

Eval *eval_new(Ctx *ctx) {
  Eval *ev = calloc(1, sizeof *ev);
  if (!ev) ctx_set_error(ctx, "eval: out of memory");
  else ev->ctx = ctx, ev->num = nodemap_make(ctx), ev->thread = -1, ev->life = ev->lives = 1;
  return ev;
}

static void results_clear(Eval *ev) {
  for (size_t i = 0; i < ev->nallocs; i++) {
    AllocMem *a = ev->allocs[i];
    void *arrays[] = {a->data, a->errs, a->born, a->writer, a->reader, a->reader2, a->phase, a};
    for (size_t k = 0; k < sizeof arrays / sizeof *arrays; k++) free(arrays[k]);
  }
  free(ev->allocs);
  void *owned[] = {ev->order, ev->where, ev->words, ev->ptrs, ev->in_loop, ev->open, ev->done, ev->pinned,
                   ev->stamp, ev->pushed, ev->walk, ev->steps.at, ev->stores, ev->store_words, ev->written,
                   ev->errs, ev->store_errs};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
  nodemap_free(&ev->num);
  Eval keep = *ev; /* the bindings stay */
  memset(ev, 0, sizeof *ev);
  ev->ctx = keep.ctx, ev->track = keep.track;
  ev->thread = -1, ev->life = ev->lives = 1;
  ev->num = nodemap_make(keep.ctx);
  ev->vars = keep.vars, ev->nvars = keep.nvars, ev->cap_vars = keep.cap_vars;
  ev->mems = keep.mems, ev->nmems = keep.nmems, ev->cap_mems = keep.cap_mems;
}

void eval_free(Eval *ev) {
  if (!ev) return;
  results_clear(ev);
  for (size_t i = 0; i < ev->nvars; i++) free(ev->vars[i].name);
  free(ev->vars);
  free(ev->mems);
  free(ev);
}

void *eval_grow(void *items, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return items;
  size_t cap2 = *cap ? *cap * 2 : 8;
  void *p = realloc(items, cap2 * size);
  if (p) *cap = cap2;
  return p;
}

/* ---- phase 1: the walk, and room for the results ---- */

/* Every node under root once, each after its sources, sources left to
 * right, numbered in ev->num as met; NULL when out of memory. */
static const UOp **post_order(Eval *ev, const UOp *root, size_t *count) {
  size_t top = 0, n = 0, cap = 64; /* the stack and the order hold at most the nodes met */
  const UOp **order = malloc(cap * sizeof *order);
  Frame *stack = malloc(cap * sizeof *stack);
  bool ok = order && stack && nodemap_add(&ev->num, root) != NODEMAP_NONE;
  if (ok) stack[top++] = (Frame){root, 0};
  while (ok && top > 0) {
    Frame *f = &stack[top - 1];
    if (f->next == f->u->nsrc) {
      order[n++] = f->u;
      top--;
      continue;
    }
    const UOp *s = f->u->src[f->next++];
    size_t before = ev->num.count;
    ok = nodemap_add(&ev->num, s) != NODEMAP_NONE;
    if (!ok || ev->num.count == before) continue;
    if (ev->num.count > cap) {
      cap *= 2;
      Frame *st = realloc(stack, cap * sizeof *st);
      const UOp **o = st ? realloc(order, cap * sizeof *o) : NULL;
      if (st) stack = st;
      if (o) order = o;
      if (!(ok = o != NULL)) break;
    }
    stack[top++] = (Frame){s, 0};
  }
  free(stack);
  if (!ok) n = 0;
  if (n == 0) free(order);
  *count = n;
  return n ? order : NULL;
}

/* Lists the graph and gives each value node its words, each pointer node
 * its Pointer; marks the nodes that depend on a RANGE. */
static bool results_alloc(Eval *ev, const UOp *root) {
  size_t nwords = 0, nptrs = 0;
  ev->order = post_order(ev, root, &ev->norder);
  nodemap_densify(&ev->num);
  size_t nnodes = ev->norder ? ev->norder : 1;
  ev->where = calloc(nnodes, sizeof *ev->where);
  ev->in_loop = calloc(nnodes, 1), ev->open = calloc(nnodes, 1), ev->done = calloc(nnodes, 1);
  ev->pinned = calloc(nnodes, 1);
  ev->stamp = calloc(nnodes, sizeof *ev->stamp), ev->pushed = calloc(nnodes, sizeof *ev->pushed);
  if (!ev->order || !ev->where || !ev->in_loop || !ev->open || !ev->done || !ev->pinned || !ev->stamp ||
      !ev->pushed)
    return false;
  for (size_t i = 0; i < ev->norder; i++) {
    const UOp *u = ev->order[i];
    if (dt_is_ptr(u->dtype)) ev->where[ix(ev, u)] = 1 + nptrs++;
    else if (!dt_is_void(u->dtype)) ev->where[ix(ev, u)] = 1 + nwords, nwords += u->dtype.lanes;
    bool in_loop = u->op == UJ_OP_RANGE || uop_loads_alloc(u); /* a LOAD of an ALLOC: again every loop step */
    for (uint32_t k = 0; k < u->nsrc && !in_loop; k++) in_loop = ev->in_loop[ix(ev, u->src[k])];
    ev->in_loop[ix(ev, u)] = in_loop;
  }
  ev->words = calloc(nwords + 1, sizeof *ev->words);
  ev->ptrs = calloc(nptrs + 1, sizeof *ev->ptrs);
  ev->errs = ev->track ? calloc(nwords + 1, sizeof *ev->errs) : NULL;
  ev->epoch = 1;
  return ev->words && ev->ptrs && (ev->errs || !ev->track);
}

/* The words of a value node, the Pointer of a pointer node: both reached
 * (the walk puts sources first). */
/* RANGE: the value its END gives it in this step of the loop. */
static bool eval_range(Eval *ev, const UOp *u) {
  if (!ev->open[ix(ev, u)]) return eval_fail(ev, u, "RANGE is used outside its END");
  return true; /* the END wrote the value */
}

/* An ALU op, lane by lane. `in` is the scalar of the first value operand
 * (WHERE's first is its condition). */
static bool eval_alu(Eval *ev, const UOp *u) {
  uj_scalar out = (uj_scalar)u->dtype.scalar;
  uj_scalar in = (uj_scalar)u->src[u->op == UJ_OP_WHERE ? 1 : 0]->dtype.scalar;
  uint64_t *res = words_of(ev, u);
  for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
    uint64_t args[3] = {0, 0, 0};
    for (uint32_t i = 0; i < u->nsrc; i++) args[i] = words_of(ev, u->src[i])[lane];
    res[lane] = alu_eval((Op)u->op, out, in, args);
  }
  return true;
}

static bool eval_reduce(Eval *ev, const UOp *u);
/* Tracking: the bounds of value node u, just computed (eval_bound.h); a
 * LOAD's and a REDUCE's are set where they are computed. */
static void bound_node(Eval *ev, const UOp *u) {
  if (dt_is_ptr(u->dtype) || dt_is_void(u->dtype) || u->op == UJ_OP_LOAD || u->op == UJ_OP_REDUCE) return;
  double *e = errs_of(ev, u);
  if (u->op == UJ_OP_VECTORIZE)
    for (uint32_t i = 0; i < u->nsrc; i++) e[i] = errs_of(ev, u->src[i])[0];
  if (u->op == UJ_OP_GEP) e[0] = errs_of(ev, u->src[0])[u->ints[0]];
  if (!op_has(u->op, OPF_ALU)) return;
  uj_scalar out = (uj_scalar)u->dtype.scalar;
  uj_scalar in = (uj_scalar)u->src[u->op == UJ_OP_WHERE ? 1 : 0]->dtype.scalar;
  for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
    uint64_t args[3] = {0, 0, 0};
    double errs[3] = {0, 0, 0};
    for (uint32_t i = 0; i < u->nsrc; i++) args[i] = words_of(ev, u->src[i])[lane], errs[i] = errs_of(ev, u->src[i])[lane];
    e[lane] = bound_alu((Op)u->op, out, in, args, errs, words_of(ev, u)[lane]);
  }
}

static bool eval_node(Eval *ev, const UOp *u) {
  switch ((Op)u->op) {
  case UJ_OP_SINK: return true; /* its sources are evaluated already */
  case UJ_OP_CONST:
    words_of(ev, u)[0] = word_normalize((uj_scalar)u->dtype.scalar, (uint64_t)u->ints[0]);
    return true;
  case UJ_OP_DEFINE_VAR: return eval_var(ev, u);
  case UJ_OP_PARAM:
  case UJ_OP_BUFFER: return eval_memory_root(ev, u);
  case UJ_OP_INDEX: return eval_index(ev, u);
  case UJ_OP_ALLOC: return eval_alloc(ev, u);
  case UJ_OP_LOAD: return eval_load(ev, u);
  case UJ_OP_STORE:
  case UJ_OP_STORE_ADD: return eval_store(ev, u);
  case UJ_OP_RANGE: return eval_range(ev, u);
  case UJ_OP_REDUCE: return eval_reduce(ev, u);
  case UJ_OP_VECTORIZE:
    for (uint32_t i = 0; i < u->nsrc; i++) words_of(ev, u)[i] = words_of(ev, u->src[i])[0];
    return true;
  case UJ_OP_GEP: words_of(ev, u)[0] = words_of(ev, u->src[0])[u->ints[0]]; return true;
  case UJ_OP_CALL: return eval_fail(ev, u, "CALL is not evaluable");
  default:
    if (op_has((Op)u->op, OPF_ALU) && u->nsrc <= 3) return eval_alu(ev, u);
    if (op_has((Op)u->op, OPF_TENSOR)) return eval_fail(ev, u, "a tensor op is not evaluable here (eval_tensor is)");
    return eval_fail(ev, u, "the evaluator does not know this op");
  }
}

/* ---- values on demand ---- */

static bool value_ready_at(const Eval *ev, uint32_t k) {
  return ev->pinned[k] || (ev->in_loop[k] ? ev->stamp[k] == ev->epoch : ev->stamp[k] != 0);
}

/* Needs computing now: a value, not ready, not an open RANGE (its END set
 * it), not pushed in this walk. */
static bool value_needed(const Eval *ev, const UOp *u) {
  if (op_has(u->op, OPF_EFFECT)) return false;
  uint32_t k = ix(ev, u);
  return !value_ready_at(ev, k) && !(u->op == UJ_OP_RANGE && ev->open[k]) && ev->pushed[k] != ev->walk_id;
}

static bool walk_push(Eval *ev, const UOp *u) {
  if (ev->walk_top == ev->walk_cap) {
    size_t cap = 2 * ev->walk_cap + 64;
    Frame *w = realloc(ev->walk, cap * sizeof *w);
    if (!w) return eval_fail_nomem(ev);
    ev->walk = w, ev->walk_cap = cap;
  }
  ev->walk[ev->walk_top++] = (Frame){u, 0};
  ev->pushed[ix(ev, u)] = ev->walk_id;
  return true;
}

/* Computes value node u, after the sources it needs, unless it is ready for
 * this step of the loops. Effects under it are not run; a REDUCE computes
 * its own sources (eval_reduce), in a walk nested above this one. */
bool eval_value_node(Eval *ev, const UOp *u) {
  uint64_t outer = ev->walk_id;
  size_t base = ev->walk_top;
  bool ok = true;
  ev->walk_id = ++ev->walks;
  if (value_needed(ev, u)) ok = walk_push(ev, u);
  while (ok && ev->walk_top > base) {
    Frame *f = &ev->walk[ev->walk_top - 1];
    if (f->u->op != UJ_OP_REDUCE && f->next < f->u->nsrc) {
      const UOp *s = f->u->src[f->next++];
      if (value_needed(ev, s)) ok = walk_push(ev, s);
      continue;
    }
    const UOp *v = f->u;
    ev->walk_top--;
    ok = eval_node(ev, v);
    if (ok && ev->track) bound_node(ev, v);
    if (ok) ev->stamp[ix(ev, v)] = ev->epoch;
  }
  ev->walk_top = base, ev->walk_id = outer;
  return ok;
}

/* ---- REDUCE over RANGEs ---- */

/* The REDUCEs in u's value (not inside another REDUCE) that bind one of
 * u's RANGEs again: inside them the RANGE takes their own values
 * (docs/semantics.md, "REDUCE"). NULL with *n = 0 when there are none;
 * false when out of memory. */
static bool find_shadows(Eval *ev, const UOp *u, const UOp ***out, size_t *n) {
  const UOp **stack = NULL, **found = NULL;
  size_t top = 0, cap = 0, nfound = 0, capf = 0;
  uint64_t mark = ++ev->walks; /* pushed[] as a seen set: no walk has this id */
  bool ok = (stack = eval_grow(stack, top, &cap, sizeof *stack)) != NULL;
  if (ok) stack[top++] = u->src[0], ev->pushed[ix(ev, u->src[0])] = mark;
  while (ok && top > 0) {
    const UOp *x = stack[--top];
    bool shadow = false;
    for (uint32_t i = 1; x->op == UJ_OP_REDUCE && i < x->nsrc && !shadow; i++)
      for (uint32_t k = 1; k < u->nsrc && !shadow; k++) shadow = x->src[i] == u->src[k];
    if (shadow && (ok = (found = eval_grow(found, nfound, &capf, sizeof *found)) != NULL)) found[nfound++] = x;
    for (uint32_t i = 0; ok && x->op != UJ_OP_REDUCE && i < x->nsrc; i++) {
      if (ev->pushed[ix(ev, x->src[i])] == mark) continue;
      ev->pushed[ix(ev, x->src[i])] = mark;
      if ((ok = (stack = eval_grow(stack, top, &cap, sizeof *stack)) != NULL)) stack[top++] = x->src[i];
    }
  }
  free(stack);
  if (!ok) free(found), found = NULL, nfound = 0;
  *out = found, *n = nfound;
  return ok;
}

/* The loops of ranges k.. of u, innermost last; acc = op(acc, value) lane
 * by lane at each innermost step, in loop order. A RANGE already open (u
 * shadows it) takes u's values and gets its own back after u's loop. At
 * each innermost step the shadowing REDUCEs of u's value are computed
 * first and pinned (kept while the value is computed, whatever loops run
 * in it): the value's other nodes are computed after them, for this
 * step's values of u's RANGEs. */
/* One REDUCE being computed: its accumulators (and their bounds when
 * tracking), and the shadowing REDUCEs of its value. */
typedef struct ReduceRun {
  Op op;
  uint64_t *acc;
  BoundSum *sums;
  const UOp **shadows;
  size_t nshadows;
} ReduceRun;

static bool reduce_level(Eval *ev, const UOp *u, const ReduceRun *rr, uint32_t k) {
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  const UOp *const *shadows = rr->shadows;
  size_t nshadows = rr->nshadows;
  if (k == u->nsrc) {
    for (size_t i = 0; i < nshadows; i++)
      if (!eval_value_node(ev, shadows[i])) return false;
    for (size_t i = 0; i < nshadows; i++) ev->pinned[ix(ev, shadows[i])]++;
    bool ok = eval_value_node(ev, u->src[0]);
    for (size_t i = 0; i < nshadows; i++) ev->pinned[ix(ev, shadows[i])]--;
    if (!ok) return false;
    const UOp *x = u->src[0];
    const uint64_t *v = words_of(ev, x);
    bool product = reduce_fused_product(u) != NULL; /* its sources are computed too */
    const uint64_t *a = product ? words_of(ev, x->src[0]) : NULL, *b = product ? words_of(ev, x->src[1]) : NULL;
    for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
      rr->acc[lane] = alu_reduce_step(rr->op, s, rr->acc[lane], v[lane], product ? (const uint64_t[]){a[lane], b[lane]} : NULL);
      if (rr->sums) bound_sum_step(&rr->sums[lane], s, v[lane], errs_of(ev, x)[lane]);
    }
    return true;
  }
  const UOp *r = u->src[k];
  for (uint32_t i = 1; i < k; i++)
    if (u->src[i] == r) return eval_fail(ev, u, "names one RANGE twice");
  if (!eval_value_node(ev, r->src[0])) return false;
  uint64_t w = words_of(ev, r->src[0])[0], outer = words_of(ev, r)[0];
  int64_t trip = !dt_is_signed(r->dtype) && w > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)w;
  if (ev->open[ix(ev, r)] == 1) return eval_fail(ev, u, "its RANGE is already open (inside its own loop)");
  bool ok = true, shadow = ev->open[ix(ev, r)] == 2; /* bound by an outer REDUCE */
  if (!shadow) ev->open[ix(ev, r)] = 2, ev->depth++;
  for (int64_t i = 0; ok && i < trip; i++) {
    words_of(ev, r)[0] = word_from_int((uj_scalar)r->dtype.scalar, i);
    ev->stamp[ix(ev, r)] = ++ev->epoch;
    ok = reduce_level(ev, u, rr, k + 1);
  }
  if (shadow) words_of(ev, r)[0] = outer;
  else ev->open[ix(ev, r)] = 0, ev->depth--;
  ev->epoch++; /* the body's values are stale */
  return ok;
}

static bool eval_reduce(Eval *ev, const UOp *u) {
  Op op = UJ_OP_ADD;
  if (u->nsrc == 1) return eval_fail(ev, u, "a tensor REDUCE (over axes) is not evaluable: kernels reduce over RANGEs");
  op_from_name(u->name, strlen(u->name), &op);
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  ReduceRun rr = {op, words_of(ev, u), NULL, NULL, 0};
  if (!find_shadows(ev, u, &rr.shadows, &rr.nshadows)) return eval_fail_nomem(ev);
  if (ev->track && !(rr.sums = malloc(u->dtype.lanes * sizeof *rr.sums))) return free(rr.shadows), eval_fail_nomem(ev);
  for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
    rr.acc[lane] = alu_identity(op, s);
    if (rr.sums) bound_sum_start(&rr.sums[lane]);
  }
  bool ok = reduce_level(ev, u, &rr, 1);
  for (unsigned lane = 0; ok && rr.sums && lane < u->dtype.lanes; lane++)
    errs_of(ev, u)[lane] = bound_sum_done(&rr.sums[lane], op, s, rr.acc[lane]);
  free(rr.shadows), free(rr.sums);
  return ok;
}

/* ---- effects: SINK, END, STORE ---- */

/* One step of END's loop: its RANGE takes the value iter. */
static void loop_step(Eval *ev, Step *st) {
  const UOp *r = st->u->src[0];
  words_of(ev, r)[0] = word_from_int((uj_scalar)r->dtype.scalar, st->iter);
  ev->epoch++;
  ev->stamp[ix(ev, r)] = ev->epoch; /* computed: eval_value gives it */
  st->next = 1;
}

/* Starts END's loop: false on error; *runs false when the bound is <= 0. */
static bool loop_begin(Eval *ev, Step *st, bool *runs) {
  const UOp *r = st->u->src[0];
  if (ev->open[ix(ev, r)]) return eval_fail(ev, st->u, "its RANGE is already open (an END inside itself)");
  if (!eval_value_node(ev, r->src[0])) return false;
  uint64_t w = words_of(ev, r->src[0])[0];
  bool big = !dt_is_signed(r->dtype) && w > (uint64_t)INT64_MAX;
  st->trip = big ? INT64_MAX : (int64_t)w;
  st->iter = 0;
  *runs = st->trip > 0;
  if (*runs) ev->open[ix(ev, r)] = 1, ev->depth++, loop_step(ev, st);
  return true;
}

bool eval_push_step(Eval *ev, StepStack *ss, Step st) {
  Step *at = eval_grow(ss->at, ss->top, &ss->cap, sizeof *at);
  if (!at) return eval_fail_nomem(ev);
  ss->at = at;
  ss->at[ss->top++] = st;
  return true;
}

/* Runs one effect or value node met among effects on ss; pushes the frames
 * of SINK, END and BARRIER; an END of a `local` RANGE runs a workgroup. */
static bool step_start(Eval *ev, const UOp *u, StepStack *ss) {
  if (ev->depth == 0) { /* outside loops an effect runs once */
    if (ev->done[ix(ev, u)]) return true;
    ev->done[ix(ev, u)] = 1;
  }
  if (u->op == UJ_OP_SINK || u->op == UJ_OP_BARRIER) return eval_push_step(ev, ss, (Step){u, 0, 0, 0, false});
  if (u->op == UJ_OP_END && range_kind(u->src[0]) == AXIS_LOCAL) {
    if (ev->group)
      return eval_fail(ev, u, "a `local` END inside a workgroup: a workgroup's threads are one chain of `local` ENDs, "
                              "END(l0, END(l1, body...))");
    return eval_workgroup(ev, u, ss);
  }
  if (u->op == UJ_OP_END) {
    Step st = {u, 0, 0, 0, false};
    bool runs = false;
    if (!loop_begin(ev, &st, &runs)) return false;
    return !runs || eval_push_step(ev, ss, st);
  }
  if (u->op == UJ_OP_STORE || u->op == UJ_OP_STORE_ADD)
    return eval_value_node(ev, u->src[0]) && eval_value_node(ev, u->src[1]) && eval_store(ev, u);
  return eval_value_node(ev, u);
}

RunResult eval_run_steps(Eval *ev, StepStack *ss, size_t base) {
  while (ss->top > base) {
    Step *st = &ss->at[ss->top - 1];
    if (st->next < st->u->nsrc) {
      const UOp *s = st->u->src[st->next++];
      if (!step_start(ev, s, ss)) return RUN_ERROR;
      continue;
    }
    bool loop = st->u->op == UJ_OP_END && !st->body;
    if (loop && ++st->iter < st->trip) {
      loop_step(ev, st);
      continue;
    }
    if (loop) /* values of the loop's last step are stale now */
      ev->open[ix(ev, st->u->src[0])] = 0, ev->depth--, ev->epoch++;
    ss->top--;
    if (st->u->op == UJ_OP_BARRIER && ev->group) { /* its effects ran: the thread waits */
      eval_group_stopped(ev, st->u);
      return RUN_BARRIER;
    }
  }
  return RUN_DONE;
}

static bool run_effects(Eval *ev, const UOp *root) {
  ev->steps.top = 0;
  return step_start(ev, root, &ev->steps) && eval_run_steps(ev, &ev->steps, 0) == RUN_DONE;
}

/* ---- the run ---- */

bool eval_run(Eval *ev, const UOp *root) {
  results_clear(ev);
  Ctx *ctx = ev->ctx;
  if (!uop_in_ctx(ctx, root)) {
    ctx_set_error(ctx, "eval_run: the root is not a node of this context");
    return false;
  }
  if (!spec_check_graph(ctx, root)) return false;
  bool ok = (results_alloc(ev, root) || eval_fail_nomem(ev)) && run_effects(ev, root);
  if (!ok) {
    results_clear(ev);
    return false;
  }
  eval_write_stores(ev); /* every check passed: write */
  return true;
}

const uint64_t *eval_value(const Eval *ev, const UOp *u) {
  uint32_t at = u ? nodemap_find(&ev->num, u) : NODEMAP_NONE;
  if (at == NODEMAP_NONE || ev->where[at] == 0 || ev->stamp[at] == 0) return NULL;
  if (dt_is_ptr(u->dtype) || dt_is_void(u->dtype)) return NULL;
  return words_of(ev, u);
}

const double *eval_bound(const Eval *ev, const UOp *u) {
  return ev->track && eval_value(ev, u) ? errs_of(ev, u) : NULL;
}

bool eval_expr(Ctx *ctx, const UOp *expr, const char *const *names, const int64_t *values,
               size_t nvars, uint64_t *out) {
  Eval *ev = eval_new(ctx);
  bool ok = ev != NULL;
  for (size_t i = 0; ok && i < nvars; i++) ok = eval_bind_var(ev, names[i], values[i]);
  ok = ok && eval_run(ev, expr);
  const uint64_t *w = ok ? eval_value(ev, expr) : NULL;
  if (ok && !w) ctx_set_error(ctx, "eval_expr: %s is not a value", op_table[expr->op].name);
  if (w) memcpy(out, w, expr->dtype.lanes * sizeof *out);
  eval_free(ev);
  return w != NULL;
}
