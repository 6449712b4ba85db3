/* eval_group.c — the reference evaluator's workgroups (docs/semantics.md,
 * "Workgroups").
 *
 * In: an END of a `local` RANGE met among the effects, outside any
 * workgroup. Its chain of `local` ENDs, END(l0, END(l1, body...)), each
 * the only effect of the one above, is one workgroup: its threads are the
 * values of (l0, l1, ...), thread t's ids in row-major order (the last
 * RANGE fastest). Out: the body run by every thread, in lockstep: each
 * phase runs the threads in order, each until it finishes its body or
 * stops at a BARRIER; then all must have finished, or all stopped at the
 * same BARRIER in the same loop steps, and the next phase resumes them.
 *
 * A thread's state is its own stack of effect frames (its loops inside the
 * body, and where it stopped). Values keep no per-thread copies: a switch
 * of threads starts a new epoch, so every value that depends on a RANGE
 * or reads an ALLOC is computed again for the thread; values that depend
 * on neither are the same for all threads. Memory life and races:
 * eval_mem.c (Eval.life, Eval.phase, Eval.thread). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/eval_impl.h"

enum { MAX_LOCAL = 8, MAX_THREADS = 1024 };

typedef struct Thread {
  StepStack st;
  const UOp *stopped; /* the BARRIER it waits at; NULL: it finished */
} Thread;

struct Workgroup {
  const UOp *ends[MAX_LOCAL]; /* the chain of `local` ENDs, outermost first */
  int64_t trips[MAX_LOCAL];
  size_t nlocal;
  int64_t nthreads;
  Thread *threads;
  char name[112]; /* " of workgroup (r0=1)": the enclosing loops' values, or "" */
  const UOp *undefined; /* a LOAD of a `local` element not stored in this workgroup yet */
  int64_t undefined_index;
  int32_t undefined_thread;
};

/* prefix "(r<axis>=<value>, ...)" of the END frames st[0 .. n) (thread
 * bodies left out), or "" when there are none. */
static void frames_name(const Step *st, size_t n, const char *prefix, char *buf, size_t size) {
  size_t len = 0;
  buf[0] = 0;
  for (size_t i = 0; i < n && len < size; i++) {
    if (st[i].u->op != UJ_OP_END || st[i].body) continue;
    len += (size_t)snprintf(buf + len, size - len, "%s%lld=%lld", len ? ", r" : prefix,
                            (long long)st[i].u->src[0]->ints[0], (long long)st[i].iter);
  }
  if (len && len < size) snprintf(buf + len, size - len, ")");
}

void eval_thread_name(const Eval *ev, int32_t thread, char *buf, size_t size) {
  const Workgroup *g = ev->group;
  int64_t ids[MAX_LOCAL], t = thread;
  for (size_t k = g->nlocal; k-- > 0;) ids[k] = t % g->trips[k], t /= g->trips[k];
  size_t len = (size_t)snprintf(buf, size, "(");
  for (size_t k = 0; k < g->nlocal && len < size; k++)
    len += (size_t)snprintf(buf + len, size - len, "%sr%lld=%lld", k ? ", " : "",
                            (long long)g->ends[k]->src[0]->ints[0], (long long)ids[k]);
  if (len < size) snprintf(buf + len, size - len, ")");
}

const char *eval_group_name(const Eval *ev) { return ev->group->name; }

void eval_group_stopped(Eval *ev, const UOp *barrier) { ev->group->threads[ev->thread].stopped = barrier; }

void eval_group_undefined(Eval *ev, const UOp *load, int64_t index) {
  Workgroup *g = ev->group;
  if (g->undefined) return;
  g->undefined = load, g->undefined_index = index, g->undefined_thread = ev->thread;
}

/* Thread t runs: its ids in the local RANGEs, its open loops restored,
 * every RANGE-dependent value stale. */
static void switch_in(Eval *ev, Workgroup *g, int32_t t) {
  ev->epoch++;
  int64_t rest = t;
  for (size_t k = g->nlocal; k-- > 0;) {
    const UOp *r = g->ends[k]->src[0];
    words_of(ev, r)[0] = word_from_int((uj_scalar)r->dtype.scalar, rest % g->trips[k]);
    ev->stamp[ix(ev, r)] = ev->epoch;
    rest /= g->trips[k];
  }
  const StepStack *ss = &g->threads[t].st;
  for (size_t i = 0; i < ss->top; i++) {
    const Step *st = &ss->at[i];
    if (st->u->op != UJ_OP_END || st->body) continue;
    const UOp *r = st->u->src[0];
    ev->open[ix(ev, r)] = 1, ev->depth++;
    words_of(ev, r)[0] = word_from_int((uj_scalar)r->dtype.scalar, st->iter);
    ev->stamp[ix(ev, r)] = ev->epoch;
  }
  ev->thread = t;
}

static void switch_out(Eval *ev, Workgroup *g, int32_t t) {
  const StepStack *ss = &g->threads[t].st;
  for (size_t i = 0; i < ss->top; i++)
    if (ss->at[i].u->op == UJ_OP_END && !ss->at[i].body) ev->open[ix(ev, ss->at[i].u->src[0])] = 0, ev->depth--;
  ev->thread = -1;
  ev->epoch++;
}

/* Threads a and b stopped at the same point: one BARRIER node, reached
 * from the same place in the same loop steps. */
