/* rewrite.c — graph_rewrite: applies a rule set bottom-up to a fixpoint.
 *
 * In: a root and a RuleSet. Out: the rewritten root, such that no rule
 * fires on any node of the result. Each node is visited once (memo by its
 * number in the walk: tables as long as the walk, not the context);
 * a replacement a rule returns is itself rewritten (its new nodes bottom-up)
 * before it stands for the node it replaced. An explicit stack replaces
 * recursion, so graph depth is bounded by memory, not by the C stack.
 * graph_rewrite_fixpoint walks again where the sharing the rules saw
 * changed, until it does not. */
#include <stdlib.h>
#include <string.h>

#include "rewrite/rewrite.h"
#include "uop/nodemap.h"

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

/* What the walk knows of a node, by its number in the walk (nodemap.h):
 * the tables are as long as the walk, not as the context. */
typedef struct Entry {
  const UOp *memo; /* the result, NULL while unknown */
  bool busy;       /* on the stack: a cycle guard */
  bool shared;     /* more than one user (rewrite_is_shared) */
} Entry;

typedef struct Walk {
  Rewriter rw;
  NodeMap num;     /* the nodes met, numbered */
  Entry *entries;  /* by number */
  size_t cap;      /* entries allocated */
  Frame *stack;
  size_t top, cap_stack;
  size_t budget;   /* rule applications left before giving up */
  const Topo *clean_of; /* graph_rewrite_fixpoint: nodes of this graph whose */
  const unsigned char *clean; /* byte (by place) is set stand for themselves */
} Walk;

/* u's entry, made (empty) when u has none; NULL when out of memory. A
 * pointer stays valid until the next node is added. */
static Entry *entry_add(Walk *w, const UOp *u) {
  uint32_t k = nodemap_add(&w->num, u);
  if (k == NODEMAP_NONE) return NULL;
  if (k >= w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 256;
    while (cap <= k) cap *= 2;
    Entry *e = realloc(w->entries, cap * sizeof *e);
    if (!e) return NULL;
    memset(e + w->cap, 0, (cap - w->cap) * sizeof *e);
    w->entries = e, w->cap = cap;
  }
  return &w->entries[k];
}

static Entry *entry_find(const Walk *w, const UOp *u) {
  uint32_t k = nodemap_find(&w->num, u);
  return k == NODEMAP_NONE ? NULL : &w->entries[k];
}

static const UOp *memo_of(const Walk *w, const UOp *u) {
  const Entry *e = entry_find(w, u);
  return e ? e->memo : NULL;
}

bool rewrite_is_shared(const Rewriter *rw, const UOp *u) {
  const Entry *e = rw->walk ? entry_find(rw->walk, u) : NULL;
  return e && e->shared;
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
  Entry *e = entry_add(w, u);
  if (!e) return false;
  if (e->memo) return true;
  uint32_t at = w->clean ? topo_at(w->clean_of, u) : NODEMAP_NONE;
  if (at != NODEMAP_NONE && w->clean[at]) return e->memo = u, true; /* no rule can fire on it again */
  if (e->busy) {
    ctx_set_error(w->rw.ctx, "rewrite rules cycle: a %s node rewrites to itself",
                  op_table[u->op].name);
    return false;
  }
  e->busy = true;
  w->rw.ctx->work++;
  if (!push(w, u, STEP_REBUILD, NULL)) return false;
  for (uint32_t i = u->nsrc; i-- > 0;)
    if (!memo_of(w, u->src[i]) && !push(w, u->src[i], STEP_ENTER, NULL)) return false;
  return true;
}

static bool finish(Walk *w, const UOp *u, const UOp *result) {
  Entry *r = entry_add(w, result), *e = r ? entry_find(w, u) : NULL; /* u has one: adding it made none */
  if (!e) return false;
  e->memo = result;
  e->busy = false;
  r->shared |= e->shared;
  return true;
}

/* Marks the nodes of the input graph that have more than one user (a
 * user naming the same source twice counts once); numbers them. */
