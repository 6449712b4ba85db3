/* launch.c — a launch's grid (device.h): the blocks and threads per block
 * a GPU runs a kernel on, from the kernel's grid (signature.h: which
 * RANGE is on x, y, z) and the values of its variables.
 *
 * In: a target description, a kernel's signature, its variables' values.
 * Out: grid[3] and block[3], checked against the target's limits; or an
 * error naming the dimension, its size and the limit. */
#include <stdio.h>

#include "runtime/device.h"
#include "uop/eval.h"

enum { LAUNCH_BLOCK = 256 }; /* threads a block of a kernel without workgroups, along x */

/* A RANGE's bound for these variables, at least 1. */
static bool bound_of(Ctx *ctx, const KernelSig *sig, const int64_t *vars, const UOp *range, int64_t *out) {
  const UOp *b = range->src[0];
  uint64_t word = 0;
  if (b->op == UJ_OP_CONST) word = uop_const_value(b);
  else {
    enum { MAX_VARS = 64 };
    const char *names[MAX_VARS];
    if (sig->nvars > MAX_VARS) return ctx_set_error(ctx, "launch: more than %d variables", MAX_VARS), false;
    for (size_t i = 0; i < sig->nvars; i++) names[i] = sig->vars[i].name;
    if (!eval_expr(ctx, b, names, vars, sig->nvars, &word)) return false;
  }
  int64_t v = (int64_t)word; /* an int word: sign-extended */
  *out = v < 1 ? 1 : v;
  return true;
}

static bool over(Ctx *ctx, const TargetDesc *t, const char *what, unsigned d, int64_t n, uint64_t limit) {
  ctx_set_error(ctx, "launch: %s %c is %lld, past %s's limit %llu", what, "xyz"[d], (long long)n, t->name,
                (unsigned long long)limit);
  return false;
}

bool launch_dims(Ctx *ctx, const TargetDesc *t, const KernelSig *sig, const int64_t *vars, uint32_t grid[3],
                 uint32_t block[3]) {
  const KernelGrid *g = &sig->grid;
  int64_t threads = 1;
  for (unsigned d = 0; d < 3; d++) {
    int64_t n = 1, size = 1;
    if (d < g->nglobal && !bound_of(ctx, sig, vars, g->global[d], &n)) return false;
    if (g->workgroups) {
      if (d < g->nlocal && !bound_of(ctx, sig, vars, g->local[d], &size)) return false;
    } else if (d == 0) {
      size = LAUNCH_BLOCK < t->max_threads ? LAUNCH_BLOCK : t->max_threads;
      while (size / 2 >= n && size > 1) size /= 2; /* a small grid: one block, as wide as it needs */
      n = (n + size - 1) / size;
    }
    if (size > t->max_block[d]) return over(ctx, t, "the block's size along", d, size, t->max_block[d]);
    if ((uint64_t)n > t->max_grid[d]) return over(ctx, t, "the grid's blocks along", d, n, t->max_grid[d]);
    threads *= size;
    grid[d] = (uint32_t)n, block[d] = (uint32_t)size;
  }
  if (threads > t->max_threads) {
    ctx_set_error(ctx, "launch: a block of %lld threads, past %s's limit %u", (long long)threads, t->name, t->max_threads);
    return false;
  }
  return true;
}

bool device_launch(Device *d, void *program, LaunchArgs *a) {
  const KernelSig *sig = d->ops->signature(d, program);
  for (unsigned k = 0; k < 3; k++) a->grid[k] = a->block[k] = 1;
  if (a->n < sig->nparams || a->nvars != sig->nvars) { /* every backend's launch may count on these */
    ctx_set_error(d->ctx, "%s: the kernel takes %zu buffers and %zu variables, not %zu and %zu", d->name, sig->nparams,
                  sig->nvars, a->n, a->nvars);
    return false;
  }
  if (d->desc->kind == TARGET_DESC_GPU && !launch_dims(d->ctx, d->desc, sig, a->vars, a->grid, a->block)) return false;
  return d->ops->launch(d, program, a);
}