static bool same_point(const Thread *a, const Thread *b) {
  if (a->stopped != b->stopped || a->st.top != b->st.top) return false;
  for (size_t i = 0; i < a->st.top; i++) {
    const Step *x = &a->st.at[i], *y = &b->st.at[i];
    if (x->u != y->u || x->next != y->next || x->iter != y->iter) return false;
  }
  return true;
}

/* After a phase: no LOAD read an element of local memory nothing stored
 * in the phase or before it; every thread finished (*done), or all wait
 * at one point. */
static bool phase_check(Eval *ev, Workgroup *g, bool *done) {
  const Thread *first = &g->threads[0];
  char a[64], b[64], pa[96], pb[96];
  if (g->undefined) {
    eval_thread_name(ev, g->undefined_thread, a, sizeof a);
    return eval_fail(ev, g->undefined,
                     "element %lld of an ALLOC is read before anything was stored there in this workgroup (thread %s%s)",
                     (long long)g->undefined_index, a, g->name);
  }
  for (int32_t t = 1; t < g->nthreads; t++) {
    const Thread *th = &g->threads[t];
    if (same_point(first, th)) continue;
    const Thread *waits = first->stopped ? first : th, *other = first->stopped ? th : first;
    int32_t tw = first->stopped ? 0 : t, to = first->stopped ? t : 0;
    eval_thread_name(ev, tw, a, sizeof a), eval_thread_name(ev, to, b, sizeof b);
    frames_name(waits->st.at, waits->st.top, " in loop steps (r", pa, sizeof pa);
    if (!other->stopped)
      return eval_fail(ev, waits->stopped,
                       "thread %s%s waits here%s while thread %s finished its body: every thread of a workgroup must "
                       "reach each BARRIER the same number of times",
                       a, g->name, pa, b);
    frames_name(other->st.at, other->st.top, " in loop steps (r", pb, sizeof pb);
    return eval_fail(ev, waits->stopped,
                     "thread %s%s waits here%s while thread %s waits at %s%s: every thread of a workgroup must reach "
                     "the same BARRIERs in the same loop steps",
                     a, g->name, pa, b, other->stopped == waits->stopped ? "it" : "another BARRIER", pb);
  }
  *done = first->stopped == NULL;
  return true;
}

/* The chain of `local` ENDs from u and their trip counts; false on error. */
static bool group_shape(Eval *ev, const UOp *u, Workgroup *g) {
  for (const UOp *e = u;;) {
    if (g->nlocal == MAX_LOCAL) return eval_fail(ev, u, "a workgroup of more than %d `local` RANGEs", MAX_LOCAL);
    const UOp *r = e->src[0];
    if (ev->open[ix(ev, r)]) return eval_fail(ev, e, "its RANGE is already open (an END inside itself)");
    if (!eval_value_node(ev, r->src[0])) return false;
    uint64_t w = words_of(ev, r->src[0])[0];
    bool negative = dt_is_signed(r->dtype) && (int64_t)w <= 0;
    g->ends[g->nlocal] = e;
    g->trips[g->nlocal++] = negative ? 0 : w > MAX_THREADS ? MAX_THREADS + 1 : (int64_t)w;
    bool chain = e->nsrc == 2 && e->src[1]->op == UJ_OP_END && range_kind(e->src[1]->src[0]) == AXIS_LOCAL;
    if (!chain) break;
    e = e->src[1];
  }
  g->nthreads = 1;
  for (size_t k = 0; k < g->nlocal; k++) {
    g->nthreads *= g->trips[k];
    if (g->nthreads > MAX_THREADS)
      return eval_fail(ev, u, "a workgroup of more than %d threads (its `local` RANGEs' bounds multiply past it)",
                       MAX_THREADS);
  }
  return true;
}

bool eval_workgroup(Eval *ev, const UOp *u, const StepStack *ss) {
  Workgroup g = {.nlocal = 0};
  if (!group_shape(ev, u, &g)) return false;
  if (g.nthreads == 0) return true;
  frames_name(ss->at, ss->top, " of workgroup (r", g.name, sizeof g.name);
  const UOp *inner = g.ends[g.nlocal - 1];
  if (!(g.threads = calloc((size_t)g.nthreads, sizeof *g.threads))) return eval_fail_nomem(ev);
  bool ok = true, done = false;
  for (int32_t t = 0; ok && t < g.nthreads; t++) ok = eval_push_step(ev, &g.threads[t].st, (Step){inner, 1, 0, 0, true});
  for (size_t k = 0; k < g.nlocal; k++) ev->open[ix(ev, g.ends[k]->src[0])] = 1;
  ev->depth += g.nlocal;
  ev->group = &g, ev->life = ++ev->lives;
  while (ok && !done) {
    ev->phase++;
    for (int32_t t = 0; ok && t < g.nthreads; t++) {
      g.threads[t].stopped = NULL;
      switch_in(ev, &g, t);
      ok = eval_run_steps(ev, &g.threads[t].st, 0) != RUN_ERROR;
      switch_out(ev, &g, t);
    }
    ok = ok && phase_check(ev, &g, &done);
  }
  for (size_t k = 0; k < g.nlocal; k++) ev->open[ix(ev, g.ends[k]->src[0])] = 0;
  ev->depth -= g.nlocal;
  ev->group = NULL, ev->life = 1, ev->epoch++;
  for (int32_t t = 0; t < g.nthreads; t++) free(g.threads[t].st.at);
  free(g.threads);
  return ok;
}
