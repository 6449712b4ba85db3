/* graph.c — graph helpers the optimizer's passes share (graph.h). */
#include <stdlib.h>
#include <string.h>

#include "opt/graph.h"
#include "rewrite/rewrite.h"
#include "symbolic/symbolic.h"
#include "uop/nodemap.h"

enum { GRAPH_MAX_VECTOR = 64 };

/* Sources are made before their users, so only nodes made after `node`
 * lead to it: the walk skips the others. */
bool opt_contains(Ctx *ctx, const UOp *x, const UOp *node) {
  if (node->id > x->id) return false;
  NodeMap seen = nodemap_make(ctx);
  const UOp **stack = NULL;
  size_t top = 0, cap = 0;
  bool found = false, ok = nodemap_add(&seen, x) != NODEMAP_NONE;
  for (const UOp *u = x; ok && u && !found; u = top ? stack[--top] : NULL) {
    found = u == node;
    ctx->work++;
    for (uint32_t i = 0; i < u->nsrc && ok && !found; i++) {
      const UOp *s = u->src[i];
      if (s->id < node->id) continue;
      size_t before = seen.count;
      ok = nodemap_add(&seen, s) != NODEMAP_NONE;
      if (!ok || seen.count == before) continue;
      if (top == cap) {
        const UOp **grown = realloc(stack, (cap = 2 * cap + 16) * sizeof *grown);
        if (!(ok = grown != NULL)) break;
        stack = grown;
      }
      stack[top++] = s;
    }
  }
  nodemap_free(&seen), free(stack);
  return found;
}

bool opt_depends(Ctx *ctx, const UOp *x, const UOp *r) {
  Topo t;
  bool ok = topo_make(ctx, x, &t);
  unsigned char *reads = ok ? calloc(t.n, 1) : NULL; /* by place in t */
  for (size_t i = 0; reads && i < t.n; i++) {
    const UOp *u = t.nodes[i];
    bool binds = false, any = u == r;
    for (uint32_t k = 1; u->op == UJ_OP_REDUCE && k < u->nsrc; k++) binds |= u->src[k] == r;
    for (uint32_t k = 0; k < u->nsrc && !any && !binds; k++) any = reads[topo_at(&t, u->src[k])];
    reads[i] = any && !binds;
  }
  bool found = reads && reads[t.n - 1]; /* x, the last */
  topo_free(&t), free(reads);
  return found;
}

/* The REDUCEs x reads outside other REDUCEs (with_nested: and inside
 * them), each once, in *out (malloc'd); their count, 0 when out of memory. */
size_t opt_reduces_read(Ctx *ctx, const UOp *x, bool with_nested, const UOp ***out) {
  Topo t;
  size_t m = 0;
  unsigned char *own = topo_make(ctx, x, &t) ? calloc(t.n, 1) : NULL; /* by place in t */
  *out = own ? malloc(t.n * sizeof **out) : NULL;
  if (own) own[t.n - 1] = 1; /* x */
  for (size_t i = t.n; *out && i-- > 0;) { /* users first */
    const UOp *u = t.nodes[i];
    if (!own[i]) continue;
    if (u->op == UJ_OP_REDUCE && u->nsrc > 1) (*out)[m++] = u;
    for (uint32_t k = 0; (with_nested || u->op != UJ_OP_REDUCE) && k < u->nsrc; k++) own[topo_at(&t, u->src[k])] = 1;
  }
  free(own), topo_free(&t);
  return m;
}

/* ---- vectors ---- */

/* VECTORIZE(op(a0, b0), .., op(an, bn)) -> op(VECTORIZE(a..), VECTORIZE(b..));
 * not when every lane is one node: computed once, then broadcast. */
static const UOp *rw_vector_op(Rewriter *rw, const UOp *root, const Binds *m) {
  (void)m;
  const UOp *first = root->src[0];
  Op op = (Op)first->op;
  if (!op_has(op, OPF_ALU) || first->dtype.lanes != 1 || root->nsrc > GRAPH_MAX_VECTOR) return NULL;
  bool same = true;
  for (uint32_t i = 1; i < root->nsrc && same; i++) same = root->src[i] == first;
  if (same) return NULL;
  for (uint32_t i = 1; i < root->nsrc; i++)
    if (root->src[i]->op != op || !dt_eq(root->src[i]->dtype, first->dtype) ||
        root->src[i]->nsrc != first->nsrc)
      return NULL;
  const UOp *lanes[GRAPH_MAX_VECTOR], *vec[3];
  for (uint32_t k = 0; k < first->nsrc; k++) {
    for (uint32_t i = 0; i < root->nsrc; i++) lanes[i] = root->src[i]->src[k];
    DType d = uj_dtype_vec((uj_scalar)first->src[k]->dtype.scalar, root->nsrc);
    if (dt_is_ptr(first->src[k]->dtype)) return NULL;
    vec[k] = uop_new(rw->ctx, UJ_OP_VECTORIZE, d, lanes, root->nsrc, arg_none());
  }
  return uop_new(rw->ctx, op, root->dtype, vec, first->nsrc,
                 (Arg){first->name, first->ints, first->nints});
}

