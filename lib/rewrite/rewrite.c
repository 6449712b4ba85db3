/* rewrite.c — graph_rewrite: applies a rule set bottom-up to a fixpoint.
 *
 * In: a root and a RuleSet. Out: the rewritten root, such that no rule
 * fires on any node of the result. Each node is visited once (memo by id);
 * a replacement a rule returns is itself rewritten (its new nodes bottom-up)
 * before it stands for the node it replaced. An explicit stack replaces
 * recursion, so graph depth is bounded by memory, not by the C stack. */
#include <stdlib.h>

#include "rewrite/rewrite.h"

typedef enum Step {
  STEP_ENTER,   /* first visit: queue the sources */
  STEP_REBUILD, /* sources done: rebuild, apply rules */
  STEP_LINK,    /* the replacement is done: it is the node's result */
} Step;

typedef struct Frame {
  const UOp *node;
  const UOp *replacement; /* for STEP_LINK */
  Step step;
} Frame;

typedef struct Walk {
  Rewriter rw;
  const UOp **memo;     /* result by node id, NULL while unknown */
  unsigned char *busy;  /* on the stack, by node id: a cycle guard */
  unsigned char *shared; /* by node id: more than one user (Rewriter.shared) */
  size_t cap;           /* entries of memo/busy */
  Frame *stack;
  size_t top, cap_stack;
  size_t budget;        /* rule applications left before giving up */
} Walk;

/* Memo tables follow the context's node count, which grows as rules build. */
static bool walk_fit(Walk *w) {
  size_t need = w->rw.ctx->nnodes;
  if (need <= w->cap) return true;
  size_t cap = w->cap ? w->cap : 1024;
  while (cap < need) cap *= 2;
  const UOp **memo = realloc(w->memo, cap * sizeof *memo);
  if (memo) w->memo = memo;
  unsigned char *busy = realloc(w->busy, cap);
  if (busy) w->busy = busy;
  unsigned char *shared = realloc(w->shared, cap);
  if (shared) w->shared = shared;
  if (!memo || !busy || !shared) return false;
  for (size_t i = w->cap; i < cap; i++) w->memo[i] = NULL, w->busy[i] = 0, w->shared[i] = 0;
  w->cap = cap;
  w->rw.shared = w->shared, w->rw.nshared = cap;
  return true;
}

static bool push(Walk *w, const UOp *node, Step step, const UOp *replacement) {
  if (w->top == w->cap_stack) {
    size_t cap = w->cap_stack ? w->cap_stack * 2 : 1024;
    Frame *s = realloc(w->stack, cap * sizeof *s);
    if (!s) return false;
    w->stack = s;
    w->cap_stack = cap;
  }
  w->stack[w->top++] = (Frame){node, replacement, step};
  return true;
}

static bool enter(Walk *w, const UOp *u) {
  if (w->memo[u->id]) return true;
  if (w->busy[u->id]) {
    ctx_set_error(w->rw.ctx, "rewrite rules cycle: a %s node rewrites to itself",
                  op_table[u->op].name);
    return false;
  }
  w->busy[u->id] = 1;
  if (!push(w, u, STEP_REBUILD, NULL)) return false;
  for (uint32_t i = u->nsrc; i-- > 0;)
    if (!w->memo[u->src[i]->id] && !push(w, u->src[i], STEP_ENTER, NULL)) return false;
  return true;
}

static void finish(Walk *w, const UOp *u, const UOp *result) {
  w->memo[u->id] = result;
  w->busy[u->id] = 0;
  w->shared[result->id] |= w->shared[u->id];
}

/* Marks the nodes of the input graph that have more than one user (a
 * user naming the same source twice counts once). */
