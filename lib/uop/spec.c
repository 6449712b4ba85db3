/* spec.c — the spec checker: every node against its line of the op table.
 *
 * In: a node or a graph root. Out: true, or false with a message naming the
 * op and what is wrong, followed by the offending node in the text form. */
#include <stdio.h>
#include <stdlib.h>

#include "uop/movement.h"
#include "uop/spec.h"
#include "uop/text.h"

static bool dtype_valid(DType d) {
  return d.scalar < UJ_SCALAR_COUNT && d.space < UJ_AS_COUNT && d.lanes >= 1 &&
         (d.scalar != UJ_VOID || d.lanes == 1);
}

static const char *arg_layout_error(ArgKind kind, Arg arg) {
  switch (kind) {
  case ARG_NONE: return arg.name || arg.nints ? "takes no arg" : NULL;
  case ARG_CONST: return arg.name || arg.nints != 1 ? "takes one value" : NULL;
  case ARG_SLOT: return arg.name || arg.nints != 1 ? "takes one slot number" : NULL;
  case ARG_VAR: return !arg.name || arg.nints != 2 ? "takes a name, a min and a max" : NULL;
  case ARG_BUFFER: return !arg.name || arg.nints != 2 ? "takes an id, a size and a device" : NULL;
  case ARG_CALL: return !arg.name ? "takes a callee name" : NULL;
  case ARG_RANGE: return !arg.name || arg.nints != 1 ? "takes an axis kind and an axis number" : NULL;
  case ARG_LANE: return arg.name || arg.nints != 1 ? "takes one lane number" : NULL;
  case ARG_INTS: return arg.name ? "takes only ints" : NULL;
  case ARG_REDUCE: return !arg.name ? "takes an op name and axes" : NULL;
  }
  return "has an unknown arg kind";
}

bool spec_check_shape(Ctx *ctx, Op op, DType dtype, size_t nsrc, Arg arg) {
  const OpInfo *info = op_info(op);
  if (!dtype_valid(dtype)) {
    ctx_set_error(ctx, "%s: invalid dtype", info->name);
    return false;
  }
  if ((int64_t)nsrc < info->min_src || (info->max_src >= 0 && (int64_t)nsrc > info->max_src)) {
    if (info->min_src == info->max_src)
      ctx_set_error(ctx, "%s takes %d source%s, not %zu", info->name, info->min_src,
                    info->min_src == 1 ? "" : "s", nsrc);
    else if (info->max_src < 0)
      ctx_set_error(ctx, "%s takes at least %d sources, not %zu", info->name, info->min_src, nsrc);
    else
      ctx_set_error(ctx, "%s takes %d to %d sources, not %zu", info->name, info->min_src,
                    info->max_src, nsrc);
    return false;
  }
  const char *err = arg_layout_error(info->arg, arg);
  if (err) ctx_set_error(ctx, "%s %s", info->name, err);
  return err == NULL;
}

/* A shape past SHAPE_MAX_SPAN (movement.h): its index arithmetic could
 * overflow. */
static const char *span_error(const UOp *u, char *buf, size_t size) {
  char a[160];
  int64_t span = shape_span(u->shape, u->ndim);
  if (span >= 0 && span <= SHAPE_MAX_SPAN) return NULL;
  snprintf(buf, size, "%s of shape %s: too large (its sizes, a 0 counted as 1, multiply past 2^52)", op_table[u->op].name,
           shape_str(u->shape, u->ndim, a, sizeof a));
  return buf;
}

const char *spec_node_error(const UOp *u, char *buf, size_t size) {
  DType want = u->dtype;
  const char *err = op_table[u->op].type_rule(u, &want, buf, size);
  if (!err && u->ndim) err = span_error(u, buf, size);
  if (err) return err;
  if (!dt_eq(want, u->dtype)) {
    char a[32], b[32];
    snprintf(buf, size, "%s must have dtype %s, not %s", op_table[u->op].name,
             dtype_str(want, a, sizeof a), dtype_str(u->dtype, b, sizeof b));
    return buf;
  }
  return NULL;
}

bool spec_check_node(Ctx *ctx, const UOp *u) {
  char buf[256];
  const char *err = spec_node_error(u, buf, sizeof buf);
  if (!err) return true;
  text_node_error(ctx, u, op_table[u->op].name, "%s", err);
  return false;
}

bool spec_check_graph(Ctx *ctx, const UOp *root) {
  const UOp **nodes;
  size_t n = uop_toposort(ctx, root, &nodes);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i];
    Arg arg = {u->name, u->ints, u->nints};
    ok = spec_check_shape(ctx, (Op)u->op, u->dtype, u->nsrc, arg) && spec_check_node(ctx, u);
  }
  free(nodes);
  return ok;
}

uj_status uj_check(uj_ctx *ctx, const uj_uop *root) {
  if (!root) {
    ctx_set_error(ctx, "uj_check: no graph");
    return UJ_ERR_ARG;
  }
  return spec_check_graph(ctx, root) ? UJ_OK : UJ_ERR_SPEC;
}