static const Rule vector_rules[] = {
    {"(VECTORIZE ...)", rw_vector_op}, // VECTORIZE(op(a_i, b_i)) -> op(VECTORIZE(a), VECTORIZE(b))
};

const UOp *opt_vectorize(Ctx *ctx, const UOp *const *x, unsigned n) {
  if (n == 0 || n > GRAPH_MAX_VECTOR) return ctx_set_error(ctx, "opt_vectorize: %u lanes", n), NULL;
  const UOp *v = uop_new(ctx, UJ_OP_VECTORIZE, uj_dtype_vec((uj_scalar)x[0]->dtype.scalar, n), x, n,
                         arg_none());
  RuleSet *rs =
      v ? ruleset_new(ctx, vector_rules, sizeof vector_rules / sizeof *vector_rules) : NULL;
  const UOp *out = rs ? graph_rewrite(ctx, v, rs, NULL) : NULL;
  ruleset_free(rs);
  return out;
}

/* ---- substitution, axes ---- */

typedef struct Swap {
  const UOp *const *from, *const *to;
  size_t n;
  NodeMap at;   /* when n is more than a few: from's nodes numbered */
  size_t *first; /* by number: the first place of the node in from */
} Swap;

static const UOp *swap_nodes(void *user, const UOp *u, const UOp *rebuilt) {
  const Swap *w = user;
  if (w->first) {
    uint32_t k = nodemap_find(&w->at, u);
    return k == NODEMAP_NONE ? rebuilt : w->to[w->first[k]];
  }
  for (size_t i = 0; i < w->n; i++)
    if (u == w->from[i]) return w->to[i];
  return rebuilt;
}

/* A node listed twice in from takes its first replacement. */
const UOp *opt_substitute(Ctx *ctx, const UOp *x, const UOp *const *from, const UOp *const *to, size_t n) {
  Swap w = {from, to, n, nodemap_make(ctx), NULL};
  bool ok = true;
  if (n > 8) {
    w.first = malloc(n * sizeof *w.first);
    for (size_t k = 0; (ok = w.first != NULL) && k < n; k++) {
      size_t before = w.at.count;
      uint32_t at = nodemap_add(&w.at, from[k]);
      ok = at != NODEMAP_NONE;
      if (!ok) break;
      if (w.at.count > before) w.first[at] = k;
    }
  }
  const UOp *out = ok ? graph_substitute(ctx, x, swap_nodes, &w) : NULL;
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "out of memory substituting in a graph");
  nodemap_free(&w.at), free(w.first);
  return out;
}

int64_t opt_next_axis(Ctx *ctx, const UOp *kernel) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  int64_t next = 0;
  for (size_t i = 0; i < n; i++)
    if (nodes[i]->op == UJ_OP_RANGE && nodes[i]->nints > 0 && nodes[i]->ints[0] >= next) next = nodes[i]->ints[0] + 1;
  free(nodes);
  return next;
}

int64_t opt_next_alloc_id(Ctx *ctx, const UOp *kernel) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  int64_t next = 0;
  for (size_t i = 0; i < n; i++)
    if (nodes[i]->op == UJ_OP_ALLOC && nodes[i]->ints[0] >= next) next = nodes[i]->ints[0] + 1;
  free(nodes);
  return next;
}

int64_t opt_const_bound(const UOp *r) {
  const UOp *b = r->op == UJ_OP_RANGE ? r->src[0] : NULL;
  return b && b->op == UJ_OP_CONST && b->bounded ? b->vmin : 0;
}