static bool mark_shared(Walk *w, const UOp *root) {
  const UOp **nodes;
  size_t n = uop_toposort(w->rw.ctx, root, &nodes);
  unsigned char *used = calloc(w->cap, 1);
  bool ok = n > 0 && used;
  for (size_t k = 0; ok && k < n; k++) {
    const UOp *u = nodes[k];
    for (uint32_t i = 0; i < u->nsrc; i++) {
      const UOp *s = u->src[i];
      bool again = false;
      for (uint32_t j = 0; j < i && !again; j++) again = u->src[j] == s;
      if (again) continue;
      if (used[s->id]) w->shared[s->id] = 1;
      used[s->id] = 1;
    }
  }
  free(nodes);
  free(used);
  return ok;
}

/* Sources are rewritten: rebuild u on them and apply the rules once. */
static bool rebuild(Walk *w, const UOp *u) {
  enum { SMALL = 8 };
  const UOp *small[SMALL], **src = u->nsrc <= SMALL ? small : malloc(u->nsrc * sizeof *src);
  if (!src) return false;
  for (uint32_t i = 0; i < u->nsrc; i++) src[i] = w->memo[u->src[i]->id];
  const UOp *v = uop_replace_src(w->rw.ctx, u, src, u->nsrc);
  if (src != small) free(src);
  if (!v || !walk_fit(w)) return false;
  const UOp *r = ruleset_apply(&w->rw, v); /* may make nodes: fit the tables again */
  if (!r || !walk_fit(w)) return false;
  w->shared[v->id] |= w->shared[u->id];
  if (r == v) {
    finish(w, u, v);
    if (v != u && !w->memo[v->id]) w->memo[v->id] = v;
    return true;
  }
  w->shared[r->id] |= w->shared[u->id];
  if (w->budget-- == 0) {
    ctx_set_error(w->rw.ctx, "rewrite rules do not converge");
    return false;
  }
  if (w->memo[r->id]) {
    finish(w, u, w->memo[r->id]);
    return true;
  }
  return push(w, u, STEP_LINK, r) && enter(w, r);
}

static bool step(Walk *w, Frame f) {
  switch (f.step) {
  case STEP_ENTER: return enter(w, f.node);
  case STEP_REBUILD: return rebuild(w, f.node);
  case STEP_LINK: finish(w, f.node, w->memo[f.replacement->id]); return true;
  }
  return false;
}

const UOp *graph_rewrite(Ctx *ctx, const UOp *root, const RuleSet *rs, void *user) {
  Walk w = {.rw = {.ctx = ctx, .rules = rs, .user = user}};
  w.budget = 64 * (ctx->nnodes + 1024);
  bool ok = walk_fit(&w) && mark_shared(&w, root) && enter(&w, root);
  while (ok && w.top) ok = step(&w, w.stack[--w.top]);
  const UOp *out = ok ? w.memo[root->id] : NULL;
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "out of memory rewriting a graph");
  free(w.memo);
  free(w.busy);
  free(w.shared);
  free(w.stack);
  return out;
}

const UOp *graph_substitute(Ctx *ctx, const UOp *root, ReplaceFn replace, void *user) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, root, &nodes);
  const UOp **result = n ? calloc(ctx->nnodes, sizeof *result) : NULL; /* by id of the input's nodes */
  const UOp *out = NULL;
  for (size_t k = 0; result && k < n; k++) {
    const UOp *u = nodes[k], *small[8], **src = u->nsrc <= 8 ? small : malloc(u->nsrc * sizeof *src);
    if (!src) break;
    for (uint32_t i = 0; i < u->nsrc; i++) src[i] = result[u->src[i]->id];
    const UOp *v = uop_replace_src(ctx, u, src, u->nsrc);
    if (src != small) free(src);
    const UOp *r = v ? replace(user, u, v) : NULL;
    if (!r) break;
    result[u->id] = r;
    if (k + 1 == n) out = r;
  }
  if (!out && !ctx->error[0]) ctx_set_error(ctx, "out of memory substituting in a graph");
  free(nodes);
  free(result);
  return out;
}