static bool mark_shared(Walk *w, const UOp *root) {
  const UOp **nodes;
  size_t n = uop_toposort(w->rw.ctx, root, &nodes);
  unsigned char *used = n ? calloc(n, 1) : NULL;
  bool ok = used && nodemap_reserve(&w->num, n);
  for (size_t k = 0; ok && k < n; k++) ok = entry_add(w, nodes[k]) != NULL; /* number k */
  for (size_t k = 0; ok && k < n; k++) {
    const UOp *u = nodes[k];
    for (uint32_t i = 0; i < u->nsrc; i++) {
      const UOp *s = u->src[i];
      bool again = false;
      for (uint32_t j = 0; j < i && !again; j++) again = u->src[j] == s;
      if (again) continue;
      uint32_t at = nodemap_find(&w->num, s);
      if (used[at]) w->entries[at].shared = true;
      used[at] = 1;
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
  for (uint32_t i = 0; i < u->nsrc; i++) src[i] = memo_of(w, u->src[i]);
  const UOp *v = uop_replace_src(w->rw.ctx, u, src, u->nsrc);
  if (src != small) free(src);
  if (!v) return false;
  bool shared = entry_find(w, u)->shared;
  const UOp *r = ruleset_apply(&w->rw, v);
  Entry *ev = r ? entry_add(w, v) : NULL;
  if (!ev) return false;
  ev->shared |= shared;
  if (r == v) {
    if (!finish(w, u, v)) return false;
    ev = entry_find(w, v);
    if (v != u && !ev->memo) ev->memo = v;
    return true;
  }
  Entry *er = entry_add(w, r);
  if (!er) return false;
  er->shared |= shared;
  if (w->budget-- == 0) {
    ctx_set_error(w->rw.ctx, "rewrite rules do not converge");
    return false;
  }
  if (er->memo) return finish(w, u, er->memo);
  return push(w, u, STEP_LINK, r) && enter(w, r);
}

static bool step(Walk *w, Frame f) {
  switch (f.step) {
  case STEP_ENTER: return enter(w, f.node);
  case STEP_REBUILD: return rebuild(w, f.node);
  case STEP_LINK: return finish(w, f.node, memo_of(w, f.replacement));
  }
  return false;
}

/* One walk from root; the walk's tables are kept for the caller (w_free). */
static const UOp *walk_run(Walk *w, Ctx *ctx, const UOp *root, const RuleSet *rs, void *user) {
  *w = (Walk){.rw = {.ctx = ctx, .rules = rs, .user = user}, .num = nodemap_make(ctx), .clean_of = w->clean_of,
              .clean = w->clean};
  w->rw.walk = w;
  bool ok = mark_shared(w, root);
  w->budget = 64 * (w->num.count + 1024);
  ok = ok && enter(w, root);
  while (ok && w->top) ok = step(w, w->stack[--w->top]);
  const UOp *out = ok ? memo_of(w, root) : NULL;
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "out of memory rewriting a graph");
  return out;
}

static void walk_free(Walk *w) {
  nodemap_free(&w->num);
  free(w->entries);
  free(w->stack);
}

const UOp *graph_rewrite(Ctx *ctx, const UOp *root, const RuleSet *rs, void *user) {
  Walk w = {0};
  const UOp *out = walk_run(&w, ctx, root, rs, user);
  walk_free(&w);
  return out;
}

/* Where the result of walk w may not be a fixpoint: by place in t (the
 * result's nodes), the nodes whose sharing differs from what the rules saw
 * (a rule that weighs sizes may decide otherwise now) and every node above
 * them; false (nothing marked) when there are none. */
static bool unsettled(const Walk *w, const Topo *t, unsigned char *dirty) {
  uint32_t *users = calloc(t->n ? t->n : 1, sizeof *users);
  if (!users) return false;
  for (size_t k = 0; k < t->n; k++)
    for (uint32_t i = 0; i < t->nodes[k]->nsrc; i++) {
      bool again = false; /* a user naming a source twice counts once, as mark_shared */
      for (uint32_t j = 0; j < i && !again; j++) again = t->nodes[k]->src[j] == t->nodes[k]->src[i];
      if (!again) users[topo_at(t, t->nodes[k]->src[i])]++;
    }
  bool any = false;
  for (size_t k = 0; k < t->n; k++) {
    const Entry *e = entry_find(w, t->nodes[k]);
    dirty[k] = (e && e->shared) != (users[k] > 1);
    for (uint32_t i = 0; i < t->nodes[k]->nsrc && !dirty[k]; i++) dirty[k] = dirty[topo_at(t, t->nodes[k]->src[i])];
    any |= dirty[k];
  }
  free(users);
  return any;
}

const UOp *graph_rewrite_fixpoint(Ctx *ctx, const UOp *root, const RuleSet *rs, void *user) {
  enum { MAX_PASSES = 16 };
  Topo t = {0};
  unsigned char *clean = NULL;
  const UOp *out = root;
  for (int pass = 0; out && pass < MAX_PASSES; pass++) {
    Walk w = {.clean_of = clean ? &t : NULL, .clean = clean};
    out = walk_run(&w, ctx, out, rs, user);
    Topo next = {0};
    unsigned char *dirty = out && topo_make(ctx, out, &next) ? malloc(next.n ? next.n : 1) : NULL;
    bool again = dirty && unsettled(&w, &next, dirty);
    walk_free(&w);
    topo_free(&t), free(clean);
    t = next, clean = dirty;
    for (size_t k = 0; again && k < t.n; k++) clean[k] = !clean[k];
    if (!again) break;
  }
  topo_free(&t), free(clean);
  return out;
}

const UOp *graph_substitute(Ctx *ctx, const UOp *root, ReplaceFn replace, void *user) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, root, &nodes);
  NodeMap num = nodemap_make(ctx);
  const UOp **result = n && nodemap_number(&num, nodes, n) ? calloc(n, sizeof *result) : NULL; /* by number */
  const UOp *out = NULL;
  for (size_t k = 0; result && k < n; k++) {
    const UOp *u = nodes[k], *small[8], **src = u->nsrc <= 8 ? small : malloc(u->nsrc * sizeof *src);
    if (!src) break;
    for (uint32_t i = 0; i < u->nsrc; i++) src[i] = result[nodemap_find(&num, u->src[i])];
    const UOp *v = uop_replace_src(ctx, u, src, u->nsrc);
    if (src != small) free(src);
    const UOp *r = v ? replace(user, u, v) : NULL;
    if (!r) break;
    result[k] = r;
    if (k + 1 == n) out = r;
  }
  if (!out && !ctx->error[0]) ctx_set_error(ctx, "out of memory substituting in a graph");
  nodemap_free(&num);
  free(nodes);
  free(result);
  return out;
}