size_t opt_shared_reduce_ranges(Ctx *ctx, const UOp *x, const UOp **k, size_t max) {
  const UOp **nodes = NULL;
  size_t m = uop_toposort(ctx, x, &nodes), n = 0;
  bool ok = m > 0;
  for (size_t i = 0; ok && i < m; i++) {
    const UOp *u = nodes[i];
    if (u->op != UJ_OP_REDUCE) continue;
    if (n) {
      ok = u->nsrc - 1 == n;
      for (uint32_t r = 1; ok && r < u->nsrc; r++) ok = k[r - 1] == u->src[r];
    } else {
      ok = u->nsrc - 1 <= max;
      for (uint32_t r = 1; ok && r < u->nsrc; r++) k[r - 1] = u->src[r];
      n = ok ? u->nsrc - 1 : 0;
    }
  }
  free(nodes);
  return ok ? n : 0;
}

const UOp *opt_innermost_end(const UOp *kernel) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  while (e && e->op == UJ_OP_END && e->nsrc == 2 && e->src[1]->op == UJ_OP_END) e = e->src[1];
  bool ok = e && e->op == UJ_OP_END && e->nsrc == 2 && e->src[1]->op == UJ_OP_STORE &&
            e->src[1]->src[0]->op == UJ_OP_INDEX && e->src[1]->src[0]->nsrc == 2;
  return ok ? e : NULL;
}

/* ---- reductions ---- */

Op opt_reduce_op(const UOp *reduce) {
  Op op = UJ_OP_ADD;
  op_from_name(reduce->name, strlen(reduce->name), &op);
  return op;
}

const UOp *opt_reduce_step(Ctx *ctx, Op op, const UOp *acc, const UOp *v) {
  if (op == UJ_OP_MULACC && v->op == UJ_OP_MUL)
    return uop_ternary(ctx, UJ_OP_MULACC, v->src[0], v->src[1], acc);
  return uop_binary(ctx, op == UJ_OP_MULACC ? UJ_OP_ADD : op, acc, v);
}

int opt_loop_free_parts(Ctx *ctx, const UOp *value, const UOp *j, const UOp **out, int max) {
  Topo t;
  bool ok = topo_make(ctx, value, &t);
  size_t n = t.n;
  unsigned char *dep = ok ? calloc(n, 1) : NULL, *holds = ok ? calloc(n, 1) : NULL; /* by place in t */
  unsigned char *part = ok ? calloc(n, 1) : NULL;
  int m = dep && holds && part ? 0 : -2;
  for (size_t i = 0; m >= 0 && i < n; i++) {
    const UOp *u = t.nodes[i];
    bool d = u == j, h = u->op == UJ_OP_REDUCE;
    for (uint32_t k = 0; k < u->nsrc; k++) {
      uint32_t at = topo_at(&t, u->src[k]);
      d |= dep[at], h |= holds[at];
    }
    dep[i] = d, holds[i] = h;
    if (d && u->op == UJ_OP_REDUCE) m = -1;
    for (uint32_t k = 0; d && k < u->nsrc; k++) {
      uint32_t at = topo_at(&t, u->src[k]);
      if (!dep[at] && holds[at]) part[at] = !dt_is_ptr(u->src[k]->dtype); /* a pointer's LOAD depends on j too */
    }
  }
  if (m >= 0 && !dep[n - 1] && holds[n - 1]) part[n - 1] = 1; /* value, the last */
  for (size_t i = 0; m >= 0 && i < n; i++)
    if (part[i]) m = m < max ? (out[m] = t.nodes[i], m + 1) : -1;
  topo_free(&t), free(dep), free(holds), free(part);
  if (m == -2) ctx_set_error(ctx, "opt: out of memory");
  return m;
}

int64_t opt_stride_along(Ctx *ctx, const UOp *x, const UOp *r) {
  const UOp *next = uop_binary(ctx, UJ_OP_ADD, r, uop_const_int(ctx, r->dtype, 1));
  const UOp *moved = next ? opt_substitute(ctx, x, &r, &next, 1) : NULL;
  const UOp *diff = moved ? symbolic_simplify(ctx, uop_binary(ctx, UJ_OP_SUB, moved, x)) : NULL;
  return diff && diff->op == UJ_OP_CONST ? (int64_t)uop_const_value(diff) : 0;
}

int64_t opt_nest_iterations(const UOp *kernel) {
  const UOp *e = kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  int64_t n = 1;
  for (; e && e->op == UJ_OP_END && e->nsrc == 2; e = e->src[1]) {
    const UOp *b = e->src[0]->src[0];
    int64_t hi = b->bounded && b->vmax > 0 ? b->vmax : 1;
    if (!b->bounded || __builtin_mul_overflow(n, hi, &n)) return INT64_MAX;
  }
  return n;
}
