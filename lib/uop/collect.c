/* collect.c — freeing the nodes nothing needs any more (uop.h).
 *
 * In: a context and its roots: the nodes its owner holds (a session's
 * tensors, realized nodes, cached schedules and programs), with those of
 * the context's parts (CtxPartSlot.roots). Out: every node the roots do
 * not reach is freed (its memory, and its shape's, goes back to the
 * context's free lists), the survivors are numbered 0 .. n - 1 in their
 * old order and the intern table is made again for them. Pointers to
 * survivors stay valid; tables keyed by id are their owners' to rebuild.
 *
 * A long session (a training loop) builds new nodes at every step; a
 * collection when the context holds twice what survived the last one
 * keeps its memory flat at O(live) amortised cost (docs/schedule.md,
 * "Cost"). */
#include <stdlib.h>
#include <string.h>

#include "uop/uop.h"

void rootset_add(RootSet *r, const UOp *u) {
  if (!u || r->failed) return;
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 256;
    const UOp **nodes = realloc(r->nodes, cap * sizeof *nodes);
    if (!nodes) {
      r->failed = true;
      return;
    }
    r->nodes = nodes, r->cap = cap;
  }
  r->nodes[r->n++] = u;
}

void rootset_free(RootSet *r) {
  free(r->nodes);
  *r = (RootSet){0};
}

/* Whether u owns its shape array: BUFFER, movement ops and REDUCE make
 * one (props.c, movement.c); the others share a source's. */
static bool owns_shape(const UOp *u) {
  return u->shape && u->ndim && (u->op == UJ_OP_BUFFER || u->op == UJ_OP_REDUCE || op_has((Op)u->op, OPF_MOVEMENT));
}

/* Marks (by id) every node the roots reach: a depth-first walk with an
 * explicit stack, any depth. */
static bool mark(Ctx *ctx, const RootSet *keep, unsigned char *live) {
  size_t top = 0, cap = keep->n + 64;
  const UOp **stack = malloc(cap * sizeof *stack);
  if (!stack) return false;
  for (size_t i = 0; i < keep->n; i++)
    if (!live[keep->nodes[i]->id]) live[keep->nodes[i]->id] = 1, stack[top++] = keep->nodes[i];
  while (top) {
    const UOp *u = stack[--top];
    if (top + u->nsrc > cap) {
      cap = 2 * (top + u->nsrc);
      const UOp **s = realloc(stack, cap * sizeof *s);
      if (!s) return free(stack), false;
      stack = s;
    }
    for (uint32_t k = 0; k < u->nsrc; k++)
      if (!live[u->src[k]->id]) live[u->src[k]->id] = 1, stack[top++] = u->src[k];
  }
  free(stack);
  ctx->work += ctx->nnodes;
  return true;
}

bool uop_collect(Ctx *ctx, RootSet *keep) {
  for (int i = 0; i < CTX_PART_COUNT; i++)
    if (ctx->parts[i].roots) ctx->parts[i].roots(ctx->parts[i].state, keep);
  unsigned char *live = keep->failed ? NULL : calloc(ctx->nnodes ? ctx->nnodes : 1, 1);
  size_t n = 0, cap = 4096;
  InternSlot *table = NULL;
  if (live && mark(ctx, keep, live)) {
    for (size_t i = 0; i < ctx->nnodes; i++) n += live[i];
    while (cap <= 4 * (n + 1)) cap *= 2;
    table = calloc(cap, sizeof *table); /* before anything is freed: nothing fails after */
  }
  if (!table) {
    free(live);
    ctx_set_error(ctx, "out of memory collecting nodes");
    return false;
  }
  n = 0;
  for (size_t i = 0; i < ctx->nnodes; i++) {
    UOp *u = (UOp *)ctx->nodes[i];
    if (live[i]) {
      u->id = (uint32_t)n; /* ascending: sources stay before their users */
      ctx->nodes[n++] = u;
    } else {
      if (owns_shape(u)) ctx_release(ctx, (void *)u->shape, u->ndim * sizeof *u->shape);
      ctx_release(ctx, u, uop_node_bytes(u));
    }
  }
  free(live);
  ctx->nnodes = n;
  ctx_set_table(ctx, table, cap);
  if (ctx->cap_nodes > 2 * cap) { /* a smaller array where realloc gives one */
    const UOp **nodes = realloc(ctx->nodes, cap * sizeof *nodes);
    if (nodes) ctx->nodes = nodes, ctx->cap_nodes = cap;
  }
  return true;
}
